"""Agent memory and promotion (API.md, "Agents and sessions"; seed 000, "Agent memory")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from agent_memory.api.contracts.base import Answer, CommandBody, Envelope, Mirror
from agent_memory.api.contracts.memory_text import ForgetBody, KeyedEntryOut, RememberBody

if TYPE_CHECKING:
    # Loaded with the services, not with the routes: a cold start stays cheap.
    from agent_memory.domain.entries import KeyedMemory, Source

LastingKind = Literal["procedure", "preference", "decision"]


class AgentRemember(RememberBody):
    kind: LastingKind


class AgentForget(ForgetBody):
    pass


AgentCommand = Annotated[AgentRemember | AgentForget, Field(discriminator="tag")]


class AgentMemoryCommand(CommandBody):
    """A person's change: `expected` is the version last read."""

    TAGS = ("Remember", "Forget")

    expected: int = Field(ge=0)
    command: AgentCommand


class SourceOut(Answer):
    session: str
    item: str


class AgentEntryOut(KeyedEntryOut):
    sources: list[SourceOut]

    @classmethod
    def source(cls, source: Source) -> SourceOut | None:
        """An item's session and id; other sources are not shown."""
        from agent_memory.domain.entries import ItemSource

        if not isinstance(source, ItemSource):
            return None
        return SourceOut(session=source.conversation or "", item=source.item)


class AgentMemoryAnswer(Answer):
    entries: dict[str, AgentEntryOut]
    version: int

    @classmethod
    def of(cls, memory: KeyedMemory) -> AgentMemoryAnswer:
        entries = {e.meta.name: AgentEntryOut.of(e) for e in memory.entries}
        return cls(entries=entries, version=memory.version)


class ChangeOut(Mirror):
    version: int
    at: int
    by: Literal["consolidation", "person", "promotion"]
    keys: list[str]
    person: str | None = Field(default=None, description="Who made a person's change")
    serviceKeyId: str | None = Field(
        default=None,
        validation_alias="service_key",
        description="The service key a person's change came through",
    )


class MemoryLog(Envelope):
    changes: list[ChangeOut]
