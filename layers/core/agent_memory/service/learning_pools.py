"""The seam between the learning workflow and the pools it teaches (`LearningPool`).

The workflow never touches a pool's rows nor knows its task; a pool never talks to Step
Functions or a model. `apply_cycle` commits a pool's decision and asks again on a lost race.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.evidence import EvidenceItem, KnownEntry
from agent_memory.domain.runs import RunView
from agent_memory.domain.tasks.base import Ask
from agent_memory.persistence.keys import READ_POSITION
from agent_memory.persistence.retrying import AGAIN, Again, until_it_lands
from agent_memory.ports import Action, Execution, ModelReply, Store

# Open: any registered pool kind ("session", "agent", a bot's, a test's).
PoolKind = str


def json_size(text: str) -> int:
    """The bytes `text` takes in sealed evidence: UTF-8 of its JSON string."""
    return len(json.dumps(text, ensure_ascii=False).encode())


@dataclass(frozen=True)
class SourceRef:
    """Where a run's evidence comes from inside its pool: a session, a chat, a thread."""

    kind: str
    id: str


@dataclass(frozen=True)
class PoolRef:
    kind: PoolKind
    org_id: str
    pool_id: str  # the session id, the agent id, the bot id
    # The conversation a run reads when the pool spans several.
    source: SourceRef | None = None


# A pool's own part of its evidence: a dataclass of its kind (JSON as `asdict`), or None.
D = TypeVar("D")


@dataclass(frozen=True)
class Evidence(Generic[D]):
    """What one learning run reads: the unprocessed items after the read position."""

    pool: PoolRef
    position: int  # the commit is conditional on it
    upto: int  # the last item read: where the read position moves
    items: tuple[EvidenceItem, ...]
    memory: tuple[KnownEntry, ...]
    model: str | None
    allowed_kinds: tuple[str, ...]
    detail: D  # what else the pool's `task` and `change` need
    person: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What applying one model answer did: kept on the execution, shown to clients."""

    applied: list[dict[str, str]]  # [{"key": ..., "op": "remember"|"forget"}]
    rejected: list[dict[str, Any]]  # [{"change": {...}, "reason": "..."}]


# The actions that record the execution's end, committed with the memory change.
FinishActions = Callable[[Outcome], Sequence[Action]]
# How often a run's answer is applied again (to a pool that moved, to what is still unread);
# then the step fails as retryable and the workflow applies the same answer later.
APPLY_TRIES = 3


@dataclass(frozen=True)
class Change:
    """One decision of a pool as one transaction, and what it does."""

    actions: Sequence[Action]
    outcome: Outcome
    # Work that follows once the transaction holds.
    then: Callable[[], None] | None = None


class AlreadyApplied(Exception):
    """The read position already moved past this evidence: another run applied it."""


class Skipped(Exception):
    """The run ends skipped with `reason` as its note (a fixed sentence, never content)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Deferred(Skipped):
    """Skipped now, and saved again to start when `event` happens (a new budget period)."""

    def __init__(self, event: str, note: str) -> None:
        super().__init__(note)
        self.event = event


class LearningPool(Protocol):
    kind: PoolKind

    def charge(self, evidence: Evidence[Any], reply: ModelReply) -> Sequence[Action]:
        """Actions charging the pool for one model call, written before its answer."""
        ...

    def task(self, evidence: Evidence[Any]) -> Ask[Any, Any] | None:
        """The model task whose parsed answer `change` gets; None asks no model."""
        ...

    def detail_of(self, data: Any) -> Any:
        """The evidence detail from its `dataclasses.asdict` form."""
        ...

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """Items after the read position through `upto`; None when none; may raise Skipped."""
        ...

    def change(
        self, evidence: Evidence[Any], changes: Any, finish: FinishActions
    ) -> Change | Again:
        """Judge `changes` on the newest state as ONE transaction: the accepted changes,
        the read position's move to `evidence.upto` (condition `READ_POSITION` unless the
        pool's version guards it) and `finish(outcome)`. Refuses a change citing an item
        outside `evidence.items`, so no item is learned twice. Raises AlreadyApplied when
        the read position moved; answers AGAIN when its read saw the pool move."""
        ...

    def lost(self, error: WriteConflict) -> bool:
        """Whether the transaction lost to another writer of the pool (decide again)."""
        ...


# "throttled" is a skip already recorded with its reason; clients see "skipped".
StartAnswer = Literal["started", "skipped", "throttled"]


class Workflow(Protocol):
    """What a use case asks of durable learning (`service/learning_start.LearningStarts`)."""

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> StartAnswer: ...

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[RunView]: ...

    def wait(self, pool: PoolRef, *, event: str, reason: str, upto: int | None = None) -> str: ...

    def release(self, event: str, *, upto: int | None = None) -> list[Execution]: ...


class PoolDefaults:
    """No budget to charge, guarded by the read position alone; the evidence detail is the
    dataclass `detail_type` (its fields as `asdict` gives them), or none."""

    detail_type: ClassVar[type[Any] | None] = None

    def charge(self, evidence: Evidence[Any], reply: ModelReply) -> Sequence[Action]:
        return ()

    def lost(self, error: WriteConflict) -> bool:
        return False

    def detail_of(self, data: Any) -> Any:
        return None if self.detail_type is None else self.detail_type(**data)


def apply_cycle(
    store: Store,
    pool: LearningPool,
    evidence: Evidence[Any],
    changes: Any,
    finish: FinishActions,
) -> Outcome:
    """Apply a run's answer to `pool`, deciding again while other writers win the race."""

    def attempt() -> Outcome | Again:
        change = pool.change(evidence, changes, finish)
        if isinstance(change, Again):
            return AGAIN
        try:
            store.write(change.actions)
        except WriteConflict as error:
            if error.condition == READ_POSITION:
                raise AlreadyApplied("the read position moved: another run applied") from None
            raise
        if change.then is not None:
            change.then()
        return change.outcome

    return until_it_lands(
        attempt,
        lambda: Unavailable(f"the {pool.kind} pool kept changing while learning was applied"),
        tries=APPLY_TRIES,
        lost=pool.lost,
    )
