"""Who the bearer token is (`GET /v1/me`): what a client or the console shows after sign-in."""

from __future__ import annotations

from fastapi import APIRouter

from agent_memory.api.contracts.me import CallerOut, MeAnswer
from agent_memory.api.deps import CallerDep

router = APIRouter(tags=["identity"])


@router.get("/v1/me")
async def me(caller: CallerDep) -> MeAnswer:
    """The caller's user id, organization and role; the admin token is the service admin."""
    return MeAnswer(
        user=CallerOut(id=caller.user_id, organizationId=caller.org_id, role=caller.role)
    )
