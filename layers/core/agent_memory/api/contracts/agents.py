"""Agents and their lists (API.md, "Agents and sessions"), apart from the session contracts."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agent_memory.api.contracts.base import (
    NOT_BLANK,
    Answer,
    Body,
    Envelope,
    ListOf,
    Mirror,
    NotBlank,
    empty_list,
)


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


class AgentAnswer(Envelope):
    agent: AgentOut


class AgentList(ListOf[AgentOut]):
    pass


class DeletedAgent(Answer):
    id: str
    object: Literal["agent"] = "agent"
    deleted: Literal[True] = True
    sessions: int = Field(description="Sessions of the agent this call removed")
    threads: int = Field(description="Threads of the agent this call removed (everyone's)")
