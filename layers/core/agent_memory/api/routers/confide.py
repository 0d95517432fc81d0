"""The memory Bot in a chat: confide, confessions and enrichments."""

from __future__ import annotations

from fastapi import APIRouter

from agent_memory.api.contracts.confide import (
    Confessions,
    Confide,
    ConfideAnswered,
    Enrichments,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["bot memory"])


@router.post("/v1/chats/{chatId}/turns/{turnId}/confide")
async def confide(
    chatId: str, turnId: str, body: Confide, caller: CallerDep, svc: ServicesDep
) -> ConfideAnswered:
    """The memory Bot's answer within 15 s (`calm`: the fixed calm answer); 409
    ChatConflict in a review chat or after the turn completed."""
    confession = await run(svc, svc.memory_bot.confide, caller, chatId, turnId, body.text)
    return ConfideAnswered.of(confession)


@router.get("/v1/chats/{chatId}/confessions")
async def confessions(chatId: str, caller: CallerDep, svc: ServicesDep) -> Confessions:
    """The chat's confessions, newest first: its owner only."""
    found = await run(svc, svc.memory_bot.confessions, caller, chatId)
    return Confessions.of(found)


@router.get("/v1/chats/{chatId}/enrichments")
async def enrichments(chatId: str, caller: CallerDep, svc: ServicesDep) -> Enrichments:
    """The chat's rewritten inputs, newest first: its owner only."""
    found = await run(svc, svc.memory_bot.enrichments, caller, chatId)
    return Enrichments.of(found)
