"""Bots, their links, bot memory, and the memory Bot of a bot: its learning executions and
settings (API.md, "Bots, channels and chats", "Bot memory")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import Field
from pydantic.config import JsonDict

from agent_memory.api.contracts.base import (
    NOT_BLANK,
    Answer,
    Body,
    CommandBody,
    Mirror,
    NotBlank,
    Sparse,
    empty_list,
    execution_json,
    fitting,
)
from agent_memory.api.contracts.bot_fields import Id, Name
from agent_memory.domain.bounds import (
    MAX_ENTRY_CONTENT,
    MAX_FILTER_TAGS,
    MAX_MEMORY_BOT_CONCURRENCY,
    MAX_MEMORY_BOT_INSTRUCTIONS,
)

if TYPE_CHECKING:
    # Loaded with the services, not with the routes: a cold start stays cheap.
    from agent_memory.domain.bot_memory import Changed, LogChange, Shown
    from agent_memory.domain.bots import Bot
    from agent_memory.domain.entries import Entry
    from agent_memory.domain.memory_bot import BotSettings
    from agent_memory.domain.runs import RunView

LevelText = Literal["read", "write"]
# Declared, checked by the domain (its messages name the grant): a level per user id.
GRANTS: JsonDict = {"additionalProperties": {"enum": ["read", "write"]}}
# A service tag's id (domain/tags.py): ECMA's \s lacks some Python blanks, so they are spelled out.
TAG_VALUE = r"[^:,\s\x1c-\x1f\x85]{1,128}"
# A topic (domain/tags.py): 1..64 lowercase letters, digits and dashes, not dashes only.
TOPIC: JsonDict = {"pattern": "^[a-z0-9-]*[a-z0-9][a-z0-9-]*$", "minLength": 1, "maxLength": 64}
# A tag a reader filters by (domain/tags.py `parse_tag`).
SERVICE_PREFIXES = "for:person|for:channel|from|org|chat|channel|app"
FILTER_TAG: JsonDict = {
    "anyOf": [
        {"type": "string", **TOPIC},
        {"type": "string", "const": "for:bot"},
        {"type": "string", "pattern": f"^(?:{SERVICE_PREFIXES}):{TAG_VALUE}$"},
    ]
}
# Declared by hand: FastAPI cannot say a str parameter is a comma-separated array.
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

    @classmethod
    def of(cls, bot: Bot, org_id: str, linked: bool) -> BotOut:
        """The Bot as someone working in `org_id` sees it: that organization's grants (a
        linked organization never sees the home organization's people)."""
        grants = bot.grants()
        levels = grants.links.get(org_id, {}) if linked else grants.levels
        return cls(
            id=bot.id,
            name=bot.name,
            organizationId=bot.org_id,
            owner=bot.owner,
            grants=dict(levels),
            linked=linked,
        )


class BotAnswer(Answer):
    bot: BotOut


class BotsAnswer(Answer):
    bots: list[BotOut]
    has_more: bool = Field(
        description="more bots follow: pass the last one's id as `starting_after`"
    )


# A link's grant changes: a level, or null to remove that person's grant.
LINK_GRANTS: JsonDict = {"additionalProperties": {"enum": ["read", "write", None]}}


class CreateLink(Body):
    organizationId: Id = Field(
        description="another organization than the bot's own: the bot's own organization "
        "is a 409 Conflict naming `organizationId` (a link there would change nothing)"
    )
    grants: dict[str, str | None] = Field(
        description='{userId: "read"|"write"|null}: a level sets that person\'s grant, null '
        "removes it; people not named keep theirs (an empty map changes nothing)",
        json_schema_extra=LINK_GRANTS,
    )


class LinkOut(Answer):
    botId: str
    organizationId: str
    grants: dict[str, LevelText]

    @classmethod
    def of(cls, bot: Bot, org_id: str) -> LinkOut:
        return cls(botId=bot.id, organizationId=org_id, grants=dict(bot.links[org_id]))


class LinkAnswer(Answer):
    link: LinkOut


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

    @classmethod
    def of(cls, entry: Entry) -> BotEntryOut:
        """An entry as API.md shows it (`confidence` for observations, `invalidatedAt` once
        set); who forgot it is not shown."""
        from agent_memory.domain.entries import EntrySource
        from agent_memory.domain.tags import shown_tags

        meta = entry.meta
        sources = [
            EntrySourceOut(entry=s.entry)
            if isinstance(s, EntrySource)
            else ItemSourceOut(chat=s.conversation or "", item=s.item)
            for s in meta.sources
        ]
        return cls(
            id=meta.id,
            layer=meta.layer,
            content=entry.content,
            tags=list(shown_tags(meta.tags)),
            sources=sources,
            status=meta.status,
            createdAt=meta.created_at,
            updatedAt=meta.updated_at,
            confidence=meta.confidence,
            invalidatedAt=meta.invalidated_at,
        )


class BotMemory(Answer):
    entries: list[BotEntryOut]
    version: int

    @classmethod
    def of(cls, shown: Shown) -> BotMemory:
        """The entries that fit in one answer (domain/bounds.py), in memory order."""
        entries = [BotEntryOut.of(e) for e in shown.entries]
        return cls(entries=fitting(entries), version=shown.version)


class RememberEntry(Body):
    tag: Literal["Remember"] = Field(alias="_tag")
    # Blank content is refused by the domain (its message); the schema says so.
    content: str = Field(min_length=1, max_length=MAX_ENTRY_CONTENT, json_schema_extra=NOT_BLANK)
    tags: list[Annotated[str, Field(json_schema_extra=TOPIC)]] = Field(
        default_factory=empty_list,
        max_length=32,
        description="topics: lowercase letters, digits, -",
    )


class ForgetEntry(Body):
    tag: Literal["Forget"] = Field(alias="_tag")
    id: Id


BotCommand = Annotated[RememberEntry | ForgetEntry, Field(discriminator="tag")]


class BotMemoryCommand(CommandBody):
    TAGS = ("Remember", "Forget")

    command: BotCommand


class BotMemoryChange(Sparse):
    optional: ClassVar[tuple[str, ...]] = ("entry",)

    entry: BotEntryOut | None = None
    version: int

    @classmethod
    def of(cls, changed: Changed) -> BotMemoryChange:
        entry = None if changed.entry is None else BotEntryOut.of(changed.entry)
        return cls(entry=entry, version=changed.version)


class LogChangeOut(Mirror):
    version: int
    at: int
    by: Literal["memory_bot", "person", "promotion"]
    ids: list[str]


class BotMemoryLog(Answer):
    changes: list[LogChangeOut]

    @classmethod
    def of(cls, changes: Sequence[LogChange]) -> BotMemoryLog:
        """The changes that fit in one answer (domain/bounds.py), newest first."""
        return cls(changes=fitting([LogChangeOut.of(c) for c in changes]))


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

    @classmethod
    def of(cls, shared: Changed) -> SharedEntry:
        """A share answers the entry it widened (its author still sees it)."""
        if shared.entry is None:
            raise ValueError("a share answers the entry it widened")
        return cls(entry=BotEntryOut.of(shared.entry), version=shared.version)


class ContextAsk(Body):
    chatId: Id
    maxLength: int | None = Field(default=None, ge=1, le=100_000)


class ContextText(Mirror):
    text: str
    ids: list[str]
    hasEntries: bool


class BotExecution(Answer):
    """A learning execution of a Bot (API.md's Execution, with its Chat and Turn)."""

    id: str
    status: Literal["waiting", "running", "succeeded", "failed", "skipped"]
    chatId: str | None
    turnId: str | None
    startedAt: int | None = None
    endedAt: int | None = None
    itemIds: list[str] = Field(default_factory=empty_list)
    applied: list[dict[str, Any]] = Field(default_factory=empty_list)
    rejected: list[dict[str, Any]] = Field(default_factory=empty_list)
    reason: str | None = None
    model: str | None = None
    error: dict[str, Any] | None = None
    note: str | None = None


class BotExecutions(Answer):
    executions: list[BotExecution]

    @classmethod
    def of(cls, runs: Sequence[RunView]) -> Self:
        """A Bot's newest runs that fit one answer, each with the Chat it read and the Turn it
        waited for (each null when there is none)."""
        from agent_memory.domain import bounds

        shown = [
            execution_json(run) | {"chatId": run.source_id, "turnId": run.turn_id} for run in runs
        ]
        return cls.model_validate({"executions": bounds.within_budget(shown)[0]})


class BudgetIn(Body):
    period: Literal["day", "month"]
    limitMicros: int = Field(ge=0, description="micro-USD of confirmed model cost per period")


class BotSettingsPatch(Body):
    """A field sent sets it, `null` removes it, a missing one stays."""

    expected: int = Field(ge=0, description="the version read; stale: 409 VersionConflict")
    instructions: Annotated[str | None, NotBlank] = Field(
        default=None,
        max_length=MAX_MEMORY_BOT_INSTRUCTIONS,
        json_schema_extra={"minLength": 1, **NOT_BLANK},
    )
    concurrency: int | None = Field(default=None, ge=1, le=MAX_MEMORY_BOT_CONCURRENCY)
    budget: BudgetIn | None = None

    def changes(self) -> dict[str, Any]:
        """The fields sent, as the domain reads them."""
        return self.model_dump(include=self.model_fields_set - {"expected"})


class BudgetOut(Mirror):
    period: Literal["day", "month"]
    limitMicros: int


class BotSettingsOut(Answer):
    version: int
    instructions: str | None
    concurrency: int | None
    budget: BudgetOut | None
    spentMicros: int

    @classmethod
    def of(cls, settings: BotSettings, spent_micros: int) -> BotSettingsOut:
        budget = settings.budget
        return cls(
            version=settings.version,
            instructions=settings.instructions,
            concurrency=settings.concurrency,
            budget=BudgetOut.of(budget) if budget is not None else None,
            spentMicros=spent_micros,
        )
