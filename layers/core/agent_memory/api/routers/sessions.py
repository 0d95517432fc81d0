"""Sessions, session memory and the promotion of a subagent Session: every `/v1/sessions` route."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_memory.api.contracts.agents import AgentAnswer
from agent_memory.api.contracts.base import ITEM_ID_PATTERN, Cursor, Executions, PageLimit
from agent_memory.api.contracts.memory_text import MemoryText
from agent_memory.api.contracts.sessions import (
    CreateSession,
    DeletedSession,
    ForkSession,
    MemoryCommand,
    PostTurn,
    Promote,
    SessionAnswer,
    SessionItemList,
    SessionList,
    SessionMemory,
    TurnAnswer,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
# Its own router keeps agent memory's tag and place; the sessions family serves the path.
promote = APIRouter(tags=["agent memory"])


@router.post("", status_code=201)
async def create_session(body: CreateSession, caller: CallerDep, svc: ServicesDep) -> SessionAnswer:
    """`model` left out: the deployment's default model; `null`: a Session without a model."""
    # Loaded with the services (`svc`), not by this module: a cold start imports no service.
    from agent_memory.service.sessions import Default

    model = body.model if "model" in body.model_fields_set else Default.MODEL
    session = await run(svc, svc.sessions.create, caller, body.agentId, model=model, kind=body.kind)
    return SessionAnswer.of(session)


@router.get("")
async def list_sessions(
    agentId: Annotated[str, Query(min_length=1, max_length=100)],
    caller: CallerDep,
    svc: ServicesDep,
    limit: PageLimit = 10,
    starting_after: Annotated[Cursor | None, Query(description="A session id (a position)")] = None,
) -> SessionList:
    """The caller's sessions of the agent (an organization admin: everyone's), newest
    first. Sessions are private: members of a shared agent see only their own."""
    page = await run(
        svc,
        svc.sessions.list_sessions,
        caller,
        agentId,
        limit=limit,
        starting_after=starting_after,
    )
    return SessionList.of(page)


@router.get("/{sessionId}")
async def get_session(sessionId: str, caller: CallerDep, svc: ServicesDep) -> SessionAnswer:
    return SessionAnswer.of(await run(svc, svc.sessions.get, caller, sessionId))


@router.delete("/{sessionId}")
async def delete_session(sessionId: str, caller: CallerDep, svc: ServicesDep) -> DeletedSession:
    """Delete the session: items, entries, executions and saved calls. Agent memory learned
    from it stays until forgotten. Its owner or an organization admin. Resumable: a call
    cut short is finished by the next one; after one that finished, 404."""
    erased = await run(svc, svc.erasure.delete_session, caller, sessionId)
    return DeletedSession(id=sessionId, items=erased.items)


@router.get("/{sessionId}/items")
async def list_items(
    sessionId: str,
    caller: CallerDep,
    svc: ServicesDep,
    limit: PageLimit = 10,
    starting_after: Annotated[
        str | None, Query(pattern=ITEM_ID_PATTERN, max_length=20, description="An item id")
    ] = None,
) -> SessionItemList:
    """The session's history in order (oldest first, as it was said), edit notices
    included."""
    page = await run(
        svc, svc.sessions.items, caller, sessionId, limit=limit, starting_after=starting_after
    )
    return SessionItemList.of(page)


@router.post("/{sessionId}/turns")
async def post_turn(
    sessionId: str, body: PostTurn, caller: CallerDep, svc: ServicesDep
) -> TurnAnswer:
    """Append a completed Turn's items; consolidation starts when `generate` is on."""
    # Loaded with the services (`svc`), not by this module: a cold start loads no session rule.
    from agent_memory.domain.sessions import NewItem

    items = [NewItem(i.role, i.content, i.app) for i in body.items]
    result = await run(
        svc,
        svc.sessions.turn,
        caller,
        sessionId,
        items,
        model=body.model,
        expected=body.expected,
        revision=body.revision,
    )
    return TurnAnswer.of(result)


@router.post("/{sessionId}/fork", status_code=201)
async def fork_session(
    sessionId: str, caller: CallerDep, svc: ServicesDep, body: ForkSession | None = None
) -> SessionAnswer:
    """A new Session with a copy of the history, memory and overrides."""
    return SessionAnswer.of(await run(svc, svc.sessions.fork, caller, sessionId))


@router.get("/{sessionId}/memory")
async def read_memory(sessionId: str, caller: CallerDep, svc: ServicesDep) -> SessionMemory:
    return SessionMemory.of(await run(svc, svc.session_memory.read, caller, sessionId))


@router.post("/{sessionId}/memory")
async def change_memory(
    sessionId: str, body: MemoryCommand, caller: CallerDep, svc: ServicesDep
) -> SessionAnswer:
    """Remember, Forget, Configure or Refresh, against the `expected` head and `revision`."""
    session = await run(
        svc,
        svc.session_memory.command,
        caller,
        sessionId,
        body.expected,
        body.revision,
        body.command.to_domain(),
    )
    return SessionAnswer.of(session)


@router.get("/{sessionId}/memory/text")
async def memory_text(sessionId: str, caller: CallerDep, svc: ServicesDep) -> MemoryText:
    text = await run(svc, svc.session_memory.text, caller, sessionId)
    return MemoryText.of(text)


@router.get("/{sessionId}/learning")
async def learning(sessionId: str, caller: CallerDep, svc: ServicesDep) -> Executions:
    runs = await run(svc, svc.session_memory.executions, caller, sessionId)
    return Executions.of(runs)


@promote.post("/v1/sessions/{sessionId}/promote", status_code=201)
async def promote_session(
    sessionId: str, caller: CallerDep, svc: ServicesDep, body: Promote | None = None
) -> AgentAnswer:
    """A new agent whose memory is the subagent session's lasting, active entries."""
    name = body.name if body is not None else None
    agent = await run(svc, svc.agent_memory.promote, caller, sessionId, name)
    return AgentAnswer.of(agent)
