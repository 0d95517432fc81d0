"""A person's export (`GET /v1/me/export`): its first line, and what it names to read.

The export is the person's read routes run one after the other: the objects are found the
way erasing the person finds them (docs/adr/0070), and each is read as its own route reads
it, with the person's own access checks, so the export holds exactly what their reads show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# What the person's index rows name: each kind is read by its own routes.
Kind = Literal["agent", "session", "thread", "chat", "bot"]


@dataclass(frozen=True)
class Found:
    """One object of the person's organization to read as the person."""

    kind: Kind
    id: str


@dataclass(frozen=True)
class Header:
    """What an export's first line says: for whom, and when (milliseconds since the epoch)."""

    user_id: str
    org_id: str
    exported_at: int
