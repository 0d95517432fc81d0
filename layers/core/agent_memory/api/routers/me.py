"""Who the bearer token is (`GET /v1/me`), and the caller's own tokens."""

from __future__ import annotations

from fastapi import APIRouter, Response

from agent_memory.api.contracts.identity import IssuedToken, IssueToken
from agent_memory.api.contracts.me import CallerOut, MeAnswer, MyTokens
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["identity"])


@router.get("/v1/me")
async def me(caller: CallerDep) -> MeAnswer:
    """The caller's user id, organization and role; the admin token is the service admin."""
    return MeAnswer(
        user=CallerOut(
            id=caller.user_id,
            organizationId=caller.org_id,
            role=caller.role,
            serviceKeyId=caller.key_id,
        )
    )


@router.get("/v1/me/tokens")
async def my_tokens(caller: CallerDep, svc: ServicesDep) -> MyTokens:
    """Every token the caller holds, oldest first: its prefix, who issued it (the caller, an
    organization admin's user id, or "admin token") and when; never a token or its hash. An
    administrator's issuance replaces all of them, so a new entry here names who did it."""
    return MyTokens.of(await run(svc, svc.identity.own_tokens, caller))


@router.post("/v1/me/tokens", status_code=201)
async def add_my_token(
    caller: CallerDep, svc: ServicesDep, body: IssueToken | None = None
) -> IssuedToken:
    """One more token for the caller, beside the others (at most 20 a person; 409 past it).
    The token is shown once; only its hash is stored. The admin token has none (409)."""
    token = await run(svc, svc.identity.issue_own_token, caller)
    return IssuedToken(token=token.secret, tokenPrefix=token.prefix)


@router.delete("/v1/me/tokens/{tokenPrefix}", status_code=204)
async def revoke_my_token(tokenPrefix: str, caller: CallerDep, svc: ServicesDep) -> Response:
    """Revoke one of the caller's own tokens (it stops working at once); another person's
    prefix answers 404 as an unknown one does."""
    await run(svc, svc.identity.revoke_own_token, caller, tokenPrefix)
    return Response(status_code=204)
