"""Channels, chats, turns and items (API.md, "Bots, channels and chats"), and the memory Bot
in a chat: confide, confessions and enrichments (API.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import ConfigDict, Field

from agent_memory.api.contracts.base import (
    APP_ONLY_ON_TOOLS,
    Answer,
    Body,
    Envelope,
    Mirror,
    Sparse,
    empty_list,
)
from agent_memory.api.contracts.bot_fields import Id, Name
from agent_memory.domain.bounds import (
    MAX_APP_LENGTH,
    MAX_CHANNEL_MEMBERS,
    MAX_ITEM_BYTES,
    MAX_TURN_ITEMS,
)

if TYPE_CHECKING:
    # Loaded with the services, not with the routes: a cold start stays cheap.
    from agent_memory.domain.bots import ChatItem

# The character bound is a 400; the byte bound is a 413 (docs/adr/0018-schema-limits-are-400s.md).
ITEM_BOUND = (
    f"At most {MAX_ITEM_BYTES} characters (400 beyond) and {MAX_ITEM_BYTES} bytes as UTF-8 "
    "(413 TooLarge beyond)."
)
TURN_ITEMS = f"1 to {MAX_TURN_ITEMS} items (400 beyond)"


class CreateChannel(Body):
    name: Name
    members: list[Id] = Field(default_factory=empty_list, max_length=MAX_CHANNEL_MEMBERS)


class ChangeMembers(Body):
    add: list[Id] = Field(default_factory=empty_list, max_length=MAX_CHANNEL_MEMBERS)
    remove: list[Id] = Field(default_factory=empty_list, max_length=MAX_CHANNEL_MEMBERS)


class ChannelOut(Mirror):
    id: str
    name: str
    members: list[str]


class ChannelAnswer(Envelope):
    channel: ChannelOut


class ChannelsAnswer(Answer):
    channels: list[ChannelOut]
    has_more: bool = Field(
        description="more channels follow: pass the last one's id as `starting_after`"
    )


class CreateChat(Body):
    botId: Id
    channelId: Id | None = None
    kind: Literal["chat", "review"] = "chat"


class ChatOut(Mirror):
    id: str
    botId: str
    organizationId: str = Field(validation_alias="org_id")
    owner: str
    channelId: str | None
    kind: Literal["chat", "review"]


class ChatAnswer(Envelope):
    chat: ChatOut


class ChatsAnswer(Answer):
    chats: list[ChatOut]
    has_more: bool = Field(
        description="more chats follow: pass the last one's id as `starting_after`"
    )


class StartTurn(Body):
    input: str = Field(max_length=MAX_ITEM_BYTES, description=ITEM_BOUND)
    notice: bool = Field(default=False, description="a notice is never a person's words")


class ChatTurnOut(Mirror):
    id: str
    actor: str
    status: Literal["open", "completed", "abandoned"] = Field(
        description="abandoned: not completed within 24 hours of its last item (closed)"
    )


class ChatTurnAnswer(Envelope):
    turn: ChatTurnOut


class TurnStarted(Answer):
    turn: ChatTurnOut
    input: str
    enriched: bool


class CompletedTurn(Answer):
    id: str
    status: Literal["completed"]


class TurnCompleted(Answer):
    turn: CompletedTurn
    itemIds: list[str] | None = Field(
        default=None, description="the ids of the items sent with the completion, if any"
    )


class ItemIn(Body):
    model_config = ConfigDict(json_schema_extra=APP_ONLY_ON_TOOLS)

    # `user` is refused with its reason: the schema offers only what is accepted.
    role: Literal["user", "assistant", "tool", "notice"] = Field(
        description="assistant, tool or notice: the person's words are the turn's input",
        json_schema_extra={"enum": ["assistant", "tool", "notice"]},
    )
    content: str = Field(max_length=MAX_ITEM_BYTES, description=ITEM_BOUND)
    app: str | None = Field(default=None, min_length=1, max_length=MAX_APP_LENGTH)


class AddItems(Body):
    items: list[ItemIn] = Field(min_length=1, max_length=MAX_TURN_ITEMS, description=TURN_ITEMS)


class CompleteTurn(Body):
    items: list[ItemIn] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TURN_ITEMS,
        description=(
            f"the Bot's last items, {TURN_ITEMS}, saved with the Turn's end in one write; "
            "only an open Turn takes them (409 ChatConflict)"
        ),
    )


class ItemIds(Answer):
    itemIds: list[str]


class ItemOut(Sparse):
    optional: ClassVar[tuple[str, ...]] = ("app",)

    id: str
    turnId: str
    role: Literal["user", "assistant", "tool", "notice"]
    actor: str | None
    content: str
    app: str | None = None

    @classmethod
    def of(cls, item: ChatItem, content: str) -> ItemOut:
        return cls(
            id=item.id,
            turnId=item.turn_id,
            role=item.role,
            actor=item.actor,
            content=content,
            app=item.app,
        )


class ChatItems(Answer):
    items: list[ItemOut]


class Confide(Body):
    text: str = Field(
        min_length=1, max_length=MAX_ITEM_BYTES, description=f"What the Bot confides. {ITEM_BOUND}"
    )


class ConfideAnswered(Mirror):
    answer: str
    calm: bool = Field(description="the fixed calm answer was given (no model answered)")


class ConfessionOut(Mirror):
    turnId: str
    text: str
    answer: str
    calm: bool
    at: int


class Confessions(Envelope):
    confessions: list[ConfessionOut]


class EnrichmentOut(Mirror):
    turnId: str
    input: str
    original: str
    entryIds: list[str]
    at: int


class Enrichments(Envelope):
    enrichments: list[EnrichmentOut]
