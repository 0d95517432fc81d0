"""The single table's key layout (ADR 0031).

A pool's partition holds its head row (`META`) and entries (`MEM#<key>`), so
`sk BETWEEN "MEM#" AND "META"` reads every entry and the head in one Query.
Items, executions and log rows sit in the same partition under other prefixes.
"""

from __future__ import annotations

from agent_memory.ports import KeyRange

HEAD = "META"
ENTRY_PREFIX = "MEM#"
# Every entry of a pool and its head row, in one Query ("MEM#..." sorts before "META").
POOL_RANGE = KeyRange(low=ENTRY_PREFIX, high=HEAD)
# The condition on a learning read position: failing, it means another run applied first.
READ_POSITION = "read-position"


def entry_sk(key: str) -> str:
    return f"{ENTRY_PREFIX}{key}"


# A pool's change log (agent memory, bot memory): one row per version, in its partition.
LOG_PREFIX = "LOG#"


def log_sk(version: int) -> str:
    return f"{LOG_PREFIX}{version:010d}"


def thread_pk(thread_id: str) -> str:
    return f"THREAD#{thread_id}"


def resource_pk(org_id: str, user_id: str) -> str:
    """A person's partition: user ids belong to their organization."""
    return f"RESOURCE#{org_id}#{user_id}"


def org(org_id: str) -> str:
    return f"ORG#{org_id}"


def user(org_id: str, user_id: str) -> str:
    return f"USER#{org_id}#{user_id}"


def user_orgs(user_id: str) -> str:
    """The organizations a user id exists in (`ORG#<orgId>` rows): for the admin token's
    routes that name a user without an organization."""
    return f"USERID#{user_id}"


def token(digest: str) -> str:
    return f"TOKEN#{digest}"


def token_prefix(prefix: str) -> str:
    return f"TOKENPREFIX#{prefix}"


# Learning runs: a pool's executions, their evidence and model calls share its `LEARN#` partition.
EXEC_PREFIX = "EXEC#"
EVIDENCE_PREFIX = "EVIDENCE#"
CALL_PREFIX = "CALL#"
# Recorded waits: one partition per event, a link per waiting run, the event once it happened.
LINK_PREFIX = "LINK#"
EVENT_SK = "EVENT"
DEFERRED_PREFIX = "RUN#"


def learn_pk(kind: str, pool_id: str) -> str:
    return f"LEARN#{kind}#{pool_id}"


def timed_sk(prefix: str, at: int, name: str) -> str:
    """A row of one moment (`at`, milliseconds) and name: these rows sort oldest first."""
    return f"{prefix}{at:013d}#{name}"


def execution_sk(requested_at: int, name: str) -> str:
    return timed_sk(EXEC_PREFIX, requested_at, name)


def evidence_sk(requested_at: int, name: str) -> str:
    return timed_sk(EVIDENCE_PREFIX, requested_at, name)


def call_sk(name: str, step: str, attempt: int) -> str:
    return f"{CALL_PREFIX}{name}#{step}#{attempt:02d}"


def wait_pk(event: str) -> str:
    return f"WAIT#{event}"


def deferred_pk(event: str) -> str:
    return f"LEARN#deferred#{event}"


# Threads: messages, the steps' read positions and the observation log in `THREAD#<id>`;
# the user's thread lists in `RESOURCE#<userId>` (per agent, and across agents); the
# agent's threads in `AGENT#<agentId>`; recall's pending rows under `LEARN#`.
MESSAGE_PREFIX = "MSG#"
THREAD_INDEX_PREFIX = "THREAD#"
THREAD_LIST_PREFIX = "TLIST#"
OBSERVER_HEAD = "OBS"
CHUNK_PREFIX = "OBS#"
RECALL_PENDING_PREFIX = "LEARN#recall-idle#"

# Bots: a Bot's, a Channel's and a Chat's partitions and the bots an organization uses
# (`BOTS#<orgId>`); a chat's turns and items in its partition; in `RESOURCE#<userId>` the
# chats a person owns and the group chats of others where they spoke.
BOT_PREFIX = "BOT#"
ORG_BOTS_PREFIX = "BOTS#"
CHANNEL_PREFIX = "CHANNEL#"
CHAT_PREFIX = "CHAT#"
TURN_PREFIX = "TURN#"
ITEM_PREFIX = "ITEM#"
OWNED_CHAT_PREFIX = "CHAT#"
SPOKEN_CHAT_PREFIX = "SPOKE#"
