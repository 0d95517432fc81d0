"""Agent versions: the draft, publish, the versions and activation (seed 003)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_memory.api.contracts.agent_versions import (
    ActiveAnswer,
    DraftAnswer,
    EmptyBody,
    PatchDraft,
    VersionAnswer,
    VersionOut,
    VersionsAnswer,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["agent versions"])


@router.get("/v1/agents/{agentId}/draft")
async def read_draft(agentId: str, caller: CallerDep, svc: ServicesDep) -> DraftAnswer:
    """The draft's `memory` block as saved, and `effective` with every default filled in."""
    return DraftAnswer.of(await run(svc, svc.agent_versions.draft, caller, agentId))


@router.patch("/v1/agents/{agentId}/draft")
async def edit_draft(
    agentId: str, body: PatchDraft, caller: CallerDep, svc: ServicesDep
) -> DraftAnswer:
    """Replace the `memory` block sent; `"memory": null` restores the platform defaults."""
    if "memory" in body.model_fields_set:
        draft = await run(svc, svc.agent_versions.edit_draft, caller, agentId, body.memory)
    else:
        draft = await run(svc, svc.agent_versions.draft, caller, agentId)
    return DraftAnswer.of(draft)


@router.post("/v1/agents/{agentId}/publish", status_code=201)
async def publish(
    agentId: str, caller: CallerDep, svc: ServicesDep, body: EmptyBody | None = None
) -> VersionAnswer:
    """A new version from the draft, numbered after the newest."""
    version = await run(svc, svc.agent_versions.publish, caller, agentId)
    return VersionAnswer(version=VersionOut.of(version))


@router.get("/v1/agents/{agentId}/versions")
async def list_versions(
    agentId: str,
    caller: CallerDep,
    svc: ServicesDep,
    before: Annotated[int | None, Query(ge=1)] = None,
) -> VersionsAnswer:
    """Published versions newest first (100 at most; `before` pages back), and the active."""
    page = await run(svc, svc.agent_versions.versions, caller, agentId, before=before)
    return VersionsAnswer.of(page)


@router.post("/v1/agents/{agentId}/versions/{n}/activate")
async def activate(
    agentId: str,
    n: int,
    caller: CallerDep,
    svc: ServicesDep,
    body: EmptyBody | None = None,
) -> ActiveAnswer:
    """Threads follow version `n` from their next call."""
    await run(svc, svc.agent_versions.activate, caller, agentId, n)
    return ActiveAnswer(active=n)
