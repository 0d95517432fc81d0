"""Bounds the thread routes declare on their bodies (a message's content and item, a save's
messages, a recall's limit). Here, not with the rules that enforce them (domain/threads.py,
domain/observation.py), so a route's module reads them without loading those rules."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

MAX_ITEM_BYTES = 32 * 1024
# A thread's own metadata (a client's JSON object about it) and title.
MAX_METADATA_BYTES = 8 * 1024
MAX_TITLE = 500
MAX_CONTENT = 100_000
# One save is one transaction with the thread row (DynamoDB: 100 actions at most).
MAX_MESSAGES_PER_SAVE = 50
# Messages one recall returns at most.
RECALL_MAX = 50


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes of an opaque item as JSON (its 32 KB bound)."""
    return len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode())
