"""The seam between the learning workflow and the memory pools it teaches.

The workflow (service/learning.py, functions/learning_steps) is built once; each kind of
pool (session memory, agent memory, bot memory later, or a test's toy pool) plugs in its
rules and its model task by implementing `LearningPool` and registering with the workflow.
The workflow never touches a pool's rows and never knows its task; a pool never talks to
Step Functions or a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_memory.domain.tasks.base import Ask
from agent_memory.ports import Action, EvidenceItem, KnownEntry, ModelReply

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


@dataclass(frozen=True)
class Evidence:
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
    person: str | None = None
    # Anything else the pool needs back in `apply` (JSON-serializable).
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    """What applying one model answer did: kept on the execution, shown to clients."""

    applied: list[dict[str, str]]  # [{"key": ..., "op": "remember"|"forget"}]
    rejected: list[dict[str, Any]]  # [{"change": {...}, "reason": "..."}]


# Given the outcome, the actions that record the execution's end, so the pool commits them
# in the same transaction as the memory change and the new read position.
FinishActions = Callable[[Outcome], Sequence[Action]]


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

    def charge(self, evidence: Evidence, reply: ModelReply) -> Sequence[Action]:
        """What one real model call of a run costs the pool (a memory Bot's budget), as
        actions written before its answer is saved; none for a pool that spends nothing."""
        ...

    def task(self, evidence: Evidence) -> Ask[Any, Any]:
        """The model task a run of this pool asks, bound to its input from `evidence`
        (domain/tasks). Its parsed answer is what `apply` gets as `changes`."""
        ...

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None:
        """Unprocessed items after the read position, up to item `upto` (all when None).
        None when nothing is unread through `upto` (the run ends skipped: nothing new).
        Raises Skipped(reason) when something stops this run from learning (a setting, a
        turn still open, its conversation gone), Deferred when it may learn later."""
        ...

    def apply(self, evidence: Evidence, changes: Any, finish: FinishActions) -> Outcome:
        """`changes` is the task's parsed answer, after the task's own rules (`review`).
        Re-read the newest memory, check every proposed change against the pool's rules,
        and commit accepted changes + the read position `evidence.upto` + `finish(outcome)`
        in ONE conditional write, conditional on the read position still being
        `evidence.position`. Raises AlreadyApplied when it moved (nothing written).

        A change may cite only items of `evidence.items`: when another run moved the read
        position first, the workflow calls `apply` again with the same answer and the
        evidence still unread, so a change citing an item that run learned is refused
        here, and no item is learned twice."""
        ...


class FreeOfCharge:
    """A pool whose model calls spend nothing of its own (no budget to charge)."""

    def charge(self, evidence: Evidence, reply: ModelReply) -> Sequence[Action]:
        return ()
