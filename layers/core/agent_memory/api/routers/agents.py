"""Agents (API.md, "Agents and sessions")."""

from __future__ import annotations

from fastapi import APIRouter

from agent_memory.api.contracts.sessions import AgentAnswer, AgentOut, CreateAgent
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(prefix="/v1/agents", tags=["agents"])


@router.post("", status_code=201)
async def create_agent(body: CreateAgent, caller: CallerDep, svc: ServicesDep) -> AgentAnswer:
    """A new Agent owned by the caller, shared with `members` of the same organization."""
    agent = await run(svc, svc.agents.create, caller, body.name, body.members)
    return AgentAnswer(agent=AgentOut.of(agent))


@router.get("/{agentId}")
async def get_agent(agentId: str, caller: CallerDep, svc: ServicesDep) -> AgentAnswer:
    agent = await run(svc, svc.agents.get, caller, agentId)
    return AgentAnswer(agent=AgentOut.of(agent))
