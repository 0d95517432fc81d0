"""The pool bounds the session and agent memory routes state in their schema (domain/bounds.py
enforces them). Here, not with the rules, so a route's module reads them without loading
those rules."""

from __future__ import annotations

# A Session's history: its memory read lists every processed item id (`i-50000` at most).
MAX_SESSION_ITEMS = 50_000
# Seed 000's session and agent memory (one bound: a promotion copies a session's entries).
KEYED_POOL_ENTRIES = 500
KEYED_POOL_CONTENT = 100_000
