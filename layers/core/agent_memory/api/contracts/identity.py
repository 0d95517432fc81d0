from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field
from pydantic.alias_generators import to_camel

from agent_memory.api.contracts.base import (
    ID_PATTERN,
    MODEL_NAME,
    MODEL_PATTERN_PATTERN,
    Answer,
    Body,
    Envelope,
    Mirror,
)

if TYPE_CHECKING:
    # The annotation of `ErasedUser.counted` only.
    from agent_memory.domain.erasure import Erased


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
    # Needed only when the id exists in more than one organization (ids are per organization).
    organizationId: str | None = Field(default=None, min_length=1, max_length=64)


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
    autoProvisionUsers: bool | None = None


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
    autoProvisionUsers: bool


class ErasedUser(Mirror):
    """What one erasure removed; a repeated erasure counts only what it removed itself."""

    userId: str
    organizationId: str
    sessions: int
    items: int
    threads: int
    messages: int
    workingMemory: int
    botEntries: int = Field(description="Bot memory entries (from:<user> and built on them)")
    agents: int = Field(description="Agents the person owned, deleted with all they held")
    observations: int = Field(description="Observation chunks of the deleted threads")
    chats: int = Field(description="Chats the person owned")
    chatItems: int = Field(description="Items of those chats")
    agentMemories: int = Field(description="agent_memories about the person (entity actor)")

    @classmethod
    def counted(cls, org_id: str, user_id: str, erased: Erased) -> ErasedUser:
        """The counts read from `erased` by their snake_case names, as a `Mirror` reads."""
        return cls.model_validate({"user_id": user_id, "organization_id": org_id, **asdict(erased)})


class AddUser(Body):
    id: str | None = Field(default=None, min_length=1, max_length=64, pattern=ID_PATTERN)
    name: str | None = Field(default=None, max_length=200)
    role: Literal["member", "admin"] = "member"


class UserOut(Mirror):
    id: str
    name: str | None
    role: str
    createdAt: int


class AddedUser(Envelope):
    user: UserOut


class OrgUsers(Answer):
    users: list[UserOut]
    next: str | None = Field(description="Pass as `after` for the next page; null at the end")


class RenameUser(Body):
    name: str = Field(min_length=1, max_length=200)


class OrganizationOut(Mirror):
    id: str
    name: str
    createdAt: int
    users: int = Field(description="How many people it holds")
    deleting: bool = Field(description="Its deletion began and was cut short: DELETE it again")


class Organizations(Answer):
    organizations: list[OrganizationOut]
    next: str | None = Field(description="Pass as `after` for the next page; null at the end")


class DeletedOrganization(Answer):
    deleted: dict[str, int] = Field(
        description="What this call removed, by kind; a call that finishes one cut short"
        " counts only what it removed itself"
    )

    @classmethod
    def counted(cls, counts: Mapping[str, int]) -> DeletedOrganization:
        """The service's counts, named by their kinds' snake_case names, in camelCase."""
        return cls(deleted={to_camel(kind): count for kind, count in counts.items()})


class CreateServiceKey(Body):
    name: str = Field(min_length=1, max_length=200)


class CreatedServiceKey(Answer):
    id: str
    name: str
    key: str = Field(description="Shown once; only its SHA-256 is stored")
    createdAt: int


class ServiceKeyOut(Mirror):
    id: str
    name: str
    prefix: str
    createdAt: int
    lastUsedAt: int | None


class ServiceKeys(Envelope):
    serviceKeys: list[ServiceKeyOut]


class CallerOut(Mirror):
    id: str | None = Field(validation_alias="user_id")
    organizationId: str | None = Field(validation_alias="org_id")
    role: Literal["member", "admin", "service-admin", "service-key"]
    serviceKeyId: str | None = Field(
        default=None,
        validation_alias="key_id",
        description="The service key the request came through, with Act-As",
    )


class MeAnswer(Envelope):
    user: CallerOut


class MyToken(Mirror):
    prefix: str = Field(description="The token's public prefix (never the token or its hash)")
    issuedBy: str = Field(
        description="Who issued it: a user id (the caller's own, or an admin's), or \"admin token\""
    )
    createdAt: int = Field(description="Milliseconds since the epoch")


class MyTokens(Envelope):
    """The caller's own tokens, oldest first."""

    tokens: list[MyToken]
