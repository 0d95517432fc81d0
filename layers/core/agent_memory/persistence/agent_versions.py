"""Agent versions (seed 003) in the agent's partition (`AGENT#<id>`), next to its row.

- `DRAFT`: the draft's `memory` block as sent (sealed), `updatedAt`.
- `PUBLISHED`: the versions' head: `latest` (absent row = 0), `active` (absent = none
  activated), and a sealed copy of the active version's `memory` block, so a thread reads
  the agent row and its options with ONE BatchGetItem.
- `VERSION#<n:08d>`: a published version: `number`, sealed `memory`, `at` (published).

None of these is under `MEM#`..`META` (the agent memory pool's one-Query range) nor
`RECENT#` (its newest-first copies): "DRAFT" < "MEM#", "PUBLISHED" sorts between "META" and
"RECENT#" (a newest-first read passes over it), "VERSION#" after both. The `memory` block
is sealed like content (scope {org, pool: agent id, field: options}, bound to the row): an
observer `instruction`, a title's `instructions` or a working-memory template may name
people or business rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.agents import Agent
from agent_memory.persistence import keys
from agent_memory.persistence.agents import agent_of, agent_pk
from agent_memory.persistence.keys import DRAFT, PUBLISHED
from agent_memory.persistence.rows import SealedRows, numbered_rows
from agent_memory.ports import (
    Absent,
    Present,
    Put,
    Record,
    Update,
)
from agent_memory.ports.store import count_is

# Condition name: another publish took the number first.
LATEST_VERSION = "agent-latest-version"
FIELD = "options"


def version_sk(number: int) -> str:
    return f"{keys.VERSION_PREFIX}{number:08d}"


@dataclass(frozen=True)
class Version:
    number: int
    memory: dict[str, Any] | None
    published_at: int


@dataclass(frozen=True)
class Published:
    """The versions' head: the newest number (0: none) and the active one's block."""

    latest: int
    active: int | None
    memory: dict[str, Any] | None


class AgentVersionRepository(SealedRows):
    def _seal(self, agent: Agent, sk: str, memory: dict[str, Any] | None) -> bytes:
        text = json.dumps(memory, ensure_ascii=False, separators=(",", ":"))
        return self._cipher.seal(text, scope=_scope(agent), row=sk)

    def _open(self, agent: Agent, sk: str, blob: Any) -> dict[str, Any] | None:
        value = json.loads(self._cipher.open(bytes(blob), scope=_scope(agent), row=sk))
        return value if isinstance(value, dict) else None

    def _agent_and(self, agent_id: str, sk: str) -> tuple[Agent | None, Record | None]:
        """The agent row and its row `sk`, in one batch read."""
        pk = agent_pk(agent_id)
        rows = {str(r["sk"]): r for r in self._store.get_many([(pk, keys.HEAD), (pk, sk)])}
        return agent_of(agent_id, rows.get(keys.HEAD)), rows.get(sk)

    def agent_and_published(self, agent_id: str) -> tuple[Agent | None, Published]:
        """The agent row and the versions' head, in one batch read."""
        agent, row = self._agent_and(agent_id, PUBLISHED)
        return agent, self._published(agent, row)

    def agent_and_draft(self, agent_id: str) -> tuple[Agent | None, dict[str, Any] | None]:
        agent, draft = self._agent_and(agent_id, DRAFT)
        if agent is None or draft is None:
            return agent, None
        return agent, self._open(agent, DRAFT, draft["memory"])

    def _published(self, agent: Agent | None, row: Record | None) -> Published:
        if agent is None or row is None:
            return Published(0, None, None)
        active = row.get("active")
        memory = self._open(agent, PUBLISHED, row["memory"]) if row.get("memory") else None
        return Published(int(row["latest"]), int(active) if active else None, memory)

    def published(self, agent: Agent) -> Published:
        return self._published(agent, self._store.get(agent_pk(agent.id), PUBLISHED))

    def version(self, agent: Agent, number: int) -> Version | None:
        row = self._store.get(agent_pk(agent.id), version_sk(number))
        return self._version(agent, row) if row is not None else None

    def versions(self, agent: Agent, *, limit: int, before: int | None = None) -> list[Version]:
        """Published versions newest first, `limit` at most, older than `before` if given."""
        pk = agent_pk(agent.id)
        rows = numbered_rows(self._store, pk, keys.VERSION_PREFIX, version_sk, limit, before)
        return [self._version(agent, row) for row in rows]

    def _version(self, agent: Agent, row: Record) -> Version:
        sk = str(row["sk"])
        return Version(int(row["number"]), self._open(agent, sk, row["memory"]), int(row["at"]))

    def save_draft(self, agent: Agent, memory: dict[str, Any] | None, now_ms: int) -> None:
        row: Record = {
            "pk": agent_pk(agent.id),
            "sk": DRAFT,
            "type": "agent-draft",
            "memory": self._seal(agent, DRAFT, memory),
            "updatedAt": now_ms,
        }
        self._store.write([Put(row)])

    def publish(
        self, agent: Agent, memory: dict[str, Any] | None, latest: int, now_ms: int
    ) -> Version:
        """Version `latest + 1` from the draft's block; WriteConflict(LATEST_VERSION) when
        another publish took that number first."""
        number = latest + 1
        sk = version_sk(number)
        row: Record = {
            "pk": agent_pk(agent.id),
            "sk": sk,
            "type": "agent-version",
            "number": number,
            "memory": self._seal(agent, sk, memory),
            "at": now_ms,
        }
        condition = count_is("latest", latest, name=LATEST_VERSION)
        head = Update(
            agent_pk(agent.id),
            PUBLISHED,
            set={"type": "agent-versions", "latest": number, "updatedAt": now_ms},
            condition=condition,
        )
        self._store.write([Put(row, Absent()), head])
        return Version(number, memory, now_ms)

    def activate(self, agent: Agent, version: Version, now_ms: int) -> None:
        """Make `version` the one threads follow (the head keeps a copy of its block)."""
        head = Update(
            agent_pk(agent.id),
            PUBLISHED,
            set={
                "active": version.number,
                "memory": self._seal(agent, PUBLISHED, version.memory),
                "updatedAt": now_ms,
            },
            condition=Present(),
        )
        self._store.write([head])


def _scope(agent: Agent) -> dict[str, str]:
    return {"org": agent.org_id, "pool": agent.id, "field": FIELD}
