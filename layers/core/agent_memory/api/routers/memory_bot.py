"""The memory Bot: confide, learning executions, confessions and enrichments (API.md)."""

from __future__ import annotations

from fastapi import APIRouter

from agent_memory.api.contracts.memory_bot import (
    BotExecutions,
    BotSettingsOut,
    BotSettingsPatch,
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
    answer = await run(svc, svc.memory_bot.confide, caller, chatId, turnId, body.text)
    return ConfideAnswered.model_validate(answer)


@router.get("/v1/chats/{chatId}/confessions")
async def confessions(chatId: str, caller: CallerDep, svc: ServicesDep) -> Confessions:
    """The chat's confessions, newest first: its owner only."""
    found = await run(svc, svc.memory_bot.confessions, caller, chatId)
    return Confessions.model_validate({"confessions": found})


@router.get("/v1/chats/{chatId}/enrichments")
async def enrichments(chatId: str, caller: CallerDep, svc: ServicesDep) -> Enrichments:
    """The chat's rewritten inputs, newest first: its owner only."""
    found = await run(svc, svc.memory_bot.enrichments, caller, chatId)
    return Enrichments.model_validate({"enrichments": found})


@router.get("/v1/bots/{botId}/learning")
async def bot_learning(botId: str, caller: CallerDep, svc: ServicesDep) -> BotExecutions:
    """A writer of the bot sees its organization's executions; anyone else those of chats
    they own."""
    found = await run(svc, svc.memory_bot.executions, caller, botId)
    return BotExecutions.model_validate({"executions": found})


@router.get("/v1/bots/{botId}/memory/bot")
async def memory_bot_settings(botId: str, caller: CallerDep, svc: ServicesDep) -> BotSettingsOut:
    """The memory Bot's settings and this period's confirmed spend (write, not linked)."""
    found = await run(svc, svc.memory_bot.bot_settings, caller, botId)
    return BotSettingsOut.model_validate(found)


@router.patch("/v1/bots/{botId}/memory/bot")
async def patch_memory_bot_settings(
    botId: str, body: BotSettingsPatch, caller: CallerDep, svc: ServicesDep
) -> BotSettingsOut:
    """Change the memory Bot's settings; a stale `expected` is 409 VersionConflict."""
    found = await run(
        svc, svc.memory_bot.patch_bot_settings, caller, botId, body.expected, body.changes()
    )
    return BotSettingsOut.model_validate(found)
