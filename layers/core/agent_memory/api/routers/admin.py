"""Administration (API.md): organizations, users, tokens."""

from __future__ import annotations

from fastapi import APIRouter, Response

from agent_memory.api.contracts.identity import (
    CreatedOrganization,
    CreatedUser,
    CreateOrganization,
    CreateUser,
    ErasedUser,
    IssuedToken,
    IssueToken,
)
from agent_memory.api.deps import CallerDep, ServicesDep, erasure, run

router = APIRouter(prefix="/v1/admin", tags=["admin"])
# Routes of one organization's administrators (the service admin may use them too).
organizations = APIRouter(prefix="/v1/organizations", tags=["organizations"])


@router.post("/organizations", status_code=201)
async def create_organization(
    body: CreateOrganization, caller: CallerDep, svc: ServicesDep
) -> CreatedOrganization:
    org = await run(svc, svc.identity.create_org, caller, body.id, body.name)
    return CreatedOrganization(id=org.id, name=org.name)


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
    erased = await run(svc, erasure(svc).erase_user, caller, orgId, userId)
    return ErasedUser.of(orgId, userId, erased)
