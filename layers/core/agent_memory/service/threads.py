"""Threads: a user's conversations with an agent; every call follows its active version."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from agent_memory.domain import observation as observing
from agent_memory.domain import threads as rules
from agent_memory.domain.access import authorize, require_tenant
from agent_memory.domain.agents import Agent
from agent_memory.domain.errors import (
    Forbidden,
    NotFound,
    Unavailable,
    WriteConflict,
)
from agent_memory.domain.identity import Principal
from agent_memory.domain.observation import ShownLog
from agent_memory.domain.runs import RunView
from agent_memory.domain.threads import Found, Message, Notes, Thread, TurnContext
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.persistence.threads import (
    THREAD_ALIVE,
    StoredThread,
    ThreadPage,
    ThreadRepository,
)
from agent_memory.ports import Clock, Ids
from agent_memory.ports.vectors import VectorIndexFailure
from agent_memory.service.agent_versions import AgentVersionService
from agent_memory.service.observer_context import ObserverService
from agent_memory.service.recall import RecallService
from agent_memory.service.thread_learning import Saved, ThreadBackground

log = logging.getLogger(__name__)


class ThreadService:
    def __init__(
        self,
        repo: ThreadRepository,
        versions: AgentVersionService,
        clock: Clock,
        ids: Ids,
        *,
        background: ThreadBackground,
        observer: ObserverService,
        recall: RecallService,
    ) -> None:
        # Public for benchmarks that seed threads as the service seals them.
        self.repo = repo
        self._versions = versions
        self._clock = clock
        self._ids = ids
        self.background = background
        self.observer = observer
        self.semantic = recall

    def _thread(self, principal: Principal, thread_id: str) -> StoredThread:
        require_tenant(principal)
        stored = self.repo.get(thread_id)
        if stored is None or not rules.is_resource(principal, stored.thread):
            raise NotFound(rules.THREAD_NOT_FOUND)
        return stored

    def _options(self, thread: Thread) -> dict[str, Any]:
        _, options = self._versions.active_options(thread.agent_id)
        return options

    def create(
        self,
        principal: Principal,
        agent_id: str,
        resource_id: str | None,
        *,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Thread:
        _org_id, user_id = _person(principal)
        if resource_id is not None and resource_id != user_id:
            raise Forbidden("a thread's resource is the caller", ["resourceId"])
        agent = self._agent(principal, agent_id)
        thread = Thread(
            id=self._ids.new("th_"),
            org_id=agent.org_id,
            agent_id=agent.id,
            resource_id=user_id,
            title=title,
            created_at=self._clock.now_ms(),
            metadata=metadata,
        )
        self.repo.create(thread)
        return thread

    def _agent(self, principal: Principal, agent_id: str) -> Agent:
        agent, _ = self._versions.active_options(agent_id)
        if agent is None:
            raise NotFound("agent not found", ["agentId"])
        try:
            authorize(principal, agent.grants(), "read", what="agent")
        except NotFound as error:
            raise NotFound("agent not found", ["agentId"]) from error
        return agent

    def threads_of(
        self,
        principal: Principal,
        agent_id: str | None,
        resource_id: str | None,
        *,
        limit: int = 100,
        starting_after: str | None = None,
    ) -> ThreadPage:
        """Newest first; `starting_after` must be a thread of this list, else 404."""
        org_id, user_id = _person(principal)
        if resource_id is not None and resource_id != user_id:
            raise Forbidden("you may list your own threads only", ["resourceId"])
        after = None
        if starting_after is not None:
            stored = self.repo.get(starting_after)
            if stored is None or not rules.is_resource(principal, stored.thread):
                raise NotFound("starting_after must be one of your threads", ["starting_after"])
            after = stored.thread
            if agent_id is not None and after.agent_id != agent_id:
                raise NotFound(
                    "starting_after must be one of your threads of the agent listed",
                    ["starting_after"],
                )
        return self.repo.of_user(org_id, user_id, agent_id, limit, after)

    def executions(self, principal: Principal, thread_id: str) -> list[RunView]:
        return self.background.executions(self._thread(principal, thread_id).thread)

    def get(self, principal: Principal, thread_id: str) -> Thread:
        return self._thread(principal, thread_id).thread

    def describe(
        self,
        principal: Principal,
        thread_id: str,
        title: str | None,
        metadata: Mapping[str, Any] | None,
    ) -> Thread:
        """Sets the title and/or metadata given (metadata replaced whole); a title set
        here is the thread's, so `generateTitle` leaves it."""
        thread = self._thread(principal, thread_id).thread
        changed = replace(thread, title=title, metadata=metadata)
        try:
            self.repo.describe(changed, self._clock.now_ms())
        except WriteConflict as lost:
            if lost.index is None:
                raise  # a concurrent write won: the client may try again (409)
            raise NotFound(rules.THREAD_NOT_FOUND) from lost  # deleted meanwhile
        return replace(
            thread,
            title=thread.title if title is None else title,
            metadata=thread.metadata if metadata is None else metadata,
        )

    def save(
        self, principal: Principal, thread_id: str, messages: Sequence[dict[str, Any]]
    ) -> list[str]:
        """Save messages and answer their ids (readOnly saves nothing); one background run
        per step per save, never per message."""
        stored = self._thread(principal, thread_id)
        options = self._options(stored.thread)
        if options["readOnly"] or not messages:
            return []
        now = self._clock.now_ms()
        batch = [
            Message(
                id=self._ids.new("msg_"),
                role=str(m["role"]),
                content=str(m["content"]),
                created_at=now,
                item=m.get("item"),
            )
            for m in messages
        ]
        reads = iter([stored])

        def attempt() -> int:
            # The first attempt appends after the thread as read for access; a retry reads it.
            current = next(reads, None) or self.repo.get(thread_id)
            if current is None:
                raise NotFound(rules.THREAD_NOT_FOUND)
            self.background.before_save(stored.thread, options, current.seq + len(batch), now)
            self.repo.append(stored.thread, current.seq, batch, now)
            return current.seq

        # No precondition: a save that lost the numbering race tries again within the
        # time budget (ADR 0051), never after a fixed count.
        seq = until_it_lands(attempt, lambda: Unavailable("the thread is busy; retry"))
        saved = Saved(stored.thread, options, seq, seq + len(batch), tuple(batch))
        self.background.after_save(saved)
        return [m.id for m in batch]

    def messages(self, principal: Principal, thread_id: str, limit: int) -> list[Message]:
        """The latest `limit` messages that fit one answer, oldest first."""
        return rules.newest_within(
            self.repo.latest(self._thread(principal, thread_id).thread, limit)
        )

    def remove_last(self, principal: Principal, thread_id: str) -> Message | None:
        thread = self._thread(principal, thread_id).thread

        def attempt() -> tuple[int | None, Message | None]:
            # The vector's key is its position, read before it is removed.
            return self.repo.newest_position(thread), self.repo.remove_last(thread)

        # No precondition: one that lost the latest message to another removes the next.
        position, removed = until_it_lands(
            attempt, lambda: Unavailable("the thread is busy; retry")
        )
        if removed is not None and position is not None:
            try:
                self.semantic.forget(thread, [position])
            except VectorIndexFailure as failure:
                # Removed it is: a retry would remove another message. The position's next
                # message overwrites the vector when it is indexed.
                log.warning("a removed message's vector kept: %s", failure)
        return removed

    def clear(self, principal: Principal, thread_id: str) -> None:
        thread = self._thread(principal, thread_id).thread
        self.repo.clear(thread)
        self.semantic.forget_embedded(thread)

    def working_memory(self, principal: Principal, thread_id: str) -> Notes:
        thread = self._thread(principal, thread_id).thread
        return self._notes(thread, self._options(thread))

    def _notes(self, thread: Thread, options: dict[str, Any]) -> Notes:
        working = options["workingMemory"]
        text = self.repo.notes.get(thread, working["scope"]) if working["enabled"] else None
        return rules.notes(text, options)

    def put_working_memory(self, principal: Principal, thread_id: str, content: Any) -> Notes:
        """409 when the notes are not writable, 400 when they break the version's schema."""
        thread = self._thread(principal, thread_id).thread
        options = self._options(thread)
        rules.writable_working_memory(options)
        text = rules.check_working_memory(content, options)
        self._put_notes(thread, options["workingMemory"]["scope"], text)
        return rules.notes(text, options)

    def _put_notes(self, thread: Thread, scope: str, text: str) -> None:
        """The notes written while the thread lives (404 once its delete began); a
        transaction that lost to another write on the thread tries again."""

        def attempt() -> None:
            self.repo.put_notes(thread, scope, text, self._clock.now_ms())

        try:
            until_it_lands(
                attempt,
                lambda: Unavailable("the thread is busy; retry"),
                lost=lambda conflict: conflict.condition is None,
            )
        except WriteConflict as conflict:
            if conflict.condition != THREAD_ALIVE:
                raise
            raise NotFound(rules.THREAD_NOT_FOUND) from conflict

    def context(
        self, principal: Principal, thread_id: str, message: str | None = None
    ) -> TurnContext:
        """What the agent's model gets this turn."""
        stored = self._thread(principal, thread_id)
        options = self._options(stored.thread)
        notes = self._notes(stored.thread, options).content
        system = rules.working_memory_text(options, notes)
        tools = rules.context_tools(options)
        observations: str | None = None
        if options["observationalMemory"]["enabled"]:
            observed = self.observer.context(stored, options)
            recent = shown = observed.messages
            observations = observed.observations
            system = observing.with_observations(system, observations, observed.recall)
            tools = tools + observed.tools
        else:
            recent = self.repo.latest(stored.thread, options["lastMessages"])
            shown = rules.newest_within(recent, rules.CONTEXT_MESSAGES_BUDGET)
        return TurnContext(
            messages=shown,
            recalled=self.semantic.recall(stored.thread, stored.seq, options, message, recent),
            working_memory=notes,
            observations=observations,
            system=system,
            tools=tools,
        )

    def observations(self, principal: Principal, thread_id: str) -> ShownLog:
        return self.observer.observations(self._thread(principal, thread_id).thread)

    def recall(
        self, principal: Principal, thread_id: str, query: str, limit: int | None
    ) -> list[Found]:
        stored = self._thread(principal, thread_id)
        options = self._options(stored.thread)
        return self.observer.recall(stored.thread, options, query, limit, self.semantic, stored.seq)


def _person(principal: Principal) -> tuple[str, str]:
    """The caller's organization and user: a thread belongs to a person (403 otherwise)."""
    require_tenant(principal)
    if principal.user_id is None or principal.org_id is None:
        raise Forbidden("threads belong to a person: use a user's token")
    return principal.org_id, principal.user_id
