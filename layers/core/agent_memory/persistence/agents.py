"""Agents in the table.

`AGENT#<id>/META`: organization, name, owner, members; agent memory keeps its entries in the
same partition. `AGENTS#<org>/<agentId>`: the organization's list of agents, written in the
agent row's transaction; ids sort by creation, so a descending Query is newest first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agent_memory.domain.agents import Agent
from agent_memory.persistence import keys
from agent_memory.persistence.rows import StoreRows, newest_kept, people_of
from agent_memory.ports import Absent, Put, Record


def agent_pk(agent_id: str) -> str:
    return f"{keys.AGENT_PREFIX}{agent_id}"


def org_agents_pk(org_id: str) -> str:
    return f"{keys.ORG_AGENTS_PREFIX}{org_id}"


class AgentRepository(StoreRows):
    def create(self, agent: Agent, now_ms: int) -> None:
        self._store.write([self.put(agent, now_ms), self.index_put(agent, now_ms)])

    def index_put(self, agent: Agent, now_ms: int) -> Put:
        """The agent's row in its organization's list, for the agent row's transaction."""
        row: Record = {"pk": org_agents_pk(agent.org_id), "sk": agent.id, "type": "agent-index"}
        return Put({**row, **_fields(agent, now_ms)}, Absent())

    def listed(
        self, org_id: str, visible: Callable[[Agent], bool], *, limit: int, after: str | None
    ) -> tuple[list[Agent], bool]:
        """The organization's agents that `visible` keeps, newest first, after the agent id
        `after`: (at most `limit` agents, whether more follow)."""

        def shown(row: Record) -> Agent | None:
            agent = _agent(str(row["sk"]), org_id, row)
            return agent if visible(agent) else None

        return newest_kept(self._store, org_agents_pk(org_id), shown, limit=limit, after=after)

    def put(self, agent: Agent, now_ms: int) -> Put:
        """The new agent's row, for a transaction of the caller's (e.g. a promotion)."""
        row: Record = {"pk": agent_pk(agent.id), "sk": keys.HEAD, "type": "agent"}
        return Put({**row, "orgId": agent.org_id, **_fields(agent, now_ms)}, Absent())

    def get(self, agent_id: str) -> Agent | None:
        return agent_of(agent_id, self._store.get(agent_pk(agent_id), keys.HEAD))

    def users_of(self, org_id: str, user_ids: Sequence[str]) -> set[str]:
        """Which of `user_ids` are people of `org_id` (one batch read)."""
        return people_of(self._store, org_id, user_ids)


def _fields(agent: Agent, now_ms: int) -> Record:
    """What the agent row and its list's row both keep."""
    return {
        "name": agent.name,
        "owner": agent.owner,
        "members": list(agent.members),
        "createdAt": now_ms,
    }


def agent_of(agent_id: str, row: Record | None) -> Agent | None:
    """The Agent in its row (None when the row is not an agent's)."""
    if row is None or row.get("type") != "agent":
        return None
    return _agent(agent_id, str(row["orgId"]), row)


def _agent(agent_id: str, org_id: str, row: Record) -> Agent:
    """The Agent in its row or its list's row (both keep name, owner and members)."""
    members = tuple(row.get("members") or ())
    return Agent(agent_id, org_id, str(row["name"]), str(row["owner"]), members)
