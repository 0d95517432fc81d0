"""The seam between the learning workflow and the memory pools it teaches.

The workflow (service/learning.py, functions/learning_steps) is built once; each kind of
pool (session memory, agent memory, bot memory, a thread's steps, or a test's toy pool)
plugs in its rules and its model task by implementing `LearningPool` and registering with
the workflow. The workflow never touches a pool's rows and never knows its task; a pool
never talks to Step Functions or a model.

Every pool applies an answer through the one cycle, `apply_cycle`: the pool reads its
newest state and decides in domain code (`LearningPool.change`), the cycle commits that
one transaction conditionally and, when another writer of the pool won the race
(`LearningPool.lost`), asks the pool to decide again on what it reads then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.tasks.base import Ask
from agent_memory.persistence.keys import READ_POSITION
from agent_memory.ports import Action, EvidenceItem, KnownEntry, ModelReply, Store
from agent_memory.service.retrying import AGAIN, Again, until_it_lands

# Open: any registered pool kind ("session", "agent", a bot's, a test's).
PoolKind = str


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
    # The conversation whose items a run reads, when the pool spans several (an agent's
    # sessions, a bot's chats); its executions stay the pool's. A bare id names a session.
    source: SourceRef | None = None

    def __post_init__(self) -> None:
        if isinstance(self.source, str):
            object.__setattr__(self, "source", SourceRef("session", self.source))

    @property
    def session(self) -> str | None:
        """The session a run reads, when its source is one (seed 000's agent memory)."""
        source = self.source
        return source.id if source is not None and source.kind == "session" else None


# A pool's own part of its evidence: a dataclass of its kind (JSON as `asdict`), or None.
D = TypeVar("D")


@dataclass(frozen=True)
class Evidence(Generic[D]):
    """What one learning run reads: the unprocessed items after the read position."""

    pool: PoolRef
    # The read position the run starts from; the commit is conditional on it.
    position: int
    # The position the run moves to when its result is applied (the last item read).
    upto: int
    items: tuple[EvidenceItem, ...]
    memory: tuple[KnownEntry, ...]
    model: str | None
    allowed_kinds: tuple[str, ...]
    # What else the pool's `task` and `change` need of what the run read (its `detail_of`
    # reads it back from the JSON the run keeps).
    detail: D
    person: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What applying one model answer did: kept on the execution, shown to clients."""

    applied: list[dict[str, str]]  # [{"key": ..., "op": "remember"|"forget"}]
    rejected: list[dict[str, Any]]  # [{"change": {...}, "reason": "..."}]


# Given the outcome, the actions that record the execution's end, so the pool commits them
# in the same transaction as the memory change and the new read position.
FinishActions = Callable[[Outcome], Sequence[Action]]
# A pool re-reads and decides again this many times while other writers change it; then the
# step fails as retryable and the workflow applies the same answer later.
APPLY_TRIES = 3


@dataclass(frozen=True)
class Change:
    """One decision of a pool as one transaction: its actions (the accepted changes, the
    read position's move and the execution's end) and what they do."""

    actions: Sequence[Action]
    outcome: Outcome
    # Work that follows once the transaction holds (recall marks its pending row done).
    then: Callable[[], None] | None = None


class AlreadyApplied(Exception):
    """The read position already moved past this evidence: another run applied it."""


class Skipped(Exception):
    """Nothing may be learned from this run now, for `reason`: a fixed sentence a person
    understands (domain/learning_notes.py), never content. The run ends skipped with it as
    its `note`, its read position unchanged."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Deferred(Skipped):
    """Nothing may be learned now (e.g. a memory Bot's budget is spent): the run ends
    skipped with `note`, its read position unchanged, and is saved again to start when
    `event` happens (the next budget period's)."""

    def __init__(self, event: str, note: str) -> None:
        super().__init__(note)
        self.event = event
        self.note = note


class LearningPool(Protocol):
    kind: PoolKind

    def charge(self, evidence: Evidence[Any], reply: ModelReply) -> Sequence[Action]:
        """What one real model call of a run costs the pool (a memory Bot's budget), as
        actions written before its answer is saved; none for a pool that spends nothing."""
        ...

    def task(self, evidence: Evidence[Any]) -> Ask[Any, Any] | None:
        """The model task a run of this pool asks, bound to its input from `evidence`
        (domain/tasks). Its parsed answer is what `change` gets as `changes`. None when the
        work asks no model (a thread's vector indexing): the run goes from LoadEvidence
        straight to ApplyLearning, and `change` gets None."""
        ...

    def detail_of(self, data: Any) -> Any:
        """The pool's evidence detail from its JSON form (`dataclasses.asdict` of it)."""
        ...

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """Unprocessed items after the read position, up to item `upto` (all when None).
        None when nothing is unread through `upto` (the run ends skipped: nothing new).
        Raises Skipped(reason) when something stops this run from learning (a setting, a
        turn still open, its conversation gone), Deferred when it may learn later."""
        ...

    def change(
        self, evidence: Evidence[Any], changes: Any, finish: FinishActions
    ) -> Change | Again:
        """`changes` is the task's parsed answer, after the task's own rules (`review`).
        Read the newest state, judge every proposed change by the pool's rules, and answer
        ONE transaction: the accepted changes, the read position's move from
        `evidence.position` to `evidence.upto` (conditional on it, named `READ_POSITION`
        unless the pool's version guards it) and `finish(outcome)`. Raises AlreadyApplied
        when the read position has moved; answers AGAIN when its read saw the pool move.

        A change may cite only items of `evidence.items`: when another run moved the read
        position first, the workflow asks again with the same answer and the evidence
        still unread, so a change citing an item that run learned is refused here, and no
        item is learned twice."""
        ...

    def lost(self, error: WriteConflict) -> bool:
        """Whether the change's transaction lost to another writer of the pool (decide
        again on the newest state) rather than failing for the caller to handle."""
        ...


class PoolDefaults:
    """A pool whose model calls spend nothing of its own (no budget to charge), whose
    change is guarded by its read position alone (a lost race is another run's: the
    workflow reads what is still unread) and whose evidence has no detail."""

    def charge(self, evidence: Evidence[Any], reply: ModelReply) -> Sequence[Action]:
        return ()

    def lost(self, error: WriteConflict) -> bool:
        return False

    def detail_of(self, data: Any) -> Any:
        return None


def apply_cycle(
    store: Store,
    pool: LearningPool,
    evidence: Evidence[Any],
    changes: Any,
    finish: FinishActions,
    *,
    tries: int = APPLY_TRIES,
) -> Outcome:
    """Apply a run's answer to `pool`: read and decide (`pool.change`), commit, and decide
    again while other writers of the pool win the race. AlreadyApplied when the read
    position moved (another run applied this evidence); nothing is written then."""

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
        tries=tries,
        lost=pool.lost,
    )
