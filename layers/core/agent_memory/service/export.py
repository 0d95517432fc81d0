"""What a person's export reads: the objects erasing the person would find (ADR 0070).

One enumeration serves both: the index rows written in each object's create transaction
(`PersonIndex`, which `ErasureRepository` is), so an object that erasure would remove is
an object the export shows, and no second list of pools exists to fall behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from agent_memory.domain.access import require_tenant
from agent_memory.domain.export import Found, header
from agent_memory.domain.identity import Principal
from agent_memory.ports import Clock


class PersonIndex(Protocol):
    def org_agents(self, org_id: str) -> list[tuple[str, str]]: ...

    def session_ids(self, agent_id: str, owner: str | None = None) -> list[str]: ...

    def user_thread_ids(self, org_id: str, user_id: str) -> list[str]: ...

    def owned_chat_ids(self, org_id: str, user_id: str) -> list[str]: ...

    def org_bot_ids(self, org_id: str) -> Iterable[str]: ...


class ExportService:
    def __init__(self, index: PersonIndex, clock: Clock) -> None:
        self._index = index
        self._clock = clock

    def header(self, principal: Principal) -> dict[str, object]:
        """The first line, for a person (the admin token is refused: 403)."""
        org_id, user_id = self.admit(principal)
        return header(user_id, org_id, self._clock.now_ms())

    def admit(self, principal: Principal) -> tuple[str, str]:
        """(organization, user) of a person; the admin token is refused (403), as on every
        route that reads content."""
        require_tenant(principal)
        if principal.org_id is None or principal.user_id is None:  # pragma: no cover
            raise AssertionError("a tenant is a person of an organization")
        return principal.org_id, principal.user_id

    def objects(self, principal: Principal) -> Iterator[Found]:
        """The person's agents, their sessions (under any agent), threads, chats, and every
        bot of the organization (whose memory shows them only what is for them). Lazily, a
        partition at a time: a large export is never listed whole."""
        org_id, user_id = self.admit(principal)
        for agent_id, owner in self._index.org_agents(org_id):
            if owner == user_id:
                yield Found("agent", agent_id)
            for session_id in self._index.session_ids(agent_id, owner=user_id):
                yield Found("session", session_id)
        for thread_id in self._index.user_thread_ids(org_id, user_id):
            yield Found("thread", thread_id)
        for chat_id in self._index.owned_chat_ids(org_id, user_id):
            yield Found("chat", chat_id)
        for bot_id in self._index.org_bot_ids(org_id):
            yield Found("bot", bot_id)
