"""Channel groups (API.md, "Bots, channels and chats"): the `/v1/channels` routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter

from agent_memory.api.contracts.bot_fields import AFTER, LIMIT
from agent_memory.api.contracts.chats import (
    ChangeMembers,
    ChannelAnswer,
    ChannelOut,
    ChannelsAnswer,
    CreateChannel,
)
from agent_memory.api.deps import CallerDep, ServicesDep, run

router = APIRouter(tags=["bots"])


@router.post("/v1/channels", status_code=201)
async def create_channel(body: CreateChannel, caller: CallerDep, svc: ServicesDep) -> ChannelAnswer:
    """A Channel group of the caller's organization; the caller is a member."""
    channel = await run(svc, svc.bots.create_channel, caller, body.name, body.members)
    return ChannelAnswer(channel=ChannelOut.of(channel))


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
    return ChannelAnswer(channel=ChannelOut.of(channel))
