"""The memory Bot of a bot: its learning executions and settings (API.md, "Bot memory")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from agent_memory.api.contracts.base import NOT_BLANK, Answer, Body, Mirror, NotBlank, empty_list
from agent_memory.domain.bounds import MAX_MEMORY_BOT_CONCURRENCY, MAX_MEMORY_BOT_INSTRUCTIONS

if TYPE_CHECKING:
    from agent_memory.domain.memory_bot import BotSettings


class BotExecution(Answer):
    """A learning execution of a Bot (API.md's Execution, with its Chat and Turn)."""

    id: str
    status: Literal["waiting", "running", "succeeded", "failed", "skipped"]
    chatId: str | None
    turnId: str | None
    startedAt: int | None = None
    endedAt: int | None = None
    itemIds: list[str] = Field(default_factory=empty_list)
    applied: list[dict[str, Any]] = Field(default_factory=empty_list)
    rejected: list[dict[str, Any]] = Field(default_factory=empty_list)
    reason: str | None = None
    model: str | None = None
    error: dict[str, Any] | None = None
    note: str | None = None


class BotExecutions(Answer):
    executions: list[BotExecution]


class BudgetIn(Body):
    period: Literal["day", "month"]
    limitMicros: int = Field(ge=0, description="micro-USD of confirmed model cost per period")


class BotSettingsPatch(Body):
    """A field sent sets it, `null` removes it, a missing one stays."""

    expected: int = Field(ge=0, description="the version read; stale: 409 VersionConflict")
    instructions: Annotated[str | None, NotBlank] = Field(
        default=None,
        max_length=MAX_MEMORY_BOT_INSTRUCTIONS,
        json_schema_extra={"minLength": 1, **NOT_BLANK},
    )
    concurrency: int | None = Field(default=None, ge=1, le=MAX_MEMORY_BOT_CONCURRENCY)
    budget: BudgetIn | None = None

    def changes(self) -> dict[str, Any]:
        """The fields sent, as the domain reads them."""
        return self.model_dump(include=self.model_fields_set - {"expected"})


class BudgetOut(Mirror):
    period: Literal["day", "month"]
    limitMicros: int


class BotSettingsOut(Answer):
    version: int
    instructions: str | None
    concurrency: int | None
    budget: BudgetOut | None
    spentMicros: int

    @classmethod
    def of(cls, settings: BotSettings, spent_micros: int) -> BotSettingsOut:
        budget = settings.budget
        return cls(
            version=settings.version,
            instructions=settings.instructions,
            concurrency=settings.concurrency,
            budget=BudgetOut.of(budget) if budget is not None else None,
            spentMicros=spent_micros,
        )
