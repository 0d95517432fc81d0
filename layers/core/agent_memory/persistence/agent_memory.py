"""Agent memory in the Agent's partition (`AGENT#<id>`), next to the agent row (`META`).

- `MEMORY`: the pool's head row: `version` (absent row = version 0), `updatedAt`.
- `MEM#<key>`: an entry: `content` sealed; kind, sources (`{session, item}`), status,
  updatedAt, `version` (the version that wrote it), `by` and `length` in plaintext.
- `LOG#<version:010d>`: one change: version, at, by, keys (keys are metadata, as in `sk`).
- `AGENTPOS#<sessionId>`: how far agent learning read that Session (`position`: an item
  number; absent row = 0).

`"MEM#..." < "MEMORY" < "META"`, so `sk BETWEEN "MEM#" AND "META"` reads every entry, the
head row and the agent row in ONE Query; `AGENTPOS#` and `LOG#` sort before it. Content is
sealed with the scope {org, pool: agent id, field: entry} and bound to its row (`sk`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agent_memory.domain.agent_memory import LOG_BY, By, LogChange
from agent_memory.domain.agents import Agent
from agent_memory.domain.session_memory import EntryMeta
from agent_memory.persistence import keys
from agent_memory.persistence.agents import AgentRepository, agent_of, agent_pk
from agent_memory.ports import (
    Absent,
    AbsentOrEquals,
    Action,
    Cipher,
    Condition,
    Equals,
    KeyRange,
    Present,
    Put,
    Record,
    Store,
    Update,
)

MEMORY_HEAD = "MEMORY"
LOG_PREFIX = "LOG#"
POSITION_PREFIX = "AGENTPOS#"
READ_RANGE = keys.POOL_RANGE
MAX_ACTIONS = keys.MAX_ACTIONS
entry_sk = keys.entry_sk


def log_sk(version: int) -> str:
    return f"{LOG_PREFIX}{version:010d}"


def position_sk(session_id: str) -> str:
    return f"{POSITION_PREFIX}{session_id}"


@dataclass(frozen=True)
class StoredEntry:
    meta: EntryMeta
    sealed: bytes
    # What wrote it last: consolidation, person or promotion.
    by: str = "consolidation"


@dataclass(frozen=True)
class AgentMemory:
    """The agent, its memory's version and every entry, as one Query read them."""

    agent: Agent
    version: int
    entries: list[StoredEntry]

    def by_key(self) -> dict[str, StoredEntry]:
        return {entry.meta.key: entry for entry in self.entries}


def _version_condition(version: int) -> Condition:
    # Version 0 is a memory whose head row was never written.
    return AbsentOrEquals("version", 0) if version == 0 else Equals("version", version)


class AgentMemoryRepository:
    def __init__(self, store: Store, cipher: Cipher) -> None:
        self._store = store
        self._cipher = cipher

    # -- reads ---------------------------------------------------------------------------

    def read(self, agent_id: str) -> AgentMemory | None:
        """The agent row, the head row and every entry, in one Query."""
        page = self._store.query(agent_pk(agent_id), READ_RANGE)
        agent: Agent | None = None
        version = 0
        entries: list[StoredEntry] = []
        for row in page.records:
            if row["sk"] == keys.HEAD:
                agent = agent_of(agent_id, row)
            elif row["sk"] == MEMORY_HEAD:
                version = int(row.get("version", 0))
            elif row.get("type") == "agent-entry":
                entries.append(_entry(row))
        return AgentMemory(agent, version, entries) if agent is not None else None

    def log(self, agent_id: str, *, limit: int, before: int | None = None) -> list[LogChange]:
        """Changes newest first, `limit` at most, older than version `before` when given."""
        if before is not None and before <= 1:
            return []
        high = log_sk(before - 1) if before is not None else f"{LOG_PREFIX}~"
        page = self._store.query(
            agent_pk(agent_id),
            KeyRange(low=LOG_PREFIX, high=high),
            limit=limit,
            newest_first=True,
        )
        return [_change(row) for row in page.records]

    def position(self, agent_id: str, session_id: str) -> int:
        """How far agent learning read the Session (0: nothing yet)."""
        row = self._store.get(agent_pk(agent_id), position_sk(session_id))
        return int(row["position"]) if row is not None else 0

    # -- content -------------------------------------------------------------------------

    @staticmethod
    def _scope(agent: Agent) -> dict[str, str]:
        return {"org": agent.org_id, "pool": agent.id, "field": "entry"}

    def open(self, agent: Agent, entry: StoredEntry) -> str:
        return self._cipher.open(
            entry.sealed, scope=self._scope(agent), row=entry_sk(entry.meta.key)
        )

    # -- actions -------------------------------------------------------------------------

    def head_change(self, agent: Agent, before: int, after: int, now_ms: int) -> Update:
        """Move the version from `before` to `after`, if nobody changed it meanwhile."""
        return Update(
            agent_pk(agent.id),
            MEMORY_HEAD,
            set={"type": "agent-memory", "version": after, "updatedAt": now_ms},
            condition=_version_condition(before),
        )

    def entry_put(self, agent: Agent, meta: EntryMeta, content: str, by: By) -> Put:
        """Write an entry (new, or replacing the one under its key)."""
        sk = entry_sk(meta.key)
        row: Record = {
            "pk": agent_pk(agent.id),
            "sk": sk,
            "type": "agent-entry",
            "key": meta.key,
            "content": self._cipher.seal(content, scope=self._scope(agent), row=sk),
            "kind": meta.kind,
            "sources": [dict(source) for source in meta.sources],
            "status": meta.status,
            "updatedAt": meta.updated_at,
            "version": meta.rev,
            "by": by,
            "length": len(content),
        }
        return Put(row)

    def entry_retract(
        self,
        agent: Agent,
        key: str,
        now_ms: int,
        version: int,
        by: By,
        sources: Sequence[Mapping[str, str]] | None = None,
    ) -> Update:
        """Mark an existing entry retracted; its content stays, and its sources unless the
        change names its own (a learned Forget names the items that ask for it)."""
        changes: dict[str, Any] = {
            "status": "retracted",
            "updatedAt": now_ms,
            "version": version,
            "by": by,
        }
        if sources is not None:
            changes["sources"] = [dict(source) for source in sources]
        return Update(agent_pk(agent.id), entry_sk(key), set=changes, condition=Present())

    def log_put(self, agent: Agent, change: LogChange, session_id: str | None = None) -> Put:
        row: Record = {
            "pk": agent_pk(agent.id),
            "sk": log_sk(change.version),
            "type": "agent-memory-log",
            "version": change.version,
            "at": change.at,
            "by": change.by,
            "keys": list(change.keys),
        }
        if session_id is not None:
            row["sessionId"] = session_id
        return Put(row, Absent())

    def position_move(
        self, agent_id: str, session_id: str, before: int, after: int, now_ms: int
    ) -> Update:
        """Move a Session's read position from `before` (its absent row is 0) to `after`."""
        return Update(
            agent_pk(agent_id),
            position_sk(session_id),
            set={
                "type": "agent-read-position",
                "sessionId": session_id,
                "position": after,
                "updatedAt": now_ms,
            },
            condition=AbsentOrEquals("position", 0) if before == 0 else Equals("position", before),
        )

    def position_put(self, agent_id: str, session_id: str, position: int, now_ms: int) -> Put:
        """Set a new Session's read position (a Fork starts after its copied history)."""
        row: Record = {
            "pk": agent_pk(agent_id),
            "sk": position_sk(session_id),
            "type": "agent-read-position",
            "sessionId": session_id,
            "position": position,
            "updatedAt": now_ms,
        }
        return Put(row)

    def write(self, actions: Sequence[Action]) -> None:
        """One conditional transaction; raises WriteConflict(index=...) when a condition fails."""
        self._store.write(actions)

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
        puts: list[Action] = [self.entry_put(agent, m, c, change.by) for m, c in entries]
        head = Put(
            {
                "pk": agent_pk(agent.id),
                "sk": MEMORY_HEAD,
                "type": "agent-memory",
                "version": change.version,
                "updatedAt": now_ms,
            },
            Absent(),
        )
        last: list[Action] = [agents.put(agent, now_ms), head, self.log_put(agent, change)]
        tail = puts[max(0, len(puts) - (MAX_ACTIONS - len(last))) :]
        before = puts[: len(puts) - len(tail)]
        for start in range(0, len(before), MAX_ACTIONS):
            self._store.write(before[start : start + MAX_ACTIONS])
        self._store.write([*last, *tail])


def _entry(row: Record) -> StoredEntry:
    meta = EntryMeta(
        key=str(row["key"]),
        kind=str(row["kind"]),
        sources=tuple(_source(s) for s in row.get("sources") or ()),
        updated_at=int(row["updatedAt"]),
        status="retracted" if row.get("status") == "retracted" else "active",
        rev=int(row.get("version", 0)),
        length=int(row.get("length", 0)),
    )
    return StoredEntry(meta, bytes(row["content"]), str(row.get("by", "consolidation")))


def _source(value: Any) -> dict[str, str]:
    source = dict(value) if isinstance(value, dict) else {}
    return {"session": str(source.get("session", "")), "item": str(source.get("item", ""))}


def _change(row: Record) -> LogChange:
    by = str(row["by"])
    return LogChange(
        version=int(row["version"]),
        at=int(row["at"]),
        by=cast(By, by if by in LOG_BY else "consolidation"),
        keys=tuple(str(k) for k in row.get("keys") or ()),
    )
