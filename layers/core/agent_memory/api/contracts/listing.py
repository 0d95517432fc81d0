"""Lists of sessions and items, and a session's deletion."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_memory.api.contracts.base import Answer, ListOf, Mirror
from agent_memory.api.contracts.sessions import SessionOut


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
