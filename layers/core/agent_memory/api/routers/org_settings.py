"""Organization settings (API.md): defaults for every session and agent of the organization."""

from __future__ import annotations

from fastapi import APIRouter

from agent_memory.api.contracts.identity import OrganizationSettings, SettingsPatch
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(prefix="/v1/organizations", tags=["organizations"])


@router.get("/{orgId}/settings")
async def get_settings(orgId: str, caller: CallerDep, svc: ServicesDep) -> OrganizationSettings:
    settings = await run(svc, svc.org_settings.get, caller, orgId)
    return OrganizationSettings.model_validate(settings)


@router.patch("/{orgId}/settings")
async def patch_settings(
    orgId: str, body: SettingsPatch, caller: CallerDep, svc: ServicesDep
) -> OrganizationSettings:
    """A value sets, `null` resets to the default, a missing field keeps."""
    patch = body.model_dump(exclude_unset=True)
    settings = await run(svc, svc.org_settings.patch, caller, orgId, patch)
    return OrganizationSettings.model_validate(settings)
