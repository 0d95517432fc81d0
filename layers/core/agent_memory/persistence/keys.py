"""The single table's key layout (docs/decisions.md, "Keys").

A pool's partition holds its head row (`META`) and entries (`MEM#<key>`), so
`sk BETWEEN "MEM#" AND "META"` reads every entry and the head in one Query.
Items, executions and log rows sit in the same partition under other prefixes.
"""

from __future__ import annotations

from agent_memory.ports import KeyRange
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS

HEAD = "META"
ENTRY_PREFIX = "MEM#"
# Every entry of a pool and its head row, in one Query ("MEM#..." sorts before "META").
POOL_RANGE = KeyRange(low=ENTRY_PREFIX, high=HEAD)
# A transaction holds at most this many actions (the store port's limit).
MAX_ACTIONS = MAX_TRANSACTION_ACTIONS


def entry_sk(key: str) -> str:
    return f"{ENTRY_PREFIX}{key}"


def thread_pk(thread_id: str) -> str:
    return f"THREAD#{thread_id}"


def resource_pk(user_id: str) -> str:
    return f"RESOURCE#{user_id}"


def org(org_id: str) -> str:
    return f"ORG#{org_id}"


def user(user_id: str) -> str:
    return f"USER#{user_id}"


def token(digest: str) -> str:
    return f"TOKEN#{digest}"


def token_prefix(prefix: str) -> str:
    return f"TOKENPREFIX#{prefix}"
