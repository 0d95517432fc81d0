"""Administration (API.md): organizations, their settings, users, tokens."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from agent_memory.api.contracts.base import Cursor, PageLimit
from agent_memory.api.contracts.identity import (
    AddedUser,
    AddUser,
    CreatedOrganization,
    CreatedServiceKey,
    CreatedUser,
    CreateOrganization,
    CreateServiceKey,
    CreateUser,
    DeletedOrganization,
    ErasedUser,
    IssuedToken,
    IssueToken,
    OrganizationOut,
    Organizations,
    OrganizationSettings,
    OrgUsers,
    RenameUser,
    ServiceKeys,
    SettingsPatch,
    UserOut,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(prefix="/v1/admin", tags=["admin"])
# Routes of one organization's administrators (the service admin may use them too).
organizations = APIRouter(prefix="/v1/organizations", tags=["organizations"])


@router.post("/organizations", status_code=201)
async def create_organization(
    body: CreateOrganization, caller: CallerDep, svc: ServicesDep
) -> CreatedOrganization:
    org = await run(svc, svc.identity.create_org, caller, body.id, body.name)
    return CreatedOrganization(id=org.id, name=org.name)


@router.get("/organizations")
async def list_organizations(
    caller: CallerDep,
    svc: ServicesDep,
    limit: PageLimit = 100,
    after: Annotated[Cursor | None, Query(description="The last organization id of a page")] = None,
) -> Organizations:
    """Every organization in id order: ids, names, creation and how many people; no content."""
    orgs, more = await run(svc, svc.identity.organizations, caller, after, limit)
    return Organizations(
        organizations=[OrganizationOut.of(o) for o in orgs],
        next=orgs[-1].id if more and orgs else None,
    )


@router.delete("/organizations/{orgId}")
async def delete_organization(
    orgId: str, caller: CallerDep, svc: ServicesDep
) -> DeletedOrganization:
    """The organization and everything in it: every person's data (their erasure), their
    records and tokens, its agents, agent_memories, bots (its links to others' bots), channels,
    settings, service keys and events. Marked first, so nothing is added to it meanwhile;
    a call cut short is finished by the next; once nothing of it is left, 404."""
    deleted = await run(svc, svc.identity.delete_org, caller, orgId, svc.erasure)
    return DeletedOrganization.counted(deleted)


@router.post("/users", status_code=201)
async def create_user(body: CreateUser, caller: CallerDep, svc: ServicesDep) -> CreatedUser:
    new = await run(
        svc, svc.identity.create_user, caller, body.organizationId, body.id, body.name, body.role
    )
    return CreatedUser(
        id=new.id,
        organizationId=body.organizationId,
        role=body.role,
        token=new.token.secret,
        tokenPrefix=new.token.prefix,
    )


@router.post("/users/{userId}/tokens", status_code=201)
async def issue_token(
    userId: str, caller: CallerDep, svc: ServicesDep, body: IssueToken | None = None
) -> IssuedToken:
    """A rotation: the new token replaces every token the person holds (they stop working at
    once), and the person sees who issued it in `GET /v1/me/tokens`. A person adds a token
    beside their others with `POST /v1/me/tokens`. An org admin (their people), or the admin
    token."""
    org_id = body.organizationId if body is not None else None
    token = await run(svc, svc.identity.issue_token, caller, userId, org_id)
    return IssuedToken(token=token.secret, tokenPrefix=token.prefix)


@router.delete("/tokens/{tokenPrefix}", status_code=204)
async def revoke_token(tokenPrefix: str, caller: CallerDep, svc: ServicesDep) -> Response:
    await run(svc, svc.identity.revoke_token, caller, tokenPrefix)
    return Response(status_code=204)


@organizations.post("/{orgId}/users/{userId}/erase")
async def erase_user(orgId: str, userId: str, caller: CallerDep, svc: ServicesDep) -> ErasedUser:
    """Erase one person across the organization: the agents they own (with all they
    hold), their sessions under others' agents, the chats they own, their threads
    (messages, observations, working memory, vectors), the agent_memories about them
    (entity an actor with their id) and the bot memory entries from their words. An
    administrator of the organization. Others' agents and chats stay, and agent memory
    learned from their sessions stays until forgotten. Resumable and idempotent: a
    repeated call finishes the work and counts what it removed itself."""
    erased = await run(svc, svc.erasure.erase_user, caller, orgId, userId)
    return ErasedUser.counted(orgId, userId, erased)


@organizations.get("/{orgId}/settings")
async def get_settings(orgId: str, caller: CallerDep, svc: ServicesDep) -> OrganizationSettings:
    settings = await run(svc, svc.org_settings.get, caller, orgId)
    return OrganizationSettings.model_validate(settings)


@organizations.patch("/{orgId}/settings")
async def patch_settings(
    orgId: str, body: SettingsPatch, caller: CallerDep, svc: ServicesDep
) -> OrganizationSettings:
    """A value sets, `null` resets to the default, a missing field keeps."""
    patch = body.model_dump(exclude_unset=True)
    settings = await run(svc, svc.org_settings.patch, caller, orgId, patch)
    return OrganizationSettings.model_validate(settings)


# -- an organization's people and service keys (an org admin or the admin token; the people
# routes also for the organization's service key, without Act-As) --------------------------


@organizations.get("/{orgId}/users")
async def list_users(
    orgId: str,
    caller: CallerDep,
    svc: ServicesDep,
    limit: PageLimit = 100,
    after: Annotated[Cursor | None, Query(description="The last user id of a page")] = None,
) -> OrgUsers:
    """The organization's people in id order (no content)."""
    people, more = await run(svc, svc.identity.people, caller, orgId, after, limit)
    return OrgUsers(
        users=[UserOut.of(p) for p in people], next=people[-1].id if more and people else None
    )


@organizations.post("/{orgId}/users", status_code=201)
async def add_user(orgId: str, body: AddUser, caller: CallerDep, svc: ServicesDep) -> AddedUser:
    """A person without a token: the organization's service key acts for them."""
    user = await run(svc, svc.identity.add_person, caller, orgId, body.id, body.name, body.role)
    return AddedUser.of(user)


@organizations.patch("/{orgId}/users/{userId}")
async def rename_user(
    orgId: str, userId: str, body: RenameUser, caller: CallerDep, svc: ServicesDep
) -> AddedUser:
    """The person's name (an org admin, the admin token, or the organization's service key)."""
    user = await run(svc, svc.identity.rename_person, caller, orgId, userId, body.name)
    return AddedUser.of(user)


@organizations.delete("/{orgId}/users/{userId}")
async def delete_user(orgId: str, userId: str, caller: CallerDep, svc: ServicesDep) -> ErasedUser:
    """The person's erasure (as `.../erase` answers it), then their record and every token:
    the id is free again. Resumable: a call cut short is finished by the next."""
    await run(svc, svc.identity.require_person, caller, orgId, userId)
    erased = await run(svc, svc.erasure.erase_user, caller, orgId, userId)
    await run(svc, svc.identity.delete_person, caller, orgId, userId)
    return ErasedUser.counted(orgId, userId, erased)


@organizations.post("/{orgId}/service-keys", status_code=201)
async def create_service_key(
    orgId: str, body: CreateServiceKey, caller: CallerDep, svc: ServicesDep
) -> CreatedServiceKey:
    """A key for the organization's backend, shown once: with `Act-As: <userId>` each
    request is that person; without it, it may only manage the organization's people."""
    key_id, key, created = await run(svc, svc.identity.create_key, caller, orgId, body.name)
    return CreatedServiceKey(id=key_id, name=body.name, key=key.secret, createdAt=created)


@organizations.get("/{orgId}/service-keys")
async def list_service_keys(orgId: str, caller: CallerDep, svc: ServicesDep) -> ServiceKeys:
    listed = await run(svc, svc.identity.keys_of, caller, orgId)
    return ServiceKeys.of(listed)


@organizations.delete("/{orgId}/service-keys/{keyId}", status_code=204)
async def revoke_service_key(
    orgId: str, keyId: str, caller: CallerDep, svc: ServicesDep
) -> Response:
    """The key stops working at once."""
    await run(svc, svc.identity.revoke_key, caller, orgId, keyId)
    return Response(status_code=204)
