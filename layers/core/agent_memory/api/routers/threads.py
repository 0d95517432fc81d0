"""Threads: a user's conversations with an agent (API.md, "Threads"; seed 003)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from agent_memory.api.contracts.base import Executions
from agent_memory.api.contracts.threads import (
    ContextAnswer,
    ContextRequest,
    CreateThread,
    DeletedThread,
    MessageIds,
    MessagesAnswer,
    ObservationLog,
    RecallAnswer,
    RecallRequest,
    RemovedMessage,
    SaveMessages,
    ThreadAnswer,
    ThreadsAnswer,
    UpdateThread,
    WorkingMemoryIn,
    WorkingMemoryOut,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["threads"])
ID = Query(min_length=1, max_length=200)


@router.post("/v1/threads", status_code=201)
async def create_thread(body: CreateThread, caller: CallerDep, svc: ServicesDep) -> ThreadAnswer:
    """A new thread of the caller (its resource) with an agent the caller may read."""
    thread = await run(
        svc,
        svc.threads.create,
        caller,
        body.agentId,
        body.resourceId,
        title=body.title,
        metadata=body.metadata,
    )
    return ThreadAnswer.of(thread)


@router.get("/v1/threads")
async def list_threads(
    caller: CallerDep,
    svc: ServicesDep,
    agentId: Annotated[str | None, ID] = None,
    resourceId: Annotated[str | None, ID] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="threads per page")] = 100,
    starting_after: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="the id of the last thread of the page before: one of your threads "
            "of the agent listed (else 404)",
        ),
    ] = None,
) -> ThreadsAnswer:
    """The caller's threads newest first, with titles, `limit` (1..100, default 100) a page;
    `has_more` says another page follows from `starting_after` = the last id."""
    page = await run(
        svc,
        svc.threads.threads_of,
        caller,
        agentId,
        resourceId,
        limit=limit,
        starting_after=starting_after,
    )
    return ThreadsAnswer.of(page)


@router.get("/v1/threads/{threadId}")
async def read_thread(threadId: str, caller: CallerDep, svc: ServicesDep) -> ThreadAnswer:
    thread = await run(svc, svc.threads.get, caller, threadId)
    return ThreadAnswer.of(thread)


@router.patch("/v1/threads/{threadId}")
async def update_thread(
    threadId: str, body: UpdateThread, caller: CallerDep, svc: ServicesDep
) -> ThreadAnswer:
    """Sets the title and/or metadata sent; the thread's resource alone (others 404)."""
    thread = await run(svc, svc.threads.describe, caller, threadId, body.title, body.metadata)
    return ThreadAnswer.of(thread)


@router.delete("/v1/threads/{threadId}")
async def delete_thread(threadId: str, caller: CallerDep, svc: ServicesDep) -> DeletedThread:
    """The thread with its messages, working memory, observations and recall vectors; its
    resource alone (others 404). Idempotent for its resource: a call cut short is finished
    by the next, and a thread already gone is 404."""
    erased = await run(svc, svc.erasure.delete_thread, caller, threadId)
    return DeletedThread(id=threadId, messages=erased.messages)


@router.get("/v1/threads/{threadId}/learning")
async def thread_learning(threadId: str, caller: CallerDep, svc: ServicesDep) -> Executions:
    """The background work on the thread (its title, ...): executions newest first, each
    with its `kind` (`thread-title`, ...); a failed one says why."""
    runs = await run(svc, svc.threads.executions, caller, threadId)
    return Executions.of(runs)


@router.post("/v1/threads/{threadId}/messages")
async def save_messages(
    threadId: str, body: SaveMessages, caller: CallerDep, svc: ServicesDep
) -> MessageIds:
    """Save messages in order; with the active version's readOnly nothing is saved."""
    messages = [m.model_dump(exclude_none=True) for m in body.messages]
    ids = await run(svc, svc.threads.save, caller, threadId, messages)
    return MessageIds(messageIds=ids)


@router.get("/v1/threads/{threadId}/messages")
async def list_messages(
    threadId: str,
    caller: CallerDep,
    svc: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> MessagesAnswer:
    """The latest `limit` messages in chronological order (1,000 at most)."""
    messages = await run(svc, svc.threads.messages, caller, threadId, limit)
    return MessagesAnswer.of(messages)


@router.delete("/v1/threads/{threadId}/messages/last")
async def remove_last_message(threadId: str, caller: CallerDep, svc: ServicesDep) -> RemovedMessage:
    """Remove and answer the latest message (null when there is none)."""
    message = await run(svc, svc.threads.remove_last, caller, threadId)
    return RemovedMessage.of(message)


@router.delete("/v1/threads/{threadId}/messages", status_code=204)
async def clear_messages(threadId: str, caller: CallerDep, svc: ServicesDep) -> Response:
    """Clear the thread's messages; its working memory stays."""
    await run(svc, svc.threads.clear, caller, threadId)
    return Response(status_code=204)


@router.get("/v1/threads/{threadId}/working-memory")
async def read_working_memory(
    threadId: str, caller: CallerDep, svc: ServicesDep
) -> WorkingMemoryOut:
    notes = await run(svc, svc.threads.working_memory, caller, threadId)
    return WorkingMemoryOut.of(notes)


@router.put("/v1/threads/{threadId}/working-memory")
async def replace_working_memory(
    threadId: str, body: WorkingMemoryIn, caller: CallerDep, svc: ServicesDep
) -> WorkingMemoryOut:
    """Replace the notes (validated against the version's schema when it sets one); 409
    ThreadConflict when the observer manages them, they are off, or the version is
    readOnly."""
    notes = await run(svc, svc.threads.put_working_memory, caller, threadId, body.content)
    return WorkingMemoryOut.of(notes)


@router.post("/v1/threads/{threadId}/context")
async def turn_context(
    threadId: str, caller: CallerDep, svc: ServicesDep, body: ContextRequest | None = None
) -> ContextAnswer:
    """What the agent's model gets this turn: the last N messages (the version's
    lastMessages), working memory, the memory's system text and tools."""
    message = body.message.content if body is not None and body.message is not None else None
    context = await run(svc, svc.threads.context, caller, threadId, message)
    return ContextAnswer.of(context)


@router.get("/v1/threads/{threadId}/observations")
async def read_observations(threadId: str, caller: CallerDep, svc: ServicesDep) -> ObservationLog:
    """The thread's observation log: every observation made, buffered or active."""
    return ObservationLog.of(await run(svc, svc.threads.observations, caller, threadId))


@router.post("/v1/threads/{threadId}/recall")
async def recall_messages(
    threadId: str, body: RecallRequest, caller: CallerDep, svc: ServicesDep
) -> RecallAnswer:
    """The `recall` tool of `observationalMemory.retrieval`: the user's messages that
    match `query` best first; 409 ThreadConflict when retrieval is off."""
    found = await run(svc, svc.threads.recall, caller, threadId, body.query, body.limit)
    return RecallAnswer.of(found)
