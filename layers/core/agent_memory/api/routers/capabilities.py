"""What this deployment can run: a client asks before naming a model, not after a 400."""

from __future__ import annotations

from fastapi import APIRouter

from agent_memory.api.contracts.capabilities import CapabilitiesAnswer
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["identity"])


@router.get("/v1/capabilities")
async def capabilities(caller: CallerDep, svc: ServicesDep) -> CapabilitiesAnswer:
    """The model providers, allowed names and patterns, embedding and local models of this
    deployment, for any valid token (names only, never keys)."""
    found = await run(svc, svc.capabilities.describe, caller)
    return CapabilitiesAnswer.of(found)
