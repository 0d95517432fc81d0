"""Agents (API.md, "Agents and sessions"): create, list, read, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_memory.api.contracts.agents import (
    AgentAnswer,
    AgentList,
    CreateAgent,
    DeletedAgent,
)
from agent_memory.api.contracts.base import Cursor, PageLimit
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(prefix="/v1/agents", tags=["agents"])


@router.post("", status_code=201)
async def create_agent(body: CreateAgent, caller: CallerDep, svc: ServicesDep) -> AgentAnswer:
    """A new Agent owned by the caller, shared with `members` of the same organization."""
    agent = await run(svc, svc.agents.create, caller, body.name, body.members)
    return AgentAnswer.of(agent)


@router.get("")
async def list_agents(
    caller: CallerDep,
    svc: ServicesDep,
    limit: PageLimit = 10,
    starting_after: Annotated[Cursor | None, Query(description="An agent id (a position)")] = None,
) -> AgentList:
    """The agents of the caller's organization the caller owns or is a member of (an
    organization admin: all of them), newest first."""
    page = await run(
        svc, svc.agents.list_agents, caller, limit=limit, starting_after=starting_after
    )
    return AgentList.of(page)


@router.get("/{agentId}")
async def get_agent(agentId: str, caller: CallerDep, svc: ServicesDep) -> AgentAnswer:
    agent = await run(svc, svc.agents.get, caller, agentId)
    return AgentAnswer.of(agent)


@router.delete("/{agentId}")
async def delete_agent(agentId: str, caller: CallerDep, svc: ServicesDep) -> DeletedAgent:
    """Delete the agent with its memory, versions, executions, every session of it
    (items, entries, executions, saved calls) and every thread of it (messages,
    observations, working memory, recall vectors). Its owner or an organization admin;
    members 403. Resumable: a call cut short is finished by the next one."""
    erased = await run(svc, svc.erasure.delete_agent, caller, agentId)
    return DeletedAgent(id=agentId, sessions=erased.sessions, threads=erased.threads)
