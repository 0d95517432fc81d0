"""The single table's key layout (docs/decisions.md, "Keys").

A pool's partition holds its head row (`META`) and entries (`MEM#<key>`), so
`sk BETWEEN "MEM#" AND "META"` reads every entry and the head in one Query.
Items, executions and log rows sit in the same partition under other prefixes.
"""

from __future__ import annotations

HEAD = "META"
ENTRY_PREFIX = "MEM#"


def org(org_id: str) -> str:
    return f"ORG#{org_id}"


def user(user_id: str) -> str:
    return f"USER#{user_id}"


def token(digest: str) -> str:
    return f"TOKEN#{digest}"


def token_prefix(prefix: str) -> str:
    return f"TOKENPREFIX#{prefix}"
