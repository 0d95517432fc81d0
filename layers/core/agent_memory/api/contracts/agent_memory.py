"""Agent memory and promotion (API.md, "Agents and sessions"; seed 000, "Agent memory")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator

from agent_memory.api.contracts.base import NOT_BLANK, Answer, Body, NotBlank, require_known_tag
from agent_memory.api.contracts.memory_text import POOL_BOUND

if TYPE_CHECKING:
    # Loaded with the services (every service module imports them), not with the routes:
    # `to_domain` and `of` run once the request has its services (a cold start stays cheap).
    from agent_memory.domain import session_memory as memory
    from agent_memory.domain.agent_memory import LogChange
    from agent_memory.domain.entries import Entry, KeyedMemory

LastingKind = Literal["procedure", "preference", "decision"]


class AgentRemember(Body):
    tag: Literal["Remember"] = Field(alias="_tag")
    key: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$")
    content: Annotated[str, NotBlank] = Field(
        min_length=1, max_length=8000, description=POOL_BOUND, json_schema_extra=NOT_BLANK
    )
    kind: LastingKind

    def to_domain(self) -> memory.Remember | memory.Forget:
        from agent_memory.domain import session_memory as memory

        return memory.Remember(self.key, self.content, self.kind)


class AgentForget(Body):
    tag: Literal["Forget"] = Field(alias="_tag")
    key: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$")

    def to_domain(self) -> memory.Remember | memory.Forget:
        from agent_memory.domain import session_memory as memory

        return memory.Forget(self.key)


COMMAND_TAGS = ("Remember", "Forget")
AgentCommand = Annotated[AgentRemember | AgentForget, Field(discriminator="tag")]


class AgentMemoryCommand(Body):
    """A person's change: `expected` is the version last read."""

    expected: int = Field(ge=0)
    command: AgentCommand

    @field_validator("command", mode="wrap")
    @classmethod
    def _tag_first(cls, value: Any, handler: Any) -> Any:
        """A missing or unknown `_tag` is reported at `["command", "_tag"]`."""
        require_known_tag(value, COMMAND_TAGS)
        return handler(value)


class SourceOut(Answer):
    session: str
    item: str


class AgentEntryOut(Answer):
    key: str
    content: str
    kind: str
    sources: list[SourceOut]
    updatedAt: int
    status: Literal["active", "retracted"]

    @classmethod
    def of(cls, entry: Entry) -> AgentEntryOut:
        from agent_memory.domain.entries import ItemSource

        meta = entry.meta
        return cls(
            key=meta.name,
            content=entry.content,
            kind=meta.kind,
            sources=[
                SourceOut(session=s.conversation or "", item=s.item)
                for s in meta.sources
                if isinstance(s, ItemSource)
            ],
            updatedAt=meta.updated_at,
            status=meta.status,
        )


class AgentMemoryAnswer(Answer):
    entries: dict[str, AgentEntryOut]
    version: int

    @classmethod
    def of(cls, memory: KeyedMemory) -> AgentMemoryAnswer:
        entries = {e.meta.name: AgentEntryOut.of(e) for e in memory.entries}
        return cls(entries=entries, version=memory.version)


class ChangeOut(Answer):
    version: int
    at: int
    by: Literal["consolidation", "person", "promotion"]
    keys: list[str]


class MemoryLog(Answer):
    changes: list[ChangeOut]

    @classmethod
    def of(cls, changes: list[LogChange]) -> MemoryLog:
        return cls(
            changes=[
                ChangeOut(version=c.version, at=c.at, by=c.by, keys=list(c.keys)) for c in changes
            ]
        )
