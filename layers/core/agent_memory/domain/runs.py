"""A learning run as its pool's execution list shows it, and the rules that decide what it
shows: a run running past its limit failed, and a failed run says why in words."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from agent_memory.domain.learning_notes import failure_note

RunStatus = Literal["waiting", "running", "succeeded", "failed", "skipped"]

# The state machine's TimeoutSeconds plus a margin: a run still "running" lost its execution.
RUN_LIMIT_MS = (300 + 300) * 1000
TIMED_OUT = "States.Timeout"


@dataclass(frozen=True)
class RunError:
    type: str | None
    message: str


@dataclass(frozen=True)
class RunView:
    """One run of a pool. `error` is shown only when the run failed; `source` is the
    conversation it read (`("session", id)`, `("chat", id)`), `kind` the thread step that
    ran it, `turn_id` the Turn whose end a Bot's run waited for."""

    id: str
    status: RunStatus
    started_at: int | None
    ended_at: int | None
    reason: str
    model: str | None
    item_ids: list[str] = field(default_factory=list)
    applied: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    source: tuple[str, str] | None = None
    error: RunError | None = None
    note: str | None = None
    kind: str | None = None
    turn_id: str | None = None

    @property
    def source_id(self) -> str | None:
        return None if self.source is None else self.source[1]


def seen_at(run: RunView, running_since: int, now: int) -> RunView:
    """`run` as its recorded row says it at `now`: running past `RUN_LIMIT_MS` since
    `running_since`, it failed (its execution was lost); only a failed run keeps its
    error, and its note is the recorded one, else its error's in words (so a run that
    timed out while listed says it too)."""
    if run.status == "running" and now - running_since > RUN_LIMIT_MS:
        run = replace(
            run, status="failed", error=RunError(TIMED_OUT, "the run did not finish in time")
        )
    if run.status != "failed":
        return replace(run, error=None)
    error = run.error or RunError(None, "")
    return replace(run, error=error, note=run.note or failure_note(str(error.type)))
