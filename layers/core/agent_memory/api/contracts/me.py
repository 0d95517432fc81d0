from __future__ import annotations

from typing import Literal

from agent_memory.api.contracts.base import Answer


class CallerOut(Answer):
    id: str | None
    organizationId: str | None
    role: Literal["member", "admin", "service-admin"]


class MeAnswer(Answer):
    user: CallerOut
