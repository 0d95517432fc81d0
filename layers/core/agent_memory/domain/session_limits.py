"""What the session and chat routes declare about one Turn: its limits, and why its learning
was skipped. Here, not with the rules that enforce them (domain/sessions.py, domain/bots.py),
so a route's module reads them without loading those rules."""

from __future__ import annotations

from typing import Literal

# Limits of one Turn (ADR 0032): a Turn is one transaction with the
# head row, and an item is one row that must stay far below DynamoDB's 400 KB.
MAX_TURN_ITEMS = 64
MAX_ITEM_BYTES = 32 * 1024
MAX_APP_LENGTH = 64

# Why a Turn's learning was skipped (API.md `learningReason`), one name per cause.
SkipReason = Literal[
    "appOnly",
    "generateOff",
    "noModel",
    "modelNotConfigured",
    "workflowUnreachable",
    "throttled",
    "unavailable",
]
