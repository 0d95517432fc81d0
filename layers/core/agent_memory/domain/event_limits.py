"""What the events route declares (API.md "Events"): the event types and a page's bounds.
Here, not with the feed's rules (domain/events.py), so the route's module reads them without
loading those rules."""

from __future__ import annotations

from typing import Literal

EventType = Literal[
    "thread.created",
    "thread.updated",
    # A thread erased with its agent or its person (service/erasure.py).
    "thread.deleted",
    "working_memory.updated",
    "memory.changed",
    "execution.ended",
]

# A page answers 1..MAX_LIMIT events; DEFAULT_LIMIT without `limit`.
DEFAULT_LIMIT = 50
MAX_LIMIT = 100
# The longest cursor a caller may send (domain/events.py's MAX_SEEN ids in base64 JSON, with
# room).
MAX_CURSOR = 6_000
# A cursor's alphabet (unpadded base64url): text outside it is malformed (400); text within it
# that this feed did not issue to the caller names no position of theirs (404).
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"
