"""Agents: create one (its owner is the caller), read it (owner or member)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.domain.access import authorized
from agent_memory.domain.agents import AGENTS_BELONG_TO_A_PERSON, Agent, new_agent
from agent_memory.domain.errors import NotFound
from agent_memory.domain.identity import Principal, person_of
from agent_memory.persistence.agents import AgentRepository
from agent_memory.ports import Clock, Ids


@dataclass(eq=False)
class AgentService:
    repo: AgentRepository
    clock: Clock
    ids: Ids

    def create(self, principal: Principal, name: str, members: Sequence[str] = ()) -> Agent:
        """A new Agent owned by the caller, shared with `members` (people of the same org)."""
        owner, org_id = person_of(principal, AGENTS_BELONG_TO_A_PERSON)
        agent = new_agent(self.ids.new("ag_"), org_id, owner, name, members)
        known = self.repo.users_of(org_id, agent.members)
        for index, member in enumerate(members):
            if member != owner and member not in known:
                raise NotFound("no such person in this organization", ["members", index])
        self.repo.create(agent, self.clock.now_ms())
        return agent

    def get(self, principal: Principal, agent_id: str) -> Agent:
        return authorized(principal, self.repo.get(agent_id), "read", what="agent")

    def list_agents(
        self, principal: Principal, *, limit: int, starting_after: str | None
    ) -> tuple[list[Agent], bool]:
        """Newest first; whether more follow."""
        user, org_id = person_of(principal, AGENTS_BELONG_TO_A_PERSON)

        def visible(agent: Agent) -> bool:
            return principal.administers(org_id) or user == agent.owner or user in agent.members

        return self.repo.listed(org_id, visible, limit=limit, after=starting_after)

    def usable(self, principal: Principal, agent_id: str) -> Agent:
        """The Agent a new Session runs with: one the caller may read."""
        try:
            return self.get(principal, agent_id)
        except NotFound as error:
            raise NotFound("agent not found", ["agentId"]) from error
