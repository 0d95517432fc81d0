"""Agents and their lists (API.md, "Agents and sessions"), apart from the session contracts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field

from agent_memory.api.contracts.base import NOT_BLANK, Answer, Body, Mirror, NotBlank, empty_list

if TYPE_CHECKING:
    # Annotations of `of` only: loaded with the services, not with the routes.
    from agent_memory.domain.agents import Agent


class CreateAgent(Body):
    name: Annotated[str, NotBlank] = Field(
        min_length=1, max_length=200, json_schema_extra=NOT_BLANK
    )
    members: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=empty_list, max_length=100
    )


class AgentOut(Mirror):
    id: str
    name: str
    owner: str
    members: list[str]


class AgentAnswer(Answer):
    agent: AgentOut


class AgentList(Answer):
    object: Literal["list"] = "list"
    data: list[AgentOut]
    has_more: bool

    @classmethod
    def of(cls, page: tuple[list[Agent], bool]) -> AgentList:
        agents, more = page
        return cls(data=[AgentOut.of(a) for a in agents], has_more=more)


class DeletedAgent(Answer):
    id: str
    object: Literal["agent"] = "agent"
    deleted: Literal[True] = True
    sessions: int = Field(description="Sessions of the agent this call removed")
    threads: int = Field(description="Threads of the agent this call removed (everyone's)")
