"""Lists of sessions and items, and a session's deletion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from agent_memory.api.contracts.base import Answer, Mirror
from agent_memory.api.contracts.sessions import SessionOut

if TYPE_CHECKING:
    # Annotations of `of` only: a cold start that lists nothing does not load them.
    from agent_memory.domain.sessions import Session


class SessionList(Answer):
    object: Literal["list"] = "list"
    data: list[SessionOut]
    has_more: bool

    @classmethod
    def of(cls, page: tuple[list[Session], bool]) -> SessionList:
        sessions, more = page
        return cls(data=[SessionOut.of(s) for s in sessions], has_more=more)


class SessionItemOut(Mirror):
    id: str = Field(description="The item's id (`i-01`, ...)")
    object: Literal["session_item"] = "session_item"
    role: Literal["user", "assistant", "tool", "notice"]
    content: str
    app: str | None
    model: str | None = Field(description="The Turn's model, when the Turn named one")
    turnId: str | None = Field(description="The Turn that added it (null: a memory edit)")
    createdAt: int = Field(description="Milliseconds since the epoch")


class SessionItemList(Answer):
    object: Literal["list"] = "list"
    data: list[SessionItemOut]
    has_more: bool


class DeletedSession(Answer):
    id: str
    object: Literal["session"] = "session"
    deleted: Literal[True] = True
    items: int = Field(description="Items this call removed")
