"""Lists of bots, channels and chats: exactly what each object's own read route shows the
caller, read from the key-ordered list partitions a batch at a time (docs/adr/0088)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import TypeVar

from agent_memory.domain.bots import BOTS_BELONG_TO_A_PERSON, Bot, Channel, Chat
from agent_memory.domain.errors import NotFound
from agent_memory.domain.grants import Reach, decide
from agent_memory.domain.identity import Principal, person_of
from agent_memory.service.bots import BotService, Members

# How many ids a list reads and judges at a time (one Query page, one batch read).
LIST_BATCH = 100
NOT_IN_LIST = "starting_after must be one of the {what}s this list shows you"
T = TypeVar("T")
# One page of a list partition's ids after an id: (ids newest first, the last when more follow).
IdPage = Callable[[str | None], tuple[list[str], str | None]]


def list_bots(
    bots: BotService, principal: Principal, *, limit: int, starting_after: str | None
) -> tuple[list[tuple[Bot, Reach]], bool]:
    """The bots the caller reaches (a grant at home or through a link; an admin every
    bot of the organization), newest first, from the organization's bot list; whether
    more follow."""
    _user, org_id = person_of(principal, BOTS_BELONG_TO_A_PERSON)
    if starting_after is not None:
        try:
            bots.reach(principal, starting_after, "read")
        except NotFound as error:
            raise NotFound(NOT_IN_LIST.format(what="bot"), ["starting_after"]) from error

    def reached(ids: list[str]) -> dict[str, tuple[Bot, Reach]]:
        found: dict[str, tuple[Bot, Reach]] = {}
        for bot in bots.repo.bots(ids):
            try:
                found[bot.id] = (bot, decide(principal, bot.grants(), "read", what="bot"))
            except NotFound:
                continue
        return found

    ids = _ids(lambda after: bots.repo.org_bot_ids(org_id, after), starting_after)
    return _page(ids, reached, limit)


def list_channels(
    bots: BotService, principal: Principal, *, limit: int, starting_after: str | None
) -> tuple[list[Channel], bool]:
    """The organization's channels the caller is a member of (an admin: all, as an
    admin changes any channel's members), newest first; whether more follow."""
    user, org_id = person_of(principal, BOTS_BELONG_TO_A_PERSON)

    def visible(channel: Channel) -> bool:
        return channel.org_id == org_id and (channel.has(user) or principal.administers(org_id))

    if starting_after is not None:
        found = bots.repo.get_channel(starting_after)
        if found is None or not visible(found[0]):
            raise NotFound(NOT_IN_LIST.format(what="channel"), ["starting_after"])

    def kept(ids: list[str]) -> dict[str, Channel]:
        return {c.id: c for c in bots.repo.channels(ids).values() if visible(c)}

    ids = _ids(lambda after: bots.repo.org_channel_ids(org_id, after), starting_after)
    return _page(ids, kept, limit)


def list_chats(
    bots: BotService,
    principal: Principal,
    *,
    limit: int,
    starting_after: str | None,
    bot_id: str | None = None,
) -> tuple[list[Chat], bool]:
    """The chats the caller owns or started a Turn in and still reads (a group chat's:
    while a member of its channel), of `bot_id` when given, newest first; whether more
    follow (docs/adr/0088). `bot_id` names a bot the caller reaches (else 404)."""
    user, org_id = person_of(principal, BOTS_BELONG_TO_A_PERSON)
    if bot_id is not None:
        try:
            bots.reach(principal, bot_id, "read")
        except NotFound as error:
            raise NotFound("bot not found", ["botId"]) from error
    if starting_after is not None:
        try:
            bots.readable_chat(principal, starting_after)
        except NotFound as error:
            raise NotFound(NOT_IN_LIST.format(what="chat"), ["starting_after"]) from error

    def readable(ids: list[str]) -> dict[str, Chat]:
        chats = [c for c in bots.repo.chats(ids) if bot_id is None or c.bot_id == bot_id]
        members = Members(bots.repo, user, org_id).load(c.channel_id for c in chats)
        return {c.id: c for c in chats if c.readable_by(user, org_id, members)}

    owned = _ids(lambda a: bots.repo.owned_chat_ids(org_id, user, a), starting_after)
    spoken = _ids(lambda a: bots.repo.spoken_chat_ids(org_id, user, a), starting_after)
    return _page(_distinct(heapq.merge(owned, spoken, reverse=True)), readable, limit)


def _ids(read: IdPage, after: str | None) -> Iterator[str]:
    """Every id of a list partition after `after`, newest first, read a page at a time."""
    while True:
        ids, after = read(after)
        yield from ids
        if after is None:
            return


def _distinct(ids: Iterable[str]) -> Iterator[str]:
    """Sorted ids with repeats left out (a chat listed twice is shown once)."""
    last: str | None = None
    for one in ids:
        if one != last:
            yield one
        last = one


def _page(
    ids: Iterator[str], keep: Callable[[list[str]], Mapping[str, T]], limit: int
) -> tuple[list[T], bool]:
    """The first `limit` objects that `keep` answers for `ids` (a batch at a time, in the
    ids' order), and whether one more follows."""
    kept: list[T] = []
    while len(kept) <= limit:
        batch = list(islice(ids, LIST_BATCH))
        if not batch:
            break
        found = keep(batch)
        kept += [found[i] for i in batch if i in found]
    return kept[:limit], len(kept) > limit
