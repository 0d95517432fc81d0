"""Lists of agents, sessions and items, and deletions (issue 17); erasure's answer is in
contracts/identity.py, with the admin routes (a cold start of theirs loads no session model).

Lists page as agent_memories do (API.md, seed 004): `limit` 1..100 (default 10),
`starting_after` the id of the last object of the previous page, and the answer
`{"object": "list", "data": [...], "has_more": bool}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from fastapi import Query
from pydantic import Field

from agent_memory.api.contracts.base import Answer
from agent_memory.api.contracts.sessions import AgentOut, SessionAnswer, SessionOut

if TYPE_CHECKING:
    # Annotations of `of` only: a cold start that lists nothing does not load them.
    from agent_memory.domain.agents import Agent
    from agent_memory.domain.sessions import Session
    from agent_memory.service.sessions import SessionItem

MAX_PAGE = 100
# The page size and the position of a list, as agent_memories take them.
PageLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="1..100 objects per page")]
Cursor = Annotated[str, Query(min_length=1, max_length=200)]


class AgentList(Answer):
    object: Literal["list"] = "list"
    data: list[AgentOut]
    has_more: bool

    @classmethod
    def of(cls, page: tuple[list[Agent], bool]) -> AgentList:
        agents, more = page
        return cls(data=[AgentOut.of(a) for a in agents], has_more=more)


class SessionList(Answer):
    object: Literal["list"] = "list"
    data: list[SessionOut]
    has_more: bool

    @classmethod
    def of(cls, page: tuple[list[Session], bool]) -> SessionList:
        sessions, more = page
        return cls(data=[SessionAnswer.of(s).session for s in sessions], has_more=more)


class SessionItemOut(Answer):
    id: str = Field(description="The item's id (`i-01`, ...)")
    object: Literal["session_item"] = "session_item"
    role: Literal["user", "assistant", "tool", "notice"]
    content: str
    app: str | None
    model: str | None = Field(description="The Turn's model, when the Turn named one")
    turnId: str | None = Field(description="The Turn that added it (null: a memory edit)")
    createdAt: int = Field(description="Milliseconds since the epoch")

    @classmethod
    def of(cls, item: SessionItem) -> SessionItemOut:
        return cls(
            id=item.id,
            role=item.role,
            content=item.content,
            app=item.app,
            model=item.model,
            turnId=item.turn_id,
            createdAt=item.created_at,
        )


class SessionItemList(Answer):
    object: Literal["list"] = "list"
    data: list[SessionItemOut]
    has_more: bool


class DeletedSession(Answer):
    id: str
    object: Literal["session"] = "session"
    deleted: Literal[True] = True
    items: int = Field(description="Items this call removed")


class DeletedAgent(Answer):
    id: str
    object: Literal["agent"] = "agent"
    deleted: Literal[True] = True
    sessions: int = Field(description="Sessions of the agent this call removed")
    threads: int = Field(description="Threads of the agent this call removed (everyone's)")
