"""Sessions, their items and session memory (API.md, "Agents and sessions"; seed 000)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import ConfigDict, Field

from agent_memory.api.contracts.base import (
    APP_ONLY_ON_TOOLS,
    MODEL_NAME,
    Answer,
    Body,
    CommandBody,
    Envelope,
    ListOf,
    Mirror,
)
from agent_memory.api.contracts.memory_text import ForgetBody, KeyedEntryOut, RememberBody
from agent_memory.domain.bounds import (
    MAX_APP_LENGTH,
    MAX_ITEM_BYTES,
    MAX_SESSION_ITEMS,
    MAX_TURN_ITEMS,
    SkipReason,
)

if TYPE_CHECKING:
    # Loaded with the services, not with the routes: a cold start stays cheap.
    from agent_memory.domain import session_memory as memory
    from agent_memory.domain.entries import Source
    from agent_memory.service.session_memory import MemoryRead
    from agent_memory.service.sessions import TurnResult

Kind = Literal["fact", "decision", "preference", "procedure", "hypothesis"]
Learning = Literal["started", "skipped"]


# POST /v1/sessions/{sessionId}/promote's body (the agent memory route, routers/sessions.py).
class Promote(Body):
    """Left out, the name is derived from the session's agent."""

    name: str | None = Field(default=None, min_length=1, max_length=200)


class CreateSession(Body):
    agentId: str = Field(min_length=1, max_length=100)
    # Left out: the deployment's default model; null: a Session without a model.
    model: str | None = Field(default=None, max_length=200, json_schema_extra=MODEL_NAME)
    kind: Literal["chat", "review", "subagent"] = "chat"


class SessionOut(Mirror):
    id: str
    agentId: str
    owner: str
    kind: str
    model: str | None
    head: str
    revision: int
    parentId: str | None


class SessionAnswer(Envelope):
    session: SessionOut


class TurnItem(Body):
    model_config = ConfigDict(json_schema_extra=APP_ONLY_ON_TOOLS)

    role: Literal["user", "assistant", "tool", "notice"]
    # The character bound is a 400, the byte bound a 413 (docs/adr/0018-schema-limits-are-400s.md).
    content: str = Field(
        max_length=MAX_ITEM_BYTES,
        description=f"At most {MAX_ITEM_BYTES} characters (400 beyond) and {MAX_ITEM_BYTES} "
        "bytes as UTF-8 (413 TooLarge beyond).",
    )
    app: str | None = Field(default=None, min_length=1, max_length=MAX_APP_LENGTH)


class PostTurn(Body):
    model: str | None = Field(default=None, max_length=200, json_schema_extra=MODEL_NAME)
    items: list[TurnItem] = Field(
        min_length=1,
        max_length=MAX_TURN_ITEMS,
        description=(
            f"1 to {MAX_TURN_ITEMS} items (400 beyond); a session holds at most "
            f"{MAX_SESSION_ITEMS} items in all (413 TooLarge at items)."
        ),
    )
    expected: str | None = Field(default=None, max_length=100)
    revision: int | None = Field(default=None, ge=0)


_LEARNING_REASON = (
    "Why `learning` is skipped (only then present): `appOnly` (the Turn only runs an App "
    "action), `generateOff` (the session's `generate` switch), `noModel` (no model named), "
    "`modelNotConfigured` (a provider this deployment has not configured), "
    "`workflowUnreachable` (no learning workflow here, or it did not answer), `throttled` "
    "(the organization's model-call quota), `unavailable` (the session's switches could not "
    "be read). The Turn is stored either way."
)


class TurnOut(Mirror):
    id: str = Field(validation_alias="turn_id")
    itemIds: list[str]
    learning: Learning
    learningReason: SkipReason | None = Field(default=None, description=_LEARNING_REASON)
    agentLearning: Learning


class TurnAnswer(Answer):
    session: SessionOut
    turn: TurnOut

    @classmethod
    def of(cls, result: TurnResult) -> TurnAnswer:
        return cls(session=SessionOut.of(result.session), turn=TurnOut.of(result))


class SessionList(ListOf[SessionOut]):
    pass


class SessionItemOut(Mirror):
    id: str = Field(description="The item's id (`i-01`, ...)")
    object: Literal["session_item"] = "session_item"
    role: Literal["user", "assistant", "tool", "notice"]
    content: str
    app: str | None
    model: str | None = Field(description="The Turn's model, when the Turn named one")
    turnId: str | None = Field(description="The Turn that added it (null: a memory edit)")
    createdAt: int = Field(description="Milliseconds since the epoch")


class SessionItemList(ListOf[SessionItemOut]):
    pass


class DeletedSession(Answer):
    id: str
    object: Literal["session"] = "session"
    deleted: Literal[True] = True
    items: int = Field(description="Items this call removed")


class ForkSession(Body):
    pass


class RememberCommand(RememberBody):
    kind: Kind


class ForgetCommand(ForgetBody):
    pass


class ConfigureCommand(Body):
    """true/false sets a switch, null resets it to the organization's default, a missing
    field keeps it."""

    tag: Literal["Configure"] = Field(alias="_tag")
    use: bool | None = None
    generate: bool | None = None

    def to_domain(self) -> memory.Command:
        from agent_memory.domain import session_memory as memory

        return memory.Configure(self.model_dump(exclude_unset=True, exclude={"tag"}))


class RefreshCommand(Body):
    tag: Literal["Refresh"] = Field(alias="_tag")

    def to_domain(self) -> memory.Command:
        from agent_memory.domain import session_memory as memory

        return memory.Refresh()


Command = Annotated[
    RememberCommand | ForgetCommand | ConfigureCommand | RefreshCommand,
    Field(discriminator="tag"),
]


class MemoryCommand(CommandBody):
    TAGS = ("Remember", "Forget", "Configure", "Refresh")

    expected: str = Field(max_length=100)
    revision: int = Field(ge=0)
    command: Command


class SessionEntryOut(KeyedEntryOut):
    @classmethod
    def source(cls, source: Source) -> str:
        """The item's id, or the entry's it came from."""
        from agent_memory.domain.entries import ItemSource

        return source.item if isinstance(source, ItemSource) else source.entry


class Switches(Answer):
    use: bool
    generate: bool


class SessionMemory(Answer):
    entries: dict[str, SessionEntryOut]
    processed: list[str]
    settings: Switches
    overrides: dict[str, bool]

    @classmethod
    def of(cls, memory: MemoryRead) -> SessionMemory:
        return cls(
            entries={e.meta.name: SessionEntryOut.of(e) for e in memory.entries},
            processed=memory.session.processed_ids(),
            settings=Switches(**memory.switches),
            overrides=dict(memory.session.overrides),
        )
