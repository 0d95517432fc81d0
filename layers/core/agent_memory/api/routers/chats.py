"""Channel groups, chats, turns and items: the `/v1/channels` and `/v1/chats` routes; the
memory Bot in a chat (confide, confessions, enrichments) on its own router, `memory_bot`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Response

from agent_memory.api.contracts.base import ITEM_ID_PATTERN, fitting
from agent_memory.api.contracts.bot_fields import AFTER, LIMIT
from agent_memory.api.contracts.chats import (
    AddItems,
    ChangeMembers,
    ChannelAnswer,
    ChannelOut,
    ChannelsAnswer,
    ChatAnswer,
    ChatItems,
    ChatOut,
    ChatsAnswer,
    ChatTurnAnswer,
    ChatTurnOut,
    CompletedTurn,
    CompleteTurn,
    Confessions,
    Confide,
    ConfideAnswered,
    CreateChannel,
    CreateChat,
    Enrichments,
    ItemIds,
    ItemOut,
    StartTurn,
    TurnCompleted,
    TurnStarted,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["bots"])
memory_bot = APIRouter(tags=["bot memory"])


@router.post("/v1/chats", status_code=201)
async def create_chat(body: CreateChat, caller: CallerDep, svc: ServicesDep) -> ChatAnswer:
    """Read on the Bot; a member of the Channel for a group chat."""
    chat = await run(svc, svc.bots.create_chat, caller, body.botId, body.channelId, body.kind)
    return ChatAnswer.of(chat)


@router.get("/v1/chats")
async def list_chats(
    caller: CallerDep,
    svc: ServicesDep,
    botId: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=200,
            description="only the chats of this bot, one you reach (else 404)",
        ),
    ] = None,
    limit: Annotated[int, LIMIT] = 100,
    starting_after: Annotated[str | None, AFTER] = None,
) -> ChatsAnswer:
    """The chats the caller owns or started a turn in, while they read them, newest first."""
    from agent_memory.service.bot_lists import list_chats

    found, more = await run(
        svc,
        list_chats,
        svc.bots,
        caller,
        limit=limit,
        starting_after=starting_after,
        bot_id=botId,
    )
    return ChatsAnswer(chats=[ChatOut.of(c) for c in found], has_more=more)


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
    return ChatItems(items=fitting([ItemOut.of(item, content) for item, content in items]))


@router.delete("/v1/chats/{chatId}/items", status_code=204)
async def delete_chat_items(chatId: str, caller: CallerDep, svc: ServicesDep) -> Response:
    """Delete the history (the owner): its items and its enrichments with their call logs;
    confessions stay, and memory learned from it until `chat:` purge."""
    await run(svc, svc.bots.delete_history, caller, chatId)
    return Response(status_code=204)


@router.post("/v1/chats/{chatId}/turns", status_code=201)
async def start_turn(
    chatId: str, body: StartTurn, caller: CallerDep, svc: ServicesDep
) -> TurnStarted:
    """A Turn whose saved actor is the caller; `input` is what the Bot's model should see."""
    chat, turn = await run(svc, svc.bots.begin_turn, caller, chatId, body.input, notice=body.notice)
    text, enriched = await run(
        svc, svc.memory_bot.enrichment.enrich, chat, turn.id, body.input, notice=body.notice
    )
    return TurnStarted(turn=ChatTurnOut.of(turn), input=text, enriched=enriched)


@router.get("/v1/chats/{chatId}/turns/{turnId}")
async def get_turn(chatId: str, turnId: str, caller: CallerDep, svc: ServicesDep) -> ChatTurnAnswer:
    """A Turn and its status now: `open`, `completed`, or `abandoned` once it was not
    completed within 24 hours of its last item (the chat's readers)."""
    turn = await run(svc, svc.bots.turn, caller, chatId, turnId)
    return ChatTurnAnswer.of(turn)


@router.post("/v1/chats/{chatId}/turns/{turnId}/items")
async def add_items(
    chatId: str, turnId: str, body: AddItems, caller: CallerDep, svc: ServicesDep
) -> ItemIds:
    """The Bot's words, tool results (`app`) and notices of an open Turn."""
    # Loaded with the services (`svc`), not by this module: a cold start loads no item rule.
    from agent_memory.domain.sessions import NewItem

    items = [NewItem(i.role, i.content, i.app) for i in body.items]
    ids = await run(svc, svc.bots.add_items, caller, chatId, turnId, items)
    return ItemIds(itemIds=ids)


@router.post("/v1/chats/{chatId}/turns/{turnId}/complete", response_model_exclude_none=True)
async def complete_turn(
    chatId: str,
    turnId: str,
    caller: CallerDep,
    svc: ServicesDep,
    body: Annotated[CompleteTurn | None, Body()] = None,
) -> TurnCompleted:
    """The Turn completed; with `items`, the Bot's last words are saved with its end (one
    request for what `items` then `complete` do)."""
    ids: list[str] | None = None
    if body is not None and body.items is not None:  # `[]` is refused (1 item at least)
        from agent_memory.domain.sessions import NewItem

        items = [NewItem(i.role, i.content, i.app) for i in body.items]
        chat, completed, ids = await run(
            svc, svc.bots.answer_and_complete, caller, chatId, turnId, items
        )
    else:
        chat, completed = await run(svc, svc.bots.finish_turn, caller, chatId, turnId)
    # Learning executions waiting on this turn go on (a repeated complete releases again).
    await run(svc, svc.memory_bot.turn_completed, chat, completed)
    return TurnCompleted(turn=CompletedTurn(id=completed.id, status="completed"), itemIds=ids)


@router.post("/v1/channels", status_code=201)
async def create_channel(body: CreateChannel, caller: CallerDep, svc: ServicesDep) -> ChannelAnswer:
    """A Channel group of the caller's organization; the caller is a member."""
    channel = await run(svc, svc.bots.create_channel, caller, body.name, body.members)
    return ChannelAnswer.of(channel)


@router.get("/v1/channels")
async def list_channels(
    caller: CallerDep,
    svc: ServicesDep,
    limit: Annotated[int, LIMIT] = 100,
    starting_after: Annotated[str | None, AFTER] = None,
) -> ChannelsAnswer:
    """The caller's channels (an organization admin: all of them), newest first."""
    from agent_memory.service.bot_lists import list_channels

    found, more = await run(
        svc, list_channels, svc.bots, caller, limit=limit, starting_after=starting_after
    )
    return ChannelsAnswer(channels=[ChannelOut.of(c) for c in found], has_more=more)


@router.post("/v1/channels/{channelId}/members")
async def change_members(
    channelId: str, body: ChangeMembers, caller: CallerDep, svc: ServicesDep
) -> ChannelAnswer:
    """The channel's creator or an organization admin adds and removes members."""
    channel = await run(svc, svc.bots.change_members, caller, channelId, body.add, body.remove)
    return ChannelAnswer.of(channel)


@memory_bot.post("/v1/chats/{chatId}/turns/{turnId}/confide")
async def confide(
    chatId: str, turnId: str, body: Confide, caller: CallerDep, svc: ServicesDep
) -> ConfideAnswered:
    """The memory Bot's answer within 15 s (`calm`: the fixed calm answer); 409
    ChatConflict in a review chat or after the turn completed."""
    confession = await run(svc, svc.memory_bot.confide, caller, chatId, turnId, body.text)
    return ConfideAnswered.of(confession)


@memory_bot.get("/v1/chats/{chatId}/confessions")
async def confessions(chatId: str, caller: CallerDep, svc: ServicesDep) -> Confessions:
    """The chat's confessions, newest first: its owner only."""
    found = await run(svc, svc.memory_bot.confessions, caller, chatId)
    return Confessions.of(found)


@memory_bot.get("/v1/chats/{chatId}/enrichments")
async def enrichments(chatId: str, caller: CallerDep, svc: ServicesDep) -> Enrichments:
    """The chat's rewritten inputs, newest first: its owner only."""
    found = await run(svc, svc.memory_bot.enrichments, caller, chatId)
    return Enrichments.of(found)
