"""Bots, channels, chats, turns and items (API.md, "Bots, channels and chats")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from agent_memory.api.contracts.base import ITEM_ID_PATTERN
from agent_memory.api.contracts.bots import (
    TAGS_QUERY,
    AddItems,
    BotAnswer,
    BotMemory,
    BotMemoryChange,
    BotMemoryCommand,
    BotMemoryLog,
    ChangeMembers,
    ChannelAnswer,
    ChatAnswer,
    ChatItems,
    ContextAsk,
    ContextText,
    CreateBot,
    CreateChannel,
    CreateChat,
    CreateLink,
    ItemIds,
    LinkAnswer,
    Purge,
    Purged,
    RememberEntry,
    Share,
    SharedEntry,
    StartTurn,
    TurnCompleted,
    TurnStarted,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run
from agent_memory.domain.bots import NewChatItem
from agent_memory.domain.grants import parse_levels
from agent_memory.domain.pages import DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT

router = APIRouter(tags=["bots"])


@router.post("/v1/bots", status_code=201)
async def create_bot(body: CreateBot, caller: CallerDep, svc: ServicesDep) -> BotAnswer:
    """A Bot owned by the caller (who holds write), with grants for people of its org."""
    levels = parse_levels(body.grants or {}, ["grants"])
    bot = await run(svc, svc.bots.create_bot, caller, body.name, levels)
    return BotAnswer.model_validate({"bot": bot})


@router.get("/v1/bots/{botId}")
async def get_bot(botId: str, caller: CallerDep, svc: ServicesDep) -> BotAnswer:
    """`linked` is true when the caller reaches the Bot through a link."""
    return BotAnswer.model_validate({"bot": await run(svc, svc.bots.get_bot, caller, botId)})


@router.post("/v1/bots/{botId}/links", status_code=201)
async def link_bot(botId: str, body: CreateLink, caller: CallerDep, svc: ServicesDep) -> LinkAnswer:
    """Let another organization's people use the Bot there (write in its own org)."""
    levels = parse_levels(body.grants, ["grants"])
    link = await run(svc, svc.bots.link, caller, botId, body.organizationId, levels)
    return LinkAnswer.model_validate({"link": link})


@router.post("/v1/channels", status_code=201)
async def create_channel(body: CreateChannel, caller: CallerDep, svc: ServicesDep) -> ChannelAnswer:
    """A Channel group of the caller's organization; the caller is a member."""
    channel = await run(svc, svc.bots.create_channel, caller, body.name, body.members)
    return ChannelAnswer.model_validate({"channel": channel})


@router.post("/v1/channels/{channelId}/members")
async def change_members(
    channelId: str, body: ChangeMembers, caller: CallerDep, svc: ServicesDep
) -> ChannelAnswer:
    """The channel's creator or an organization admin adds and removes members."""
    channel = await run(svc, svc.bots.change_members, caller, channelId, body.add, body.remove)
    return ChannelAnswer.model_validate({"channel": channel})


@router.post("/v1/chats", status_code=201)
async def create_chat(body: CreateChat, caller: CallerDep, svc: ServicesDep) -> ChatAnswer:
    """Read on the Bot; a member of the Channel for a group chat."""
    chat = await run(svc, svc.bots.create_chat, caller, body.botId, body.channelId, body.kind)
    return ChatAnswer.model_validate({"chat": chat})


@router.get("/v1/chats/{chatId}/items")
async def chat_items(
    chatId: str,
    caller: CallerDep,
    svc: ServicesDep,
    after: Annotated[
        str | None, Query(max_length=16, pattern=ITEM_ID_PATTERN, description="an item id")
    ] = None,
) -> ChatItems:
    """The history oldest first, keeping the person's own words."""
    items = await run(svc, svc.bots.items, caller, chatId, after)
    return ChatItems.model_validate({"items": items})


@router.delete("/v1/chats/{chatId}/items", status_code=204)
async def delete_chat_items(chatId: str, caller: CallerDep, svc: ServicesDep) -> Response:
    """Delete the history (the owner); memory learned from it stays until `chat:` purge."""
    await run(svc, svc.bots.delete_history, caller, chatId)
    return Response(status_code=204)


@router.post("/v1/chats/{chatId}/turns", status_code=201)
async def start_turn(
    chatId: str, body: StartTurn, caller: CallerDep, svc: ServicesDep
) -> TurnStarted:
    """A Turn whose saved actor is the caller; `input` is what the Bot's model should see."""
    started = await run(svc, svc.bots.start_turn, caller, chatId, body.input, notice=body.notice)
    # The memory Bot rewrites the input with entries that help (within 15 s).
    started["input"], started["enriched"] = await run(
        svc,
        svc.memory_bot.enrich,
        caller,
        chatId,
        started["turn"]["id"],
        body.input,
        notice=body.notice,
    )
    return TurnStarted.model_validate(started)


@router.post("/v1/chats/{chatId}/turns/{turnId}/items")
async def add_items(
    chatId: str, turnId: str, body: AddItems, caller: CallerDep, svc: ServicesDep
) -> ItemIds:
    """The Bot's words, tool results (`app`) and notices of an open Turn."""
    items = [NewChatItem(i.role, i.content, i.app) for i in body.items]
    ids = await run(svc, svc.bots.add_items, caller, chatId, turnId, items)
    return ItemIds(itemIds=ids)


@router.post("/v1/chats/{chatId}/turns/{turnId}/complete")
async def complete_turn(
    chatId: str, turnId: str, caller: CallerDep, svc: ServicesDep
) -> TurnCompleted:
    turn = await run(svc, svc.bots.complete, caller, chatId, turnId)
    # Learning executions waiting on this turn go on (a repeated complete releases again).
    await run(svc, svc.memory_bot.turn_completed, chatId, turnId)
    return TurnCompleted.model_validate({"turn": turn})


# --- bot memory -------------------------------------------------------------------------


# `tags` is documented by TAGS_QUERY (an array, comma-separated); 2000 characters bound
# the text before it is split (MAX_FILTER_TAGS tags of 140 characters at most fit).
@router.get("/v1/bots/{botId}/memory", openapi_extra={"parameters": [TAGS_QUERY]})
async def read_bot_memory(
    botId: str,
    caller: CallerDep,
    svc: ServicesDep,
    tags: Annotated[str | None, Query(max_length=2000, include_in_schema=False)] = None,
) -> BotMemory:
    """Every entry for the caller in the caller's organization that carries all the tags,
    history included (retracted and invalidated entries with their status)."""
    wanted = [] if tags is None else tags.split(",")
    answer = await run(svc, svc.bot_memory.read, caller, botId, wanted)
    return BotMemory.model_validate(answer)


@router.post("/v1/bots/{botId}/memory")
async def change_bot_memory(
    botId: str, body: BotMemoryCommand, caller: CallerDep, svc: ServicesDep
) -> BotMemoryChange:
    """Remember (a pinned entry only you see) or Forget (take back your part)."""
    command = body.command
    if isinstance(command, RememberEntry):
        answer = await run(
            svc, svc.bot_memory.remember, caller, botId, command.content, command.tags
        )
    else:
        answer = await run(svc, svc.bot_memory.forget, caller, botId, command.id)
    return BotMemoryChange.model_validate(answer)


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
    return BotMemoryLog.model_validate({"changes": changes})


@router.post("/v1/bots/{botId}/memory/purge")
async def purge_bot_memory(botId: str, body: Purge, caller: CallerDep, svc: ServicesDep) -> Purged:
    """Remove, without reading them, the entries with one service tag and those built on
    them (write on a bot that is not linked)."""
    return Purged(removed=await run(svc, svc.bot_memory.purge, caller, botId, body.tag))


@router.post("/v1/bots/{botId}/memory/share")
async def share_bot_memory(
    botId: str, body: Share, caller: CallerDep, svc: ServicesDep
) -> SharedEntry:
    """Widen an entry's audience, only when every source's access rule allows it."""
    answer = await run(svc, svc.bot_memory.share, caller, botId, body.id, body.audience)
    return SharedEntry.model_validate(answer)


@router.post("/v1/bots/{botId}/memory/context")
async def bot_memory_context(
    botId: str, body: ContextAsk, caller: CallerDep, svc: ServicesDep
) -> ContextText:
    """The memory text for a chat's answer: entries every reader of the chat may see."""
    answer = await run(svc, svc.bot_memory.context, caller, botId, body.chatId, body.maxLength)
    return ContextText.model_validate(answer)
