"""Threads (seed 003): a user's conversations with an agent, their messages, titles,
working memory and the turn context. Every call follows the agent's active version."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from agent_memory.domain import threads as rules
from agent_memory.domain.access import authorize, require_tenant
from agent_memory.domain.agents import Agent
from agent_memory.domain.errors import Forbidden, NotFound, Unavailable, WriteConflict
from agent_memory.domain.identity import Principal
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.title import TITLE, TitleInput
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.threads import StoredThread, ThreadRepository
from agent_memory.ports import Clock, Ids, ModelCatalog, ModelFailure
from agent_memory.service.agent_versions import AgentVersionService

# A save retries when another save of the same thread numbered its messages first.
SAVE_ATTEMPTS = 3
# The first user message is among the thread's first few.
TITLE_LOOKAHEAD = 10
DEFAULT_TITLE_MODEL = "local/rules"


class ThreadService:
    def __init__(
        self,
        repo: ThreadRepository,
        versions: AgentVersionService,
        models: ModelCatalog,
        clock: Clock,
        ids: Ids,
        *,
        title_model: str | None = None,
    ) -> None:
        self._repo = repo
        # Public for benchmarks that seed threads as the service seals them.
        self.repo = repo
        self._versions = versions
        self._models = models
        self._clock = clock
        self._ids = ids
        self._title_model = title_model or DEFAULT_TITLE_MODEL

    # -- loading ---------------------------------------------------------------------------

    def _thread(self, principal: Principal, thread_id: str) -> StoredThread:
        require_tenant(principal)
        stored = self._repo.get(thread_id)
        if stored is None:
            raise NotFound(rules.THREAD_NOT_FOUND)
        rules.require_resource(principal, stored.thread)
        return stored

    def _options(self, thread: Thread) -> dict[str, Any]:
        """The effective options of the agent's active version now (defaults before any)."""
        _, options = self._versions.active_options(thread.agent_id)
        return options

    # -- threads ---------------------------------------------------------------------------

    def create(self, principal: Principal, agent_id: str, resource_id: str | None) -> Thread:
        """A new thread of the caller with an agent the caller may read."""
        require_tenant(principal)
        if principal.user_id is None or principal.org_id is None:
            raise Forbidden("threads belong to a person: use a user's token")
        if resource_id is not None and resource_id != principal.user_id:
            raise Forbidden("a thread's resource is the caller", ["resourceId"])
        agent = self._agent(principal, agent_id)
        thread = Thread(
            id=self._ids.new("th_"),
            org_id=agent.org_id,
            agent_id=agent.id,
            resource_id=principal.user_id,
            title=None,
            created_at=self._clock.now_ms(),
        )
        self._repo.create(thread)
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
        self, principal: Principal, agent_id: str | None, resource_id: str | None
    ) -> list[Thread]:
        """The caller's threads, newest first (with `agent_id`, of that agent)."""
        require_tenant(principal)
        if principal.user_id is None:
            raise Forbidden("threads belong to a person: use a user's token")
        if resource_id is not None and resource_id != principal.user_id:
            raise Forbidden("you may list your own threads only", ["resourceId"])
        return self._repo.of_user(principal.user_id, agent_id)

    def get(self, principal: Principal, thread_id: str) -> Thread:
        return self._thread(principal, thread_id).thread

    # -- messages --------------------------------------------------------------------------

    def save(
        self, principal: Principal, thread_id: str, messages: Sequence[dict[str, Any]]
    ) -> list[str]:
        """Save messages in order and answer their ids; with readOnly nothing is saved.
        The first answer after the first user message names the thread (generateTitle)."""
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
        seq = stored.seq
        for attempt in range(SAVE_ATTEMPTS):
            try:
                self._repo.append(stored.thread, seq, batch, now)
                break
            except WriteConflict as error:
                if attempt == SAVE_ATTEMPTS - 1:
                    raise Unavailable("the thread is busy; retry") from error
                again = self._repo.get(thread_id)
                if again is None:
                    raise NotFound(rules.THREAD_NOT_FOUND) from error
                seq = again.seq
        self._title(stored.thread, batch, options)
        return [m.id for m in batch]

    def _title(self, thread: Thread, batch: Sequence[Message], options: dict[str, Any]) -> None:
        """Name an untitled thread once an answer is saved (synchronously, after the save:
        docs/decisions.md, "Threads")."""
        title = options["generateTitle"]
        if not title["enabled"] or thread.title is not None:
            return
        if not any(m.role == "assistant" for m in batch):
            return
        first = rules.first_user_message(self._repo.first(thread, TITLE_LOOKAHEAD))
        if first is None:
            return
        asked = TitleInput(first.content, title["instructions"])
        model = self._models.resolve(title["model"] or self._title_model)
        text = TITLE.local_answer(asked).title
        if model is not None:
            # On a failure, the local title: a thread list is never blank.
            with contextlib.suppress(ModelFailure, InvalidModelOutput):
                text = TITLE.parse(model.propose(TITLE.request(asked)).text, asked).title
        self._repo.set_title(thread, text, self._clock.now_ms())

    def messages(self, principal: Principal, thread_id: str, limit: int) -> list[Message]:
        """The latest `limit` messages, in chronological order (the newest that fit one
        answer)."""
        return rules.newest_within(
            self._repo.latest(self._thread(principal, thread_id).thread, limit)
        )

    def remove_last(self, principal: Principal, thread_id: str) -> Message | None:
        return self._repo.remove_last(self._thread(principal, thread_id).thread)

    def clear(self, principal: Principal, thread_id: str) -> None:
        self._repo.clear(self._thread(principal, thread_id).thread)

    # -- working memory --------------------------------------------------------------------

    def working_memory(self, principal: Principal, thread_id: str) -> dict[str, Any]:
        thread = self._thread(principal, thread_id).thread
        options = self._options(thread)
        return self._working_view(thread, options)

    def _working_view(self, thread: Thread, options: dict[str, Any]) -> dict[str, Any]:
        working = options["workingMemory"]
        text = self._repo.working_memory(thread, working["scope"]) if working["enabled"] else None
        return {
            "scope": working["scope"],
            "format": rules.working_memory_format(options),
            "content": rules.working_memory_content(text, options),
        }

    def put_working_memory(
        self, principal: Principal, thread_id: str, content: Any
    ) -> dict[str, Any]:
        """Replace the notes; 409 ThreadConflict when they are not writable, 400 naming the
        path when they break the version's schema."""
        thread = self._thread(principal, thread_id).thread
        options = self._options(thread)
        rules.writable_working_memory(options)
        text = rules.check_working_memory(content, options)
        scope = options["workingMemory"]["scope"]
        self._repo.put_working_memory(thread, scope, text, self._clock.now_ms())
        return {
            "scope": scope,
            "format": rules.working_memory_format(options),
            "content": rules.working_memory_content(text, options),
        }

    # -- the turn context ------------------------------------------------------------------

    def context(self, principal: Principal, thread_id: str) -> dict[str, Any]:
        """What the agent's model gets this turn: the last N messages, the working memory,
        the memory's system text and tools. Recall and observations come with issue 16."""
        thread = self._thread(principal, thread_id).thread
        options = self._options(thread)
        latest = self._repo.latest(thread, options["lastMessages"])
        messages = rules.newest_within(latest, rules.CONTEXT_MESSAGES_BUDGET)
        notes = self._working_view(thread, options)["content"]
        return {
            "messages": [m.view() for m in messages],
            "recalled": [],
            "workingMemory": notes,
            "observations": None,
            "system": rules.system_text(options, notes),
            "tools": rules.context_tools(options),
        }
