from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agent_memory.api.contracts.base import (
    ID_PATTERN,
    MODEL_NAME,
    MODEL_PATTERN_PATTERN,
    Answer,
    Body,
)


class CreateOrganization(Body):
    id: str | None = Field(default=None, min_length=1, max_length=64, pattern=ID_PATTERN)
    name: str = Field(min_length=1, max_length=200)


class CreatedOrganization(Answer):
    id: str
    name: str


class CreateUser(Body):
    organizationId: str = Field(min_length=1, max_length=64)
    id: str | None = Field(default=None, min_length=1, max_length=64, pattern=ID_PATTERN)
    name: str | None = Field(default=None, max_length=200)
    role: Literal["member", "admin"] = "member"


class CreatedUser(Answer):
    id: str
    organizationId: str
    role: str
    token: str
    tokenPrefix: str


class IssueToken(Body):
    pass


class IssuedToken(Answer):
    token: str
    tokenPrefix: str


class MemorySwitches(Body):
    use: bool | None = None
    generate: bool | None = None


class SettingsPatch(Body):
    memory: MemorySwitches | None = None
    agentMemory: bool | None = None
    helperModel: str | None = Field(default=None, max_length=200, json_schema_extra=MODEL_NAME)
    botMemory: bool | None = None
    botMemoryModel: str | None = Field(default=None, max_length=200, json_schema_extra=MODEL_NAME)
    allowedModels: (
        list[
            Annotated[
                str, Field(max_length=200, json_schema_extra={"pattern": MODEL_PATTERN_PATTERN})
            ]
        ]
        | None
    ) = Field(default=None, max_length=100)


class MemorySettings(Answer):
    use: bool
    generate: bool


class OrganizationSettings(Answer):
    memory: MemorySettings
    agentMemory: bool
    helperModel: str | None
    botMemory: bool
    botMemoryModel: str | None
    allowedModels: list[str] | None
