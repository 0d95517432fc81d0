"""Who the bearer token is (`GET /v1/me`), and the caller's own tokens."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import StreamingResponse

from agent_memory.api.contracts.identity import IssuedToken, IssueToken, MeAnswer, MyTokens
from agent_memory.api.deps import CallerDep, ServicesDep, run
from agent_memory.domain.errors import TooLarge

router = APIRouter(tags=["identity"])

EXPORT_LINE = {
    "type": "object",
    "description": "The first line: `format` (`agent-memory-export`), `version`, `userId`, "
    "`organizationId`, `exportedAt` (ms). Every other line: `type` (agent, agentDraft, "
    "agentVersion, agentMemory, agentMemoryChange, session, sessionItem, sessionMemory, "
    "thread, threadMessage, workingMemory, observations, chatItem, chatTurn, confession, "
    "enrichment, botEntry, botMemoryChange, agentMemoryObject, event), the id of the object "
    "it belongs to, and the object as its own read route answers it. The last line: "
    '`{"type": "end", "lines": n}`, n counting the lines before it (an export cut short by '
    "a failure has none).",
    "additionalProperties": True,
}


@router.get("/v1/me")
async def me(caller: CallerDep) -> MeAnswer:
    """The caller's user id, organization and role; the admin token is the service admin."""
    return MeAnswer.of(caller)


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


@router.get(
    "/v1/me/export",
    tags=["export"],
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "One JSON object a line, streamed",
            "content": {"application/x-ndjson": {"schema": EXPORT_LINE}},
        }
    },
)
async def export(caller: CallerDep, svc: ServicesDep) -> Response:
    """Everything the caller owns or may see, as their read routes answer it: their agents
    (with the draft, versions and agent memory), their sessions with items and memory, their
    threads with messages, working memory and observations, their chats with items, turns,
    confessions and enrichments, the bot memory entries for them (sources as far as they may
    see them), the agent_memories about them, and the events they may see (each under
    `event`, as GET /v1/events shows it). Rate limited as one read; the admin token is
    refused (403). Where the deployment caps one answer (EXPORT_MAX_BYTES, set on AWS), a
    larger export answers 413 and no lines."""
    from agent_memory.api.person_export import export_lines

    first = await run(svc, svc.erasure.export_header, caller)
    lines = export_lines(svc, caller, first)
    limit = svc.settings.export_max_bytes
    if not limit:
        return StreamingResponse(lines, media_type="application/x-ndjson")
    body = bytearray()
    async for line in lines:
        body += line
        if len(body) > limit:
            raise TooLarge(
                f"the export is over the {limit} bytes one answer of this deployment carries: "
                "read its objects page by page through their own routes (docs/api.md, "
                "Portability), or export from a server that streams (make run)"
            )
    return Response(bytes(body), media_type="application/x-ndjson")
