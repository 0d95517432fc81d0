"""The first line of a person's export (`GET /v1/me/export`): what follows, for whom, and
when (milliseconds since the epoch)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agent_memory.api.contracts.base import Mirror


class ExportHeader(Mirror):
    format: Literal["agent-memory-export"] = "agent-memory-export"
    version: Literal[1] = 1
    userId: str
    organizationId: str = Field(validation_alias="org_id")
    exportedAt: int
