"""Bots, their links and bot memory: the `/v1/bots` routes; the memory Bot of a bot (its
learning executions and settings) on its own router, `memory_bot`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_memory.api.contracts.bot_fields import AFTER, LIMIT
from agent_memory.api.contracts.bots import (
    TAGS_QUERY,
    BotAnswer,
    BotExecutions,
    BotMemory,
    BotMemoryChange,
    BotMemoryCommand,
    BotMemoryLog,
    BotOut,
    BotsAnswer,
    BotSettingsOut,
    BotSettingsPatch,
    ContextAsk,
    ContextText,
    CreateBot,
    CreateLink,
    LinkAnswer,
    LinkOut,
    Purge,
    Purged,
    RememberEntry,
    Share,
    SharedEntry,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run
from agent_memory.domain.bounds import DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT
from agent_memory.domain.errors import ValidationFailed

router = APIRouter(tags=["bots"])
memory_bot = APIRouter(tags=["bot memory"])


@router.post("/v1/bots", status_code=201)
async def create_bot(body: CreateBot, caller: CallerDep, svc: ServicesDep) -> BotAnswer:
    """A Bot owned by the caller (who holds write), with grants for people of its org."""
    # Loaded with the services (`svc`), not by this module: a cold start loads no grant rule.
    from agent_memory.domain.grants import parse_levels

    levels = parse_levels(body.grants or {}, ["grants"])
    bot = await run(svc, svc.bots.create_bot, caller, body.name, levels)
    return BotAnswer(bot=BotOut.of(bot, bot.org_id, linked=False))


@router.get("/v1/bots")
async def list_bots(
    caller: CallerDep,
    svc: ServicesDep,
    limit: Annotated[int, LIMIT] = 100,
    starting_after: Annotated[str | None, AFTER] = None,
) -> BotsAnswer:
    """The bots the caller reaches (a grant, a link; an admin: the organization's), newest
    first, each as `GET /v1/bots/{botId}` shows it; `has_more`: pass the last id on."""
    from agent_memory.service.bot_lists import list_bots

    found, more = await run(
        svc, list_bots, svc.bots, caller, limit=limit, starting_after=starting_after
    )
    bots = [BotOut.of(bot, reach.org_id, reach.linked) for bot, reach in found]
    return BotsAnswer(bots=bots, has_more=more)


@router.get("/v1/bots/{botId}")
async def get_bot(botId: str, caller: CallerDep, svc: ServicesDep) -> BotAnswer:
    """`linked` is true when the caller reaches the Bot through a link."""
    bot, reach = await run(svc, svc.bots.reach, caller, botId, "read")
    return BotAnswer(bot=BotOut.of(bot, reach.org_id, reach.linked))


@router.post("/v1/bots/{botId}/links", status_code=201)
async def link_bot(botId: str, body: CreateLink, caller: CallerDep, svc: ServicesDep) -> LinkAnswer:
    """Let another organization's people use the Bot there, or change their grants (write
    in its own org): a level sets a person's grant, null removes it, people not named keep
    theirs."""
    from agent_memory.domain.grants import parse_link_changes

    changes = parse_link_changes(body.grants, ["grants"])
    bot = await run(svc, svc.bots.link, caller, botId, body.organizationId, changes)
    return LinkAnswer(link=LinkOut.of(bot, body.organizationId))


# `tags` is documented by TAGS_QUERY; 2000 characters fit MAX_FILTER_TAGS tags of 140.
MAX_TAGS_QUERY = 2000


@router.get("/v1/bots/{botId}/memory", openapi_extra={"parameters": [TAGS_QUERY]})
async def read_bot_memory(
    botId: str,
    caller: CallerDep,
    svc: ServicesDep,
    tags: Annotated[list[str] | None, Query(include_in_schema=False)] = None,
) -> BotMemory:
    """Every entry for the caller in the caller's organization that carries all the tags,
    history included (retracted and invalidated entries with their status)."""
    # One comma-separated parameter (explode: false): a second would silently replace it.
    if tags is not None and (len(tags) > 1 or len(tags[0]) > MAX_TAGS_QUERY):
        raise ValidationFailed(f"one `tags` of at most {MAX_TAGS_QUERY} characters", ["tags"])
    wanted = [] if tags is None else tags[0].split(",")
    shown = await run(svc, svc.bot_memory.read, caller, botId, wanted)
    return BotMemory.of(shown)


@router.post("/v1/bots/{botId}/memory")
async def change_bot_memory(
    botId: str, body: BotMemoryCommand, caller: CallerDep, svc: ServicesDep
) -> BotMemoryChange:
    """Remember (a pinned entry only you see) or Forget (take back your part)."""
    command = body.command
    if isinstance(command, RememberEntry):
        changed = await run(
            svc, svc.bot_memory.remember, caller, botId, command.content, command.tags
        )
    else:
        changed = await run(svc, svc.bot_memory.forget, caller, botId, command.id)
    return BotMemoryChange.of(changed)


@router.get("/v1/bots/{botId}/memory/log")
async def bot_memory_log(
    botId: str,
    caller: CallerDep,
    svc: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_LIMIT)] = DEFAULT_LOG_LIMIT,
    before: Annotated[
        int | None,
        Query(ge=1, description="a version: the changes older than it (the last one shown)"),
    ] = None,
) -> BotMemoryLog:
    """Changes newest first, only of entries the caller may see; `before` (a version)
    pages back to older ones."""
    changes = await run(svc, svc.bot_memory.log, caller, botId, limit=limit, before=before)
    return BotMemoryLog.of(changes)


@router.post("/v1/bots/{botId}/memory/purge")
async def purge_bot_memory(botId: str, body: Purge, caller: CallerDep, svc: ServicesDep) -> Purged:
    """Remove, without reading them, the entries with one service tag and those built on
    them, in the caller's organization's memory only (write on a bot that is not linked; a
    linked organization's own memory: that organization's admins)."""
    return Purged(removed=await run(svc, svc.bot_memory.purge, caller, botId, body.tag))


@router.post("/v1/bots/{botId}/memory/share")
async def share_bot_memory(
    botId: str, body: Share, caller: CallerDep, svc: ServicesDep
) -> SharedEntry:
    """Widen an entry's audience, only when every source's access rule allows it."""
    shared = await run(svc, svc.bot_memory.share, caller, botId, body.id, body.audience)
    return SharedEntry.of(shared)


@router.post("/v1/bots/{botId}/memory/context")
async def bot_memory_context(
    botId: str, body: ContextAsk, caller: CallerDep, svc: ServicesDep
) -> ContextText:
    """The memory text for a chat's answer: entries every reader of the chat may see."""
    context = await run(svc, svc.bot_memory.context, caller, botId, body.chatId, body.maxLength)
    return ContextText.of(context)


@memory_bot.get("/v1/bots/{botId}/learning")
async def bot_learning(botId: str, caller: CallerDep, svc: ServicesDep) -> BotExecutions:
    """A writer of the bot sees its organization's executions; anyone else those of chats
    they own."""
    return BotExecutions.of(await run(svc, svc.memory_bot.executions, caller, botId))


@memory_bot.get("/v1/bots/{botId}/memory/bot")
async def memory_bot_settings(botId: str, caller: CallerDep, svc: ServicesDep) -> BotSettingsOut:
    """The memory Bot's settings and this period's confirmed spend (write, not linked)."""
    settings, spent = await run(svc, svc.memory_bot.bot_settings, caller, botId)
    return BotSettingsOut.of(settings, spent)


@memory_bot.patch("/v1/bots/{botId}/memory/bot")
async def patch_memory_bot_settings(
    botId: str, body: BotSettingsPatch, caller: CallerDep, svc: ServicesDep
) -> BotSettingsOut:
    """Change the memory Bot's settings; a stale `expected` is 409 VersionConflict."""
    settings, spent = await run(
        svc, svc.memory_bot.patch_bot_settings, caller, botId, body.expected, body.changes()
    )
    return BotSettingsOut.of(settings, spent)
