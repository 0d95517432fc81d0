"""The lines of a person's export: each object read by its own read route, as the person.

The route functions themselves are called (with the caller the export authenticated), so a
line is what that route answers and the access checks are that route's own: an object, an
entry or a source the person may not read is not there. A read that answers 404 or 403
(an object gone meanwhile, a bot the person may not read) leaves its lines out.

The routers load here, at the first export, not with the identity family's cold start.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from agent_memory.api.contracts.export import ExportHeader
from agent_memory.api.deps import run
from agent_memory.domain.errors import Forbidden, NotFound
from agent_memory.domain.export import Header
from agent_memory.domain.identity import Principal
from agent_memory.service.registry import Services

Line = dict[str, Any]
Lines = AsyncIterator[Line]
# Pages of the change logs and the event feed: each route's own largest page.
LOG_PAGE = 1000
EVENT_PAGE = 100


def dumped(answer: BaseModel, *, exclude_none: bool = False) -> dict[str, Any]:
    """The answer as its route serializes it."""
    return answer.model_dump(mode="json", by_alias=True, exclude_none=exclude_none)


def line(kind: str, fields: dict[str, Any], **parent: str) -> Line:
    return {"type": kind, **parent, **fields}


async def export_lines(svc: Services, caller: Principal, first: Header) -> AsyncIterator[bytes]:
    """The header `first`, every line, then `{"type": "end", "lines": n}` (n counts the
    lines before it): an export cut short by a failure has no end line."""
    yield _encoded(dumped(ExportHeader.of(first)))
    count = 1
    async for each in _body(svc, caller):
        yield _encoded(each)
        count += 1
    yield _encoded({"type": "end", "lines": count})


async def _body(svc: Services, caller: Principal) -> Lines:
    walkers: dict[str, Callable[[Services, Principal, str], Lines]] = {
        "agent": _agent,
        "session": _session,
        "thread": _thread,
        "chat": _chat,
        "bot": _bot,
    }
    found = iter(await run(svc, svc.erasure.exported, caller))
    while (next_found := await run(svc, next, found, None)) is not None:
        async for each in _guarded(walkers[next_found.kind](svc, caller, next_found.id)):
            yield each
    async for each in _guarded(_agent_memories(svc, caller)):
        yield each
    async for each in _guarded(_events(svc, caller)):
        yield each


def _encoded(each: Line) -> bytes:
    return json.dumps(each, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def _guarded(lines: Lines) -> Lines:
    """An object the person may not read (any longer) has no lines."""
    try:
        async for each in lines:
            yield each
    except (NotFound, Forbidden):
        return


async def _agent(svc: Services, caller: Principal, agent_id: str) -> Lines:
    from agent_memory.api.routers import agent_memory, agent_versions, agents

    answer = await agents.get_agent(agent_id, caller, svc)
    yield line("agent", dumped(answer.agent))
    draft = await agent_versions.read_draft(agent_id, caller, svc)
    yield line("agentDraft", dumped(draft), agentId=agent_id)
    before: int | None = None
    while True:  # newest first, 100 a page: `before` the last number shown
        versions = await agent_versions.list_versions(agent_id, caller, svc, before=before)
        for version in versions.versions:
            yield line("agentVersion", dumped(version), agentId=agent_id)
        if not versions.versions or versions.versions[-1].number <= 1:
            break
        before = versions.versions[-1].number
    memory = await agent_memory.read_agent_memory(agent_id, caller, svc)
    yield line("agentMemory", dumped(memory), agentId=agent_id)
    async for change in _log(agent_memory.agent_memory_log, agent_id, caller, svc):
        yield line("agentMemoryChange", change, agentId=agent_id)


async def _log(
    route: Callable[..., Awaitable[Any]], object_id: str, caller: Principal, svc: Services
) -> AsyncIterator[dict[str, Any]]:
    """A change log newest first, page after page (`before` the last version shown)."""
    before: int | None = None
    while True:
        page = await route(object_id, caller, svc, limit=LOG_PAGE, before=before)
        for change in page.changes:
            yield change.model_dump(mode="json", by_alias=True, exclude_none=True)
        if len(page.changes) < LOG_PAGE or page.changes[-1].version <= 1:
            return
        before = page.changes[-1].version


async def _session(svc: Services, caller: Principal, session_id: str) -> Lines:
    from agent_memory.api.routers import sessions

    answer = await sessions.get_session(session_id, caller, svc)
    yield line("session", dumped(answer.session))
    after: str | None = None
    while True:
        page = await sessions.list_items(session_id, caller, svc, limit=100, starting_after=after)
        for item in page.data:
            yield line("sessionItem", dumped(item), sessionId=session_id)
        if not page.has_more or not page.data:
            break
        after = page.data[-1].id
    memory = await sessions.read_memory(session_id, caller, svc)
    yield line("sessionMemory", dumped(memory), sessionId=session_id)


async def _thread(svc: Services, caller: Principal, thread_id: str) -> Lines:
    from agent_memory.api.routers import threads

    answer = await threads.read_thread(thread_id, caller, svc)
    yield line("thread", dumped(answer.thread))
    messages = await threads.list_messages(thread_id, caller, svc, limit=1000)
    for message in messages.messages:
        yield line("threadMessage", dumped(message), threadId=thread_id)
    notes = await threads.read_working_memory(thread_id, caller, svc)
    yield line("workingMemory", dumped(notes), threadId=thread_id)
    observations = await threads.read_observations(thread_id, caller, svc)
    yield line("observations", dumped(observations), threadId=thread_id)


async def _chat(svc: Services, caller: Principal, chat_id: str) -> Lines:
    from agent_memory.api.routers import chats

    turns: list[str] = []
    after: str | None = None
    while True:
        page = await chats.chat_items(chat_id, caller, svc, after=after)
        for item in page.items:
            if item.turnId not in turns:
                turns.append(item.turnId)
            yield line("chatItem", dumped(item), chatId=chat_id)
        if not page.items:
            break
        after = page.items[-1].id
    for turn_id in turns:
        turn = await chats.get_turn(chat_id, turn_id, caller, svc)
        yield line("chatTurn", dumped(turn.turn), chatId=chat_id)
    confessions = await chats.confessions(chat_id, caller, svc)
    for confession in confessions.confessions:
        yield line("confession", dumped(confession), chatId=chat_id)
    enrichments = await chats.enrichments(chat_id, caller, svc)
    for enrichment in enrichments.enrichments:
        yield line("enrichment", dumped(enrichment), chatId=chat_id)


async def _bot(svc: Services, caller: Principal, bot_id: str) -> Lines:
    """The entries for the person, with the sources they may see (the route's own rules)."""
    from agent_memory.api.routers import bots

    memory = await bots.read_bot_memory(bot_id, caller, svc)
    for entry in memory.entries:
        yield line("botEntry", dumped(entry), botId=bot_id)
    async for change in _log(bots.bot_memory_log, bot_id, caller, svc):
        yield line("botMemoryChange", change, botId=bot_id)


async def _agent_memories(svc: Services, caller: Principal) -> Lines:
    """The organization's agent_memories about the person (entity `actor` with their id),
    then the person's own namespaced ones (a LangGraph store's items: ADR 0082)."""
    from agent_memory.api.routers import memory_objects
    from agent_memory.domain.bounds import MAX_MEMORY_PAGE

    given: set[str] = set()
    for entity in (caller.user_id, None):
        after: str | None = None
        while True:
            page = await memory_objects.list_agent_memories(
                caller, svc, limit=MAX_MEMORY_PAGE, starting_after=after, entity=entity
            )
            for memory in page.data:
                # The entity filter matches ids alone: an account could share the person's
                # id; a plain list shows the caller's own namespaced memories, no others'.
                about = memory.entity is not None and memory.entity.type == "actor"
                mine = entity is None and memory.namespace is not None
                if (about if entity is not None else mine) and memory.id not in given:
                    given.add(memory.id)
                    yield line("agentMemoryObject" if about else "agentMemoryItem", dumped(memory))
            if not page.has_more or not page.data:
                break
            after = page.data[-1].id


async def _events(svc: Services, caller: Principal) -> Lines:
    """The change-log lines of the organization the person may see, oldest first."""
    from agent_memory.api.routers import events

    after: str | None = None
    while True:
        page = await events.list_events(caller, svc, after=after, limit=EVENT_PAGE)
        for event in page.events:
            # Under its own key: an event's `type` is the change's, not the line's kind.
            yield line("event", {"event": dumped(event, exclude_none=True)})
        if page.next == after:
            return
        after = page.next
