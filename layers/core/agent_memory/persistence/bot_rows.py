"""Bots, Channels, Chats, Turns and Items in the single table.

- `BOT#<id>/META` (grants and links, `rev`), `CHANNEL#<id>/META` (members, `rev`): changed
  conditionally on `rev`. `BOTS#<org>/<botId>`: the bots an organization uses.
- `CHAT#<id>/META`: `itemCount`, the fence of item writers. `RESOURCE#<owner>/CHAT#<id>` and
  `RESOURCE#<userId>/SPOKE#<id>` (a group chat where a person started a Turn) let erasure
  find a person's chats (persistence/erasure.py).
- `CHAT#<id>/TURN#<turnId>` and `CHAT#<id>/ITEM#<seq:08d>`: metadata in plaintext (learning
  checks it without decrypting), `text` sealed under {org, pool: chat id, field: item}.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, cast

from agent_memory.domain.bots import Bot, Channel, Chat, ChatItem, Turn
from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.grants import Level
from agent_memory.persistence.keys import (
    BOT_PREFIX,
    CHANNEL_PREFIX,
    CHAT_PREFIX,
    HEAD,
    ORG_BOTS_PREFIX,
    SPOKEN_CHAT_PREFIX,
    TURN_PREFIX,
    resource_pk,
)
from agent_memory.ports import LessThan, Record, Store, Update

# The chat's count is already at least the seq a deletion raises it to (or no chat row).
CHAT_FENCE = "chat-item-fence"


def bot_pk(bot_id: str) -> str:
    return f"{BOT_PREFIX}{bot_id}"


def org_bots_pk(org_id: str) -> str:
    """The bots an organization uses (its own and linked ones): erasure reads their pools."""
    return f"{ORG_BOTS_PREFIX}{org_id}"


def channel_pk(channel_id: str) -> str:
    return f"{CHANNEL_PREFIX}{channel_id}"


def chat_pk(chat_id: str) -> str:
    return f"{CHAT_PREFIX}{chat_id}"


def owned_chat_key(org_id: str, owner: str, chat_id: str) -> tuple[str, str]:
    """The chat's row in its owner's partition (`RESOURCE#<orgId>#<userId>`, as threads')."""
    return resource_pk(org_id, owner), f"{CHAT_PREFIX}{chat_id}"


def spoken_chat_key(org_id: str, user_id: str, chat_id: str) -> tuple[str, str]:
    """A group chat of another owner in the partition of a person who spoke in it."""
    return resource_pk(org_id, user_id), f"{SPOKEN_CHAT_PREFIX}{chat_id}"


def turn_sk(turn_id: str) -> str:
    return f"{TURN_PREFIX}{turn_id}"


def raise_fence(store: Store, chat_id: str, seq: int) -> None:
    """Raise the chat row's `itemCount` to `seq` (left as it is when already at least that,
    or when the row is gone): called before item rows up to `seq` are deleted, so an id
    whose row is gone is still counted as given (persistence/bots.py). One plain Update,
    conditional on the count being below `seq` (the count only ever grows)."""
    try:
        store.write(
            [
                Update(
                    chat_pk(chat_id),
                    HEAD,
                    set={"itemCount": seq},
                    condition=LessThan("itemCount", seq, name=CHAT_FENCE),
                )
            ]
        )
    except WriteConflict as error:
        if error.condition != CHAT_FENCE:
            raise


def bot_row(bot: Bot, now_ms: int) -> Record:
    """A new Bot's row: its grants, no links yet."""
    return {
        "pk": bot_pk(bot.id),
        "sk": HEAD,
        "type": "bot",
        "orgId": bot.org_id,
        "name": bot.name,
        "owner": bot.owner,
        "levels": dict(bot.levels),
        "links": {},
        "rev": 0,
        "createdAt": now_ms,
    }


def channel_row(channel: Channel, rev: int, now_ms: int) -> Record:
    return {
        "pk": channel_pk(channel.id),
        "sk": HEAD,
        "type": "channel",
        "orgId": channel.org_id,
        "name": channel.name,
        "creator": channel.creator,
        "members": list(channel.members),
        "rev": rev,
        "updatedAt": now_ms,
    }


def chat_row(chat: Chat, now_ms: int) -> Record:
    """A new chat's row: no item given yet."""
    return {
        "pk": chat_pk(chat.id),
        "sk": HEAD,
        "type": "chat",
        "botId": chat.bot_id,
        "orgId": chat.org_id,
        "owner": chat.owner,
        "channelId": chat.channel_id,
        "kind": chat.kind,
        "itemCount": 0,
        "createdAt": now_ms,
    }


def _levels(raw: Any) -> Mapping[str, Level]:
    return MappingProxyType(
        {str(u): ("write" if v == "write" else "read") for u, v in (raw or {}).items()}
    )


def bot_of(row: Record) -> Bot:
    links = {str(org): _levels(levels) for org, levels in (row.get("links") or {}).items()}
    return Bot(
        id=str(row["pk"]).removeprefix(BOT_PREFIX),
        org_id=str(row["orgId"]),
        name=str(row["name"]),
        owner=str(row["owner"]),
        levels=_levels(row.get("levels")),
        links=MappingProxyType(links),
    )


def channel_of(row: Record) -> Channel:
    return Channel(
        id=str(row["pk"]).removeprefix(CHANNEL_PREFIX),
        org_id=str(row["orgId"]),
        name=str(row["name"]),
        creator=str(row["creator"]),
        members=tuple(str(m) for m in row.get("members") or ()),
    )


def chat_of(row: Record) -> Chat:
    return Chat(
        id=str(row["pk"]).removeprefix(CHAT_PREFIX),
        bot_id=str(row["botId"]),
        org_id=str(row["orgId"]),
        owner=str(row["owner"]),
        channel_id=row.get("channelId"),
        kind="review" if row.get("kind") == "review" else "chat",
        item_count=int(row.get("itemCount") or 0),
    )


def turn_of(chat_id: str, row: Record) -> Turn:
    return Turn(
        id=str(row["sk"]).removeprefix(TURN_PREFIX),
        chat_id=chat_id,
        actor=str(row["actor"]),
        status="completed" if row.get("status") == "completed" else "open",
        notice=bool(row.get("notice")),
        created_at=int(row.get("createdAt") or 0),
        last_item=int(row.get("lastItem") or 0),
        active_at=int(row.get("updatedAt") or row.get("createdAt") or 0),
    )


def item_of(row: Record) -> ChatItem:
    role = str(row["role"])
    return ChatItem(
        seq=int(row["seq"]),
        turn_id=str(row["turnId"]),
        role=cast(Any, role),
        actor=row.get("actor"),
        app=row.get("app"),
    )
