"""Agent memory, its log, text and learning (API.md, "Agents and sessions")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_memory.api.contracts.agent_memory import (
    AgentMemoryAnswer,
    AgentMemoryCommand,
    MemoryLog,
)
from agent_memory.api.contracts.base import Executions
from agent_memory.api.contracts.memory_text import MemoryText
from agent_memory.api.deps import CallerDep, ServicesDep, run
from agent_memory.domain.bounds import DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT

router = APIRouter(tags=["agent memory"])


@router.get("/v1/agents/{agentId}/memory")
async def read_agent_memory(agentId: str, caller: CallerDep, svc: ServicesDep) -> AgentMemoryAnswer:
    """Every entry (active and retracted) and the memory's version."""
    return AgentMemoryAnswer.of(await run(svc, svc.agent_memory.read, caller, agentId))


@router.post("/v1/agents/{agentId}/memory")
async def change_agent_memory(
    agentId: str, body: AgentMemoryCommand, caller: CallerDep, svc: ServicesDep
) -> AgentMemoryAnswer:
    """Remember or Forget at version `expected` (409 VersionConflict otherwise)."""
    answer = await run(
        svc, svc.agent_memory.command, caller, agentId, body.expected, body.command.to_domain()
    )
    return AgentMemoryAnswer.of(answer)


@router.get("/v1/agents/{agentId}/memory/log", response_model_exclude_none=True)
async def agent_memory_log(
    agentId: str,
    caller: CallerDep,
    svc: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_LIMIT)] = DEFAULT_LOG_LIMIT,
    before: Annotated[int | None, Query(ge=1)] = None,
) -> MemoryLog:
    """Changes newest first; `before` (a version) pages back to older ones."""
    changes = await run(svc, svc.agent_memory.log, caller, agentId, limit=limit, before=before)
    return MemoryLog.of(changes)


@router.get("/v1/agents/{agentId}/memory/text")
async def agent_memory_text(agentId: str, caller: CallerDep, svc: ServicesDep) -> MemoryText:
    text = await run(svc, svc.agent_memory.text, caller, agentId)
    return MemoryText.of(text)


@router.get("/v1/agents/{agentId}/learning")
async def agent_learning(agentId: str, caller: CallerDep, svc: ServicesDep) -> Executions:
    """One execution per completed turn of the agent's sessions, newest first."""
    return Executions.of(await run(svc, svc.agent_memory.executions, caller, agentId))
