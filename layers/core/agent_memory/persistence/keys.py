"""The single table's key layout (ADR 0031): every prefix of a row's pk and sk, and the fixed
sort keys whose order matters, is named here, grouped by what owns the row; each repository
module describes the rows it keeps.

A pool's partition holds its head row (`META`) and entries (`MEM#<key>`), so
`sk BETWEEN "MEM#" AND "META"` reads every entry and the head in one Query.
Items, executions and log rows sit in the same partition under other prefixes.
"""

from __future__ import annotations

from agent_memory.ports import KeyRange

# Pools: every pool keeps these rows in its own partition.
HEAD = "META"
ENTRY_PREFIX = "MEM#"
# Every entry of a pool and its head row, in one Query ("MEM#..." sorts before "META").
POOL_RANGE = KeyRange(low=ENTRY_PREFIX, high=HEAD)
# An active entry's newest-first copy: "RECENT#" sorts after "META", so one Query from the
# head reads it and the newest entries.
RECENT_PREFIX = "RECENT#"
RECENT_END = "RECENT#~"
# A pool's change log (agent memory, bot memory): one row per version, in its partition.
LOG_PREFIX = "LOG#"
# A learning read position: "LEARNPOS#" sorts before "LOG#" and "MEM#", outside every
# Query of a pool's entries.
POSITION_PREFIX = "LEARNPOS#"
# The condition on a learning read position: failing, it means another run applied first.
READ_POSITION = "read-position"


def entry_sk(key: str) -> str:
    return f"{ENTRY_PREFIX}{key}"


def log_sk(version: int) -> str:
    return f"{LOG_PREFIX}{version:010d}"


def position_sk(name: str) -> str:
    return f"{POSITION_PREFIX}{name}"


# Organizations, their people, tokens, service keys, events feed and rate counters.
ORG_PREFIX = "ORG#"
# The admin token's list of organizations: one partition.
ORGS_PK = "ORGS#"
CHANNELS_PREFIX = "CHANNELS#"
USER_PREFIX = "USER#"
TOKEN_PREFIX = "TOKEN#"
SERVICE_KEY_PREFIX = "SKEY#"
EVENTS_PREFIX = "EVENTS#"
EVENT_PREFIX = "EVT#"
RATE_PREFIX = "RATE#"
# A rate window's counter: the one row of its `RATE#` partition.
COUNTER_SK = "COUNT"


def org(org_id: str) -> str:
    return f"{ORG_PREFIX}{org_id}"


def user(org_id: str, user_id: str) -> str:
    return f"{USER_PREFIX}{org_id}#{user_id}"


def user_orgs(user_id: str) -> str:
    """The organizations a user id exists in (`ORG#<orgId>` rows): for the admin token's
    routes that name a user without an organization."""
    return f"USERID#{user_id}"


def resource_pk(org_id: str, user_id: str) -> str:
    """A person's partition: user ids belong to their organization."""
    return f"RESOURCE#{org_id}#{user_id}"


def token(digest: str) -> str:
    return f"{TOKEN_PREFIX}{digest}"


def token_prefix(prefix: str) -> str:
    return f"TOKENPREFIX#{prefix}"


# Agents, their versions and sessions: an agent's memory pool is in `AGENT#<id>`.
AGENT_PREFIX = "AGENT#"
ORG_AGENTS_PREFIX = "AGENTS#"
# Agent memory's head, beside the agent row: "MEM#..." < "MEMORY" < "META", so one Query
# reads every entry, the head and the agent row.
AGENT_MEMORY_HEAD = "MEMORY"
# An agent's draft and the head of its published versions, outside the entries' range:
# "DRAFT" < "MEM#"; "META" < "PUBLISHED" < "RECENT#" (a newest-first read passes over it).
DRAFT = "DRAFT"
PUBLISHED = "PUBLISHED"
# "VERSION#" sorts after "META" and "RECENT#": outside the agent memory's Queries.
VERSION_PREFIX = "VERSION#"
SESSION_PREFIX = "SESSION#"
AGENT_SESSIONS_PREFIX = "SESSIONS#"
# A conversation's item: a session's or a chat's history, in its partition.
ITEM_PREFIX = "ITEM#"


def item_sk(seq: int) -> str:
    return f"{ITEM_PREFIX}{seq:08d}"


# Memory objects: every list and recall partition of an organization starts with this.
MEMORY_OBJECT_PREFIX = "AMEM#"

# Learning runs: a pool's executions, their evidence and model calls share its `LEARN#` partition.
LEARN_PREFIX = "LEARN#"
EXEC_PREFIX = "EXEC#"
EVIDENCE_PREFIX = "EVIDENCE#"
CALL_PREFIX = "CALL#"
# Recorded waits: one partition per event, a link per waiting run, the event once it happened.
LINK_PREFIX = "LINK#"
EVENT_SK = "EVENT"
DEFERRED_PREFIX = "RUN#"
# An execution name taken by a Step Functions start: under `LEARN#`, which learning starters
# may write, apart from every pool's partition.
EXECUTION_NAME_PREFIX = f"{LEARN_PREFIX}NAME#"
EXECUTION_NAME_SK = "NAME"
# The local workflow's executions (tests and local runs).
WORKFLOW_PREFIX = "WORKFLOW#"
# One row per unfinished local execution, for a restarted runner to take up.
WORKFLOW_OPEN_PK = "WORKFLOW_OPEN"


def learn_pk(kind: str, pool_id: str) -> str:
    return f"{LEARN_PREFIX}{kind}#{pool_id}"


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
    return f"{LEARN_PREFIX}deferred#{event}"


# Threads: messages, the steps' read positions and the observation log in `THREAD#<id>`;
# the user's thread lists in `RESOURCE#<userId>` (per agent under `THREAD#`, and across
# agents); the agent's threads in `AGENT#<agentId>` under `THREAD#`; recall's pending rows
# under `LEARN#` (so that the schedule's function may read and delete them).
THREAD_PREFIX = "THREAD#"
MESSAGE_PREFIX = "MSG#"
THREAD_LIST_PREFIX = "TLIST#"
OBSERVER_HEAD = "OBS"
CHUNK_PREFIX = "OBS#"
RECALL_PENDING_PREFIX = f"{LEARN_PREFIX}recall-idle#"
RECALL_TAIL_PREFIX = "RECALL-TAIL#"


def thread_pk(thread_id: str) -> str:
    return f"{THREAD_PREFIX}{thread_id}"


# Bots: a Bot's, a Channel's and a Chat's partitions and the bots an organization uses
# (`BOTS#<orgId>`); a chat's turns and items in its partition; in `RESOURCE#<userId>` the
# chats a person owns (under `CHAT#`) and the group chats of others where they spoke.
BOT_PREFIX = "BOT#"
ORG_BOTS_PREFIX = "BOTS#"
CHANNEL_PREFIX = "CHANNEL#"
CHAT_PREFIX = "CHAT#"
TURN_PREFIX = "TURN#"
SPOKEN_CHAT_PREFIX = "SPOKE#"
# The memory Bot's rows: confessions and enrichments in the Chat's partition; its settings,
# leases and spend in the Bot's.
CONFESSION_PREFIX = "CONFESS#"
ENRICHMENT_PREFIX = "ENRICH#"
MEMORY_BOT_SK = "MEMBOT"


def lease_sk(slot: int) -> str:
    return f"LEASE#{slot}"


def spend_sk(period: str) -> str:
    return f"SPEND#{period}"


# A Bot memory pool of one organization: `BOTMEM#<botId>#<orgId>`. Its audience marks
# sort between its entries and its head ("MEM#..." < "MEMAUD#..." < "META"), so the marks
# and the head are one Query.
BOT_MEMORY_PREFIX = "BOTMEM#"
AUDIENCE_PREFIX = "AUD#"
MARK_PREFIX = "MEMAUD#"

# A deployment move: the recipient's key pair and the imports done, each one partition.
MOVE_PREFIX = "MOVE#"
MOVE_RECIPIENT_PK = f"{MOVE_PREFIX}RECIPIENT"
MOVE_IMPORT_PK = f"{MOVE_PREFIX}IMPORT"
