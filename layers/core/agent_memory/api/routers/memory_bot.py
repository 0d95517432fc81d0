"""The memory Bot of a bot: its learning executions and settings (API.md, "Bot memory")."""

from __future__ import annotations

from fastapi import APIRouter

from agent_memory.api.contracts.memory_bot import BotExecutions, BotSettingsOut, BotSettingsPatch
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["bot memory"])


@router.get("/v1/bots/{botId}/learning")
async def bot_learning(botId: str, caller: CallerDep, svc: ServicesDep) -> BotExecutions:
    """A writer of the bot sees its organization's executions; anyone else those of chats
    they own."""
    found = await run(svc, svc.memory_bot.executions, caller, botId)
    return BotExecutions.model_validate({"executions": found})


@router.get("/v1/bots/{botId}/memory/bot")
async def memory_bot_settings(botId: str, caller: CallerDep, svc: ServicesDep) -> BotSettingsOut:
    """The memory Bot's settings and this period's confirmed spend (write, not linked)."""
    settings, spent = await run(svc, svc.memory_bot.bot_settings, caller, botId)
    return BotSettingsOut.of(settings, spent)


@router.patch("/v1/bots/{botId}/memory/bot")
async def patch_memory_bot_settings(
    botId: str, body: BotSettingsPatch, caller: CallerDep, svc: ServicesDep
) -> BotSettingsOut:
    """Change the memory Bot's settings; a stale `expected` is 409 VersionConflict."""
    settings, spent = await run(
        svc, svc.memory_bot.patch_bot_settings, caller, botId, body.expected, body.changes()
    )
    return BotSettingsOut.of(settings, spent)
