"""Bots, channels, chats and bot memory (API.md, "Bots, channels and chats", "Bot memory")."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic.config import JsonDict

from agent_memory.api.contracts.base import APP_ONLY_ON_TOOLS, Answer, Body, require_known_tag
from agent_memory.domain.bot_limits import MAX_FILTER_TAGS
from agent_memory.domain.bots import MAX_MEMBERS, MAX_NAME_LENGTH
from agent_memory.domain.sessions import MAX_APP_LENGTH, MAX_ITEM_BYTES, MAX_TURN_ITEMS

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_LENGTH)]
Id = Annotated[str, Field(min_length=1, max_length=128)]
LevelText = Literal["read", "write"]
# Declared, checked by the domain (its messages name the grant): a level per user id.
GRANTS: JsonDict = {"additionalProperties": {"enum": ["read", "write"]}}
# The id in a service tag (domain/audiences.py `_VALUE`): no ':', ',' or blank, where a
# blank is Python's (ECMA's \s lacks \x1c-\x1f and \x85, so they are spelled out).
TAG_VALUE = r"[^:,\s\x1c-\x1f\x85]{1,128}"
# A topic (domain/audiences.py): 1..64 lowercase letters, digits and dashes, not dashes only.
TOPIC: JsonDict = {"pattern": "^[a-z0-9-]*[a-z0-9][a-z0-9-]*$", "minLength": 1, "maxLength": 64}
# A tag a reader filters by (domain/audiences.py `parse_tag`): a topic, `for:bot`, or a
# service tag's prefix and id.
SERVICE_PREFIXES = "for:person|for:channel|from|forgot|org|chat|channel|app"
FILTER_TAG: JsonDict = {
    "anyOf": [
        {"type": "string", **TOPIC},
        {"type": "string", "const": "for:bot"},
        {"type": "string", "pattern": f"^(?:{SERVICE_PREFIXES}):{TAG_VALUE}$"},
    ]
}
# GET /v1/bots/{botId}/memory's `tags`, declared by hand: `a,b` is an array sent as one
# comma-separated value (form, not exploded), which FastAPI cannot say of a str parameter.
TAGS_QUERY: JsonDict = {
    "name": "tags",
    "in": "query",
    "required": False,
    "style": "form",
    "explode": False,
    "description": f"Entries that carry all these tags (at most {MAX_FILTER_TAGS}), "
    "comma-separated: topics and service tags (`from:<userId>`, `for:bot`, ...)",
    # `tags=` says no tag: a 400 (omit `tags` to filter by none).
    "schema": {"type": "array", "minItems": 1, "maxItems": MAX_FILTER_TAGS, "items": FILTER_TAG},
}
ITEM_BOUND = f"At most {MAX_ITEM_BYTES} bytes as UTF-8 (413 TooLarge beyond)."
MAX_MEMORY_CONTENT = 8000


class Sparse(Answer):
    """An answer whose optional fields are left out when they have no value (API.md's `?`)."""

    optional: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _sparse(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.optional:
            if data.get(name) is None:
                data.pop(name, None)
        return data


# --- bots ---------------------------------------------------------------------------------


class CreateBot(Body):
    name: Name
    grants: dict[str, str] | None = Field(
        default=None,
        description='{userId: "read"|"write"}; the creator holds write',
        json_schema_extra=GRANTS,
    )


class BotOut(Answer):
    id: str
    name: str
    organizationId: str
    owner: str
    grants: dict[str, LevelText]
    linked: bool


class BotAnswer(Answer):
    bot: BotOut


class CreateLink(Body):
    organizationId: Id
    grants: dict[str, str] = Field(json_schema_extra=GRANTS)


class LinkOut(Answer):
    botId: str
    organizationId: str
    grants: dict[str, LevelText]


class LinkAnswer(Answer):
    link: LinkOut


# --- channels -----------------------------------------------------------------------------


class CreateChannel(Body):
    name: Name
    members: list[Id] = Field(default_factory=list, max_length=MAX_MEMBERS)


class ChangeMembers(Body):
    add: list[Id] = Field(default_factory=list, max_length=MAX_MEMBERS)
    remove: list[Id] = Field(default_factory=list, max_length=MAX_MEMBERS)


class ChannelOut(Answer):
    id: str
    name: str
    members: list[str]


class ChannelAnswer(Answer):
    channel: ChannelOut


# --- chats, turns, items ------------------------------------------------------------------


class CreateChat(Body):
    botId: Id
    channelId: Id | None = None
    kind: Literal["chat", "review"] = "chat"


class ChatOut(Answer):
    id: str
    botId: str
    organizationId: str
    owner: str
    channelId: str | None
    kind: Literal["chat", "review"]


class ChatAnswer(Answer):
    chat: ChatOut


class StartTurn(Body):
    input: str = Field(description=ITEM_BOUND)
    notice: bool = Field(default=False, description="a notice is never a person's words")


class ChatTurnOut(Answer):
    id: str
    actor: str
    status: Literal["open", "completed"]


class TurnStarted(Answer):
    turn: ChatTurnOut
    input: str
    enriched: bool


class CompletedTurn(Answer):
    id: str
    status: Literal["completed"]


class TurnCompleted(Answer):
    turn: CompletedTurn


class ItemIn(Body):
    model_config = ConfigDict(json_schema_extra=APP_ONLY_ON_TOOLS)

    # `user` is refused with its reason (the person's words are the turn's input): the
    # schema offers only what is accepted.
    role: Literal["user", "assistant", "tool", "notice"] = Field(
        description="assistant, tool or notice: the person's words are the turn's input",
        json_schema_extra={"enum": ["assistant", "tool", "notice"]},
    )
    content: str = Field(description=ITEM_BOUND)
    app: str | None = Field(default=None, min_length=1, max_length=MAX_APP_LENGTH)


class AddItems(Body):
    items: list[ItemIn] = Field(
        description=f"1 to {MAX_TURN_ITEMS} items (413 TooLarge beyond)",
        json_schema_extra={"minItems": 1, "maxItems": MAX_TURN_ITEMS},
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


class ChatItems(Answer):
    items: list[ItemOut]


# --- bot memory ---------------------------------------------------------------------------


class ItemSourceOut(Answer):
    chat: str
    item: str


class EntrySourceOut(Answer):
    entry: str


class BotEntryOut(Sparse):
    optional: ClassVar[tuple[str, ...]] = ("confidence", "invalidatedAt")

    id: str
    layer: Literal["fact", "observation", "pinned"]
    content: str
    tags: list[str]
    sources: list[ItemSourceOut | EntrySourceOut]
    status: Literal["active", "retracted"]
    createdAt: int
    updatedAt: int
    confidence: float | None = None
    invalidatedAt: int | None = None


class BotMemory(Answer):
    entries: list[BotEntryOut]
    version: int


class RememberEntry(Body):
    tag: Literal["Remember"] = Field(alias="_tag")
    content: str = Field(min_length=1, max_length=MAX_MEMORY_CONTENT)
    tags: list[Annotated[str, Field(json_schema_extra=TOPIC)]] = Field(
        default_factory=list, max_length=32, description="topics: lowercase letters, digits, -"
    )


class ForgetEntry(Body):
    tag: Literal["Forget"] = Field(alias="_tag")
    id: Id


COMMAND_TAGS = ("Remember", "Forget")
BotCommand = Annotated[RememberEntry | ForgetEntry, Field(discriminator="tag")]


class BotMemoryCommand(Body):
    command: BotCommand

    @field_validator("command", mode="wrap")
    @classmethod
    def _tag_first(cls, value: Any, handler: Any) -> Any:
        """A missing or unknown `_tag` is reported at `["command", "_tag"]`."""
        require_known_tag(value, COMMAND_TAGS)
        return handler(value)


class BotMemoryChange(Sparse):
    optional: ClassVar[tuple[str, ...]] = ("entry",)

    entry: BotEntryOut | None = None
    version: int


class LogChangeOut(Answer):
    version: int
    at: int
    by: Literal["memory_bot", "person", "promotion"]
    ids: list[str]


class BotMemoryLog(Answer):
    changes: list[LogChangeOut]


class Purge(Body):
    tag: str = Field(
        min_length=1,
        max_length=200,
        description="from:, chat:, org: or channel:",
        json_schema_extra={"pattern": f"^(?:from|chat|org|channel):{TAG_VALUE}$"},
    )


class Purged(Answer):
    removed: int


class Share(Body):
    id: Id
    audience: str = Field(
        min_length=1,
        max_length=200,
        description="for:channel:<id> or for:bot",
        json_schema_extra={"pattern": f"^for:(?:bot|channel:{TAG_VALUE})$"},
    )


class SharedEntry(Answer):
    entry: BotEntryOut
    version: int


class ContextAsk(Body):
    chatId: Id
    maxLength: int | None = Field(default=None, ge=1, le=100_000)


class ContextText(Answer):
    text: str
    ids: list[str]
    hasEntries: bool


# The name routers import; the class is named apart for clean OpenAPI schema names.
TurnOut = ChatTurnOut


# The name routers import; the class is named apart for clean OpenAPI schema names.
EntryOut = BotEntryOut
