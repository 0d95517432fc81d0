"""Deleting sessions and agents, and erasing a person from their organization.

Each spans more rows than one transaction: the object is marked first (every read then
treats it as gone), its rows go in batches, its head row last (persistence/erasure.py). So
a call cut short by an outage is finished by the next one, and a call repeated after one
that finished answers what is left to remove (nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agent_memory.domain.access import authorize, require_org_admin, require_tenant
from agent_memory.domain.erasure import DELETE_AGENT, DELETE_SESSION, USER_NOT_FOUND, Erased
from agent_memory.domain.errors import NotFound
from agent_memory.domain.identity import Principal
from agent_memory.persistence.erasure import ErasureRepository


class BotMemoryEraser(Protocol):
    """Bot memory, as erasure sees it (service/bot_memory.py implements it)."""

    def erase_person(self, bot_id: str, org_id: str, user_id: str) -> int: ...


# Called with a thread id and its message count once its messages are gone: the recall
# index removes their vectors (keys are positions, so nothing is read first).
ForgetVectors = Callable[[str, int], None]


class ErasureService:
    def __init__(
        self,
        repo: ErasureRepository,
        user_org: Callable[[str], str | None],
        *,
        bot_memory: BotMemoryEraser | None = None,
        forget_vectors: ForgetVectors | None = None,
    ) -> None:
        self._repo = repo
        # The organization a user id belongs to (None: no such user).
        self._user_org = user_org
        self._bot_memory = bot_memory
        self.forget_vectors = forget_vectors

    def delete_session(self, principal: Principal, session_id: str) -> Erased:
        """Delete a session: items, entries, executions and saved calls; the agent memory
        learned from it stays. Its owner or an organization admin; others 404."""
        require_tenant(principal)
        found = self._repo.session(session_id)
        if found is None:
            raise NotFound("session not found")
        session, begun = found
        authorize(principal, session.grants(), DELETE_SESSION, what="session")
        if not begun:
            self._repo.mark_session(session.id)
        return self._repo.delete_session(session)

    def delete_agent(self, principal: Principal, agent_id: str) -> Erased:
        """Delete an agent with every session of it (everyone's), its memory, versions
        and executions. Its owner or an organization admin; members 403, others 404."""
        require_tenant(principal)
        found = self._repo.agent(agent_id)
        if found is None:
            raise NotFound("agent not found")
        agent, begun = found
        authorize(principal, agent.grants(), DELETE_AGENT, what="agent")
        if not begun:
            self._repo.mark_agent(agent.id)
        erased = self._sessions(agent.id, owner=None)
        self._repo.delete_agent(agent)
        return erased

    def erase_user(self, principal: Principal, org_id: str, user_id: str) -> Erased:
        """Erase one person from the organization: their sessions (items, executions,
        saved calls) under every agent, their threads (messages, working memory, vectors),
        the bot memory entries that stand on their words (`from:<user>`, and what is built on
        them) in every bot the organization uses. An
        administrator of the organization (or the service admin); the person stays a user.
        Resumable and idempotent: a second call finishes the work and counts what it
        removed itself (0 after one that finished)."""
        require_org_admin(principal, org_id, ["orgId"])
        if self._user_org(user_id) != org_id:
            raise NotFound(USER_NOT_FOUND, ["userId"])
        erased = Erased()
        for agent_id in list(self._repo.org_agent_ids(org_id)):
            erased.add(self._sessions(agent_id, owner=user_id))
        erased.add(self._repo.delete_threads(user_id, self.forget_vectors))
        if self._bot_memory is not None:
            for bot_id in list(self._repo.org_bot_ids(org_id)):
                erased.bot_entries += self._bot_memory.erase_person(bot_id, org_id, user_id)
        return erased

    def _sessions(self, agent_id: str, *, owner: str | None) -> Erased:
        erased = Erased()
        for session_id in self._repo.session_ids(agent_id, owner):
            found = self._repo.session(session_id)
            if found is None:
                continue  # gone meanwhile (its list row goes with its head row)
            session, begun = found
            if not begun:
                self._repo.mark_session(session.id)
            erased.add(self._repo.delete_session(session))
        return erased
