"""Deleting sessions and agents, erasing a person from their organization, and finding
what a person's export reads.

The object is marked first, its rows go in batches and its head row last, so the next call
finishes one cut short. A person's export finds their objects as erasing them does: the index
rows written in each object's create transaction (docs/adr/0070, 0085), so an object that
erasure would remove is an object the export shows, and no second list of pools exists to
fall behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Protocol

from agent_memory.domain import recall as recall_rules
from agent_memory.domain.access import (
    OPERATOR_READS_NO_CONTENT,
    authorized,
    require_org_admin,
    require_tenant,
)
from agent_memory.domain.agents import Agent
from agent_memory.domain.erasure import DELETE_AGENT, DELETE_SESSION, USER_NOT_FOUND, Erased
from agent_memory.domain.errors import Conflict, NotFound
from agent_memory.domain.export import Found, Header
from agent_memory.domain.identity import SERVICE_ADMIN, Principal, person_of
from agent_memory.domain.sessions import Session
from agent_memory.domain.threads import require_resource
from agent_memory.persistence.erasure import (
    Erasing,
    ErasureRepository,
)
from agent_memory.persistence.org_contents import OrgContents
from agent_memory.ports import Clock
from agent_memory.ports.vectors import MAX_DELETE_BATCH, VectorIndex
from agent_memory.service.bot_learning import KIND as BOT_KIND
from agent_memory.service.bot_learning import learning_pool_id
from agent_memory.service.observer import OBSERVE_KIND
from agent_memory.service.recall import RECALL_KIND
from agent_memory.service.thread_title import TITLE_KIND

THREAD_KINDS = (TITLE_KIND, OBSERVE_KIND, RECALL_KIND)
ERASE_YOURSELF = (
    "you cannot erase yourself: another administrator of the organization, or the admin token, can"
)
# The observer's runs may carry recall's indexing.
EMBEDDING_KINDS = (RECALL_KIND, OBSERVE_KIND)


class BotMemoryEraser(Protocol):
    def erase_person(self, bot_id: str, org_id: str, user_id: str) -> int: ...


@dataclass(eq=False)
class ErasureService:
    repo: ErasureRepository
    has_user: Callable[[str, str], bool]
    _: KW_ONLY
    clock: Clock
    bot_memory: BotMemoryEraser
    vectors: VectorIndex

    def export_header(self, principal: Principal) -> Header:
        """What a person's export's first line says (the admin token is refused: 403)."""
        user_id, org_id = person_of(principal, OPERATOR_READS_NO_CONTENT)
        return Header(user_id, org_id, self.clock.now_ms())

    def exported(self, principal: Principal) -> Iterator[Found]:
        """The person's agents, their sessions (under any agent), threads, chats, and every
        bot of the organization (whose memory shows them only what is for them). Lazily, a
        partition at a time: a large export is never listed whole."""
        user_id, org_id = person_of(principal, OPERATOR_READS_NO_CONTENT)
        for agent_id, owner in self.repo.org_agents(org_id):
            if owner == user_id:
                yield Found("agent", agent_id)
            for session_id in self.repo.session_ids(agent_id, owner=user_id):
                yield Found("session", session_id)
        for thread_id in self.repo.user_thread_ids(org_id, user_id):
            yield Found("thread", thread_id)
        for chat_id in self.repo.owned_chat_ids(org_id, user_id):
            yield Found("chat", chat_id)
        for bot_id in self.repo.org_bot_ids(org_id):
            yield Found("bot", bot_id)

    def delete_session(self, principal: Principal, session_id: str) -> Erased:
        """The agent memory learned from it stays; others than its owner or an admin 404."""
        require_tenant(principal)
        found = self.repo.session(session_id)
        return self._session(authorized(principal, found, DELETE_SESSION, what="session"))

    def delete_agent(self, principal: Principal, agent_id: str) -> Erased:
        """With everyone's sessions and threads of it; members 403, others 404."""
        require_tenant(principal)
        found = self.repo.agent(agent_id)
        return self._agent(authorized(principal, found, DELETE_AGENT, what="agent"))

    def delete_thread(self, principal: Principal, thread_id: str) -> Erased:
        """With its messages, working memory, observations and vectors; only its resource
        (the person it is for) deletes it, for everyone else it does not exist."""
        require_tenant(principal)
        stored = self.repo.thread(thread_id)
        require_resource(principal, stored)
        # The person's working memory with the agent serves their other threads: it stays.
        return self._thread(thread_id, resource_notes=False)

    def erase_user(self, principal: Principal, org_id: str, user_id: str) -> Erased:
        """Erase one person's data from the organization (domain/erasure.py); the person
        stays a user. Idempotent: a repeat counts only what it removed itself."""
        if not principal.manages_users_of(org_id):
            require_org_admin(principal, org_id, ["orgId"])
        if not self.has_user(org_id, user_id):
            raise NotFound(USER_NOT_FOUND, ["userId"])
        if (principal.org_id, principal.user_id) == (org_id, user_id):
            # An administrator erasing themselves would lose, mid-session, what they act on.
            raise Conflict(ERASE_YOURSELF, ["userId"])
        erased = Erased()
        for agent_id, owner in self.repo.org_agents(org_id):
            if owner != user_id:
                erased.add(self._sessions(agent_id, owner=user_id))
            elif (found := self.repo.agent(agent_id)) is not None:
                erased.add(self._agent(found))
        for chat_id in self.repo.owned_chat_ids(org_id, user_id):
            erased.add(self._chat(org_id, user_id, chat_id))
        for chat_id in self.repo.spoken_chat_ids(org_id, user_id):
            erased.add(self.repo.delete_contributions(org_id, chat_id, user_id))
        for thread_id in self.repo.user_thread_ids(org_id, user_id):
            erased.add(self._thread(thread_id))
        erased.add(self.repo.delete_resource_rest(org_id, user_id))
        now = self.clock.now_ms()
        erased.add(self.repo.delete_memories_about(org_id, user_id, now, self._forget_vectors))
        for bot_id in self.repo.org_bot_ids(org_id):
            erased.bot_entries += self.bot_memory.erase_person(bot_id, org_id, user_id)
        return erased

    def _agent(self, found: Erasing[Agent]) -> Erased:
        agent = found.it
        if not found.begun:
            self.repo.mark_agent(agent.id)
        erased = self._sessions(agent.id, owner=None)
        for thread_id in self.repo.agent_thread_ids(agent.id):
            erased.add(self._thread(thread_id))
        self.repo.delete_agent(agent)
        erased.agents = 1
        return erased

    def _chat(self, org_id: str, user_id: str, chat_id: str) -> Erased:
        found = self.repo.chat(chat_id)
        if found is None:
            self.repo.forget_owned_chat(org_id, user_id, chat_id)  # gone meanwhile
            return Erased()
        chat = found.it
        if not found.begun:
            self.repo.mark_chat(chat.id)
        return self.repo.delete_chat(chat, (BOT_KIND, learning_pool_id(chat.bot_id, chat.org_id)))

    def _thread(self, thread_id: str, *, resource_notes: bool = True) -> Erased:
        return self.repo.delete_thread(
            thread_id,
            THREAD_KINDS,
            self._forget_thread_vectors,
            EMBEDDING_KINDS,
            self.clock.now_ms(),
            resource_notes=resource_notes,
        )

    def _forget_vectors(self, keys: Sequence[str]) -> None:
        """Agent_memories' vectors (keyed by their ids), or a thread's."""
        for start in range(0, len(keys), MAX_DELETE_BATCH):
            self.vectors.delete(keys[start : start + MAX_DELETE_BATCH])

    def _forget_thread_vectors(self, thread_id: str, message_count: int) -> None:
        """Keys are positions, so nothing is read first."""
        self._forget_vectors([recall_rules.vector_key(thread_id, n) for n in range(message_count)])

    def _sessions(self, agent_id: str, *, owner: str | None) -> Erased:
        erased = Erased()
        for session_id in self.repo.session_ids(agent_id, owner):
            # A session gone meanwhile is not found (its list row goes with its head row).
            if (found := self.repo.session(session_id)) is not None:
                erased.add(self._session(found))
        return erased

    def _session(self, found: Erasing[Session]) -> Erased:
        if not found.begun:
            self.repo.mark_session(found.it.id)
        return self.repo.delete_session(found.it)

    def erase_organization(
        self,
        org_id: str,
        people: Sequence[str],
        contents: OrgContents,
        gone: Callable[[str], None],
    ) -> Erased:
        """For an organization's deletion (service/organizations.py, the admin token's):
        each person's data as their erasure removes it (the waits of their chats' Turns
        first), then `gone(user_id)` (their record may go: a call cut short starts again
        from those left); then the agents and the agent_memories no person's erasure took,
        vectors first."""
        erased = Erased()
        for user_id in people:
            if self.has_user(org_id, user_id):
                contents.delete_turn_waits(org_id, user_id)
                erased.add(self.erase_user(SERVICE_ADMIN, org_id, user_id))
            gone(user_id)
        for agent_id, _owner in self.repo.org_agents(org_id):
            if (found := self.repo.agent(agent_id)) is not None:
                erased.add(self._agent(found))
        erased.agent_memories += contents.delete_memories(org_id, self._forget_vectors)
        return erased
