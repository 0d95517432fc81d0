from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_memory.api.contracts.base import Envelope, Mirror


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
