"""Agent memory in the Agent's partition (`AGENT#<id>`), next to the agent row (`META`).

- `MEMORY`: the pool's head row: `version` (absent row = version 0), `updatedAt`.
- `MEM#<entry id>` and, while active, `RECENT#...`: an entry in the pool repository's row
  shape (persistence/pools.py); `rev` is the version that wrote it, `by` what wrote it.
- `LOG#<version:010d>`: one change: version, at, by, keys (keys are metadata, as in `sk`).
- `LEARNPOS#<sessionId>`: how far agent learning read that Session (persistence/positions.py).

`"MEM#..." < "MEMORY" < "META"`, so `sk BETWEEN "MEM#" AND "META"` reads every entry, the
head row and the agent row in ONE Query; `LEARNPOS#` and `LOG#` sort before it; the memory
text reads `META` and the first `RECENT#` page in one Query. Content is sealed with the
scope {org, pool: agent id, field: entry} and bound to the entry's id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from agent_memory.domain.agent_memory import By, LogChange
from agent_memory.domain.agents import Agent
from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.memory_bot import ReadMark
from agent_memory.persistence import keys
from agent_memory.persistence.agents import AgentRepository, agent_of, agent_pk
from agent_memory.persistence.pools import RECENCY, Newest, Pool, PoolRows, StoredEntry
from agent_memory.persistence.positions import read_mark
from agent_memory.persistence.rows import log_rows, write_last
from agent_memory.ports import Absent, Action, Put, Record, Update
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS, count_is

# Condition name: another writer changed the memory first.
MEMORY_VERSION = "agent-memory-version"
# A promotion's transactions hold at most this many actions (a test makes it smaller).
PROMOTION_BATCH = MAX_TRANSACTION_ACTIONS


def agent_pool(agent: Agent) -> Pool:
    """The agent's memory pool, in the agent's partition, sealed under its id."""
    return Pool(agent_pk(agent.id), agent.org_id, agent.id, RECENCY)


@dataclass(frozen=True)
class AgentMemory:
    """The agent, its memory's version and every entry, as one Query read them."""

    agent: Agent
    version: int
    entries: list[StoredEntry]


class AgentMemoryRepository(PoolRows):
    # -- reads ---------------------------------------------------------------------------

    def read(self, agent_id: str) -> AgentMemory | None:
        """The agent row, the head row and every entry, in one Query."""
        page = self._store.query(agent_pk(agent_id), keys.POOL_RANGE)
        others, entries = self._split(page.records)
        agent = agent_of(agent_id, others.get(keys.HEAD))
        version = int(others.get(keys.AGENT_MEMORY_HEAD, {}).get("version", 0))
        return AgentMemory(agent, version, entries) if agent is not None else None

    def newest(self, agent_id: str, first_page: int) -> tuple[Agent | None, Newest]:
        """The agent row and its active entries newest first, read lazily (the agent row
        and the first page in one Query)."""
        probe = Pool(agent_pk(agent_id), "", agent_id, RECENCY)
        read = self.pools.newest(probe, first_page=first_page)
        agent = agent_of(agent_id, read.head) if read.head is not None else None
        return agent, read

    def log(self, agent_id: str, *, limit: int, before: int | None = None) -> list[LogChange]:
        """Changes newest first, `limit` at most, older than version `before` when given."""
        rows = log_rows(self._store, agent_pk(agent_id), limit=limit, before=before)
        return [_change(row) for row in rows]

    def position(self, agent_id: str, session_id: str) -> ReadMark:
        """How far agent learning read the Session."""
        return read_mark(self._store, agent_pk(agent_id), session_id)

    # -- content -------------------------------------------------------------------------

    def open(self, agent: Agent, entry: StoredEntry) -> str:
        return self.pools.open_content(agent_pool(agent), entry)

    # -- actions -------------------------------------------------------------------------

    def head_change(self, agent: Agent, before: int, after: int, now_ms: int) -> Update:
        """Move the version from `before` to `after`, if nobody changed it meanwhile."""
        return Update(
            agent_pk(agent.id),
            keys.AGENT_MEMORY_HEAD,
            set={"type": "agent-memory", "version": after, "updatedAt": now_ms},
            condition=count_is("version", before, name=MEMORY_VERSION),
        )

    def entry_put(
        self, agent: Agent, meta: EntryMeta, content: str, previous: EntryMeta | None
    ) -> list[Action]:
        """Write an entry (new, or replacing `previous`, the one under its key)."""
        return self.pools.put(agent_pool(agent), meta, content, previous=previous)

    def entry_retract(self, agent: Agent, previous: EntryMeta, after: EntryMeta) -> list[Action]:
        """Mark an existing entry retracted; its content stays."""
        return self.pools.change(agent_pool(agent), previous, after)

    def log_put(self, agent: Agent, change: LogChange, session_id: str | None = None) -> Put:
        row: Record = {
            "pk": agent_pk(agent.id),
            "sk": keys.log_sk(change.version),
            "type": "agent-memory-log",
            "version": change.version,
            "at": change.at,
            "by": change.by,
            "keys": list(change.keys),
        }
        if session_id is not None:
            row["sessionId"] = session_id
        if change.person is not None:
            row["person"] = change.person
        if change.service_key is not None:
            row["serviceKeyId"] = change.service_key
        return Put(row, Absent())

    def create_promoted(
        self,
        agents: AgentRepository,
        agent: Agent,
        entries: Sequence[tuple[EntryMeta, str]],
        change: LogChange,
        now_ms: int,
    ) -> None:
        """A new agent with its memory at `change.version`. One transaction when it fits;
        otherwise entries go first in transactions of 100 and the agent row, head row and
        log entry in the LAST one: the agent is invisible until its memory is complete."""
        puts: list[Action] = [
            action
            for meta, content in entries
            for action in self.entry_put(agent, meta, content, None)
        ]
        last: list[Action] = [
            agents.put(agent, now_ms),
            agents.index_put(agent, now_ms),
            self.head_change(agent, 0, change.version, now_ms),
            self.log_put(agent, change),
        ]
        write_last(self._store, puts, last, size=PROMOTION_BATCH)


def _change(row: Record) -> LogChange:
    return LogChange(
        version=int(row["version"]),
        at=int(row["at"]),
        by=cast(By, row["by"]),
        keys=tuple(str(k) for k in row.get("keys") or ()),
        person=row.get("person"),
        service_key=row.get("serviceKeyId"),
    )
