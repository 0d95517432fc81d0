"""The seam between the learning workflow and the memory pools it teaches.

The workflow (service/learning.py, functions/learning_steps) is built once; each kind of
pool (session memory now, agent memory next, bot memory later) plugs in its rules by
implementing `LearningPool`. The workflow never touches a pool's rows; a pool never talks
to Step Functions or a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agent_memory.ports import Action, EvidenceItem, KnownEntry

PoolKind = Literal["session", "agent"]


@dataclass(frozen=True)
class PoolRef:
    kind: PoolKind
    org_id: str
    pool_id: str  # the session id, or the agent id
    # Agent pools: the session whose items a run reads (its executions stay the agent's).
    session: str | None = None


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


class LearningPool(Protocol):
    kind: PoolKind

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None:
        """Unprocessed items after the read position, up to item `upto` (all when None).
        None when there is nothing to learn (the run ends as skipped)."""
        ...

    def apply(self, evidence: Evidence, changes: Sequence[Any], finish: FinishActions) -> Outcome:
        """Re-read the newest memory, check every proposed change against the pool's rules,
        and commit accepted changes + the read position `evidence.upto` + `finish(outcome)`
        in ONE conditional write, conditional on the read position still being
        `evidence.position`. Raises AlreadyApplied when it moved (nothing written)."""
        ...
