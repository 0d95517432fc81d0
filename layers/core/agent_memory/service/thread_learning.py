"""Background work on a thread after its saves: each step is a learning pool of its own.

A save starts at most one run per step; a model-free step may ride along a model step
(its `riders`) so that a save wanting both starts one execution.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Protocol, final

from agent_memory.domain.agents import Agent
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.runs import RunView
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.events import one_row
from agent_memory.persistence.threads import StoredThread, ThreadRepository
from agent_memory.persistence.working_memory import NOTES_REVISION
from agent_memory.ports import Action, Clock, Store, Update
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolDefaults,
    PoolKind,
    PoolRef,
    Skipped,
    Workflow,
    apply_cycle,
    json_size,
)

log = logging.getLogger(__name__)

# The sealed evidence must fit one execution row.
MAX_MESSAGES = 200
MESSAGE_BUDGET = 150_000


@dataclass(frozen=True)
class Saved:
    """One committed save: messages `first <= seq < upto` and the options it followed."""

    thread: Thread
    options: Mapping[str, Any]
    first: int
    upto: int
    messages: tuple[Message, ...]

    @property
    def turn_ended(self) -> bool:
        """Whether the save holds an answer."""
        return any(m.role == "assistant" for m in self.messages)


class ThreadStep(PoolDefaults, ABC):
    """A `LearningPool` of its own kind, plus when a save wants it and what it does then."""

    kind: PoolKind
    # Model-free steps whose work this step's runs do first (`carry`, in `load_evidence`
    # before the model is asked); each keeps its own read position.
    riders: tuple[ThreadStep, ...] = ()
    # A rider commits its work here, outside any execution.
    store: Store

    @abstractmethod
    def wanted(self, saved: Saved) -> bool:
        """Whether this save starts a run; no I/O (request path)."""

    @abstractmethod
    def task(self, evidence: Evidence[Any]) -> Ask[Any, Any] | None: ...

    @abstractmethod
    def read_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """This step's own evidence; `load_evidence` does its riders' work before it."""

    @abstractmethod
    def change(self, evidence: Evidence[Any], changes: Any, finish: FinishActions) -> Change: ...

    @final
    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """The riders' due work, committed, then this step's evidence, the thread read once
        for all of them: a step cannot load without carrying its riders."""
        with one_read():
            carry(self, pool, upto)
            return self.read_evidence(pool, upto)

    def lost(self, error: WriteConflict) -> bool:
        """A user's notes are shared by their threads: a run that lost them to another
        thread's run decides again on the notes as they are now."""
        return error.condition == NOTES_REVISION

    def load_carried(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """The rider's work that is due on its carrier's run."""
        return self.load_evidence(pool, upto)

    def before_save(
        self, thread: Thread, options: Mapping[str, Any], upto: int, now_ms: int
    ) -> None:
        """What the step writes before a save that will leave `upto` messages commits."""
        return None

    def flush_idle(self, workflow: Workflow) -> int:
        """The schedule's tick: the runs this step starts for idle threads."""
        return 0


def thread_pool(kind: PoolKind, thread: Thread) -> PoolRef:
    return PoolRef(kind, thread.org_id, thread.id)


class ActiveOptions(Protocol):
    def active_options(self, agent_id: str) -> tuple[Agent | None, dict[str, Any]]: ...


@dataclass(frozen=True)
class ThreadBatch:
    """The thread's options now, and its messages `position <= seq < upto` still stored."""

    options: dict[str, Any]
    position: int
    upto: int
    messages: tuple[tuple[int, Message], ...]

    def evidence(self, pool: PoolRef, model: str | None, detail: Any) -> Evidence[Any]:
        """The batch as a thread step's evidence: no entries shown, no kinds to keep."""
        items = tuple(EvidenceItem(m.id, m.role, m.content) for _seq, m in self.messages)
        return Evidence(pool, self.position, self.upto, items, (), model, (), detail)


# By (organization, thread id).
_READS: ContextVar[dict[tuple[str, str], Any] | None] = ContextVar("thread_reads", default=None)


@contextmanager
def one_read() -> Iterator[None]:
    """A rider and its carrier read each thread once; nested, the outer snapshot holds."""
    if _READS.get() is not None:
        yield
        return
    token = _READS.set({})
    try:
        yield
    finally:
        _READS.reset(token)


class ThreadReader:
    """What every thread step reads the same way, and the conditional move of its position."""

    def __init__(self, repo: ThreadRepository, versions: ActiveOptions, clock: Clock) -> None:
        self.repo = repo
        self._versions = versions
        self.clock = clock

    def thread(self, pool: PoolRef) -> tuple[StoredThread, dict[str, Any]] | None:
        """The pool's thread and its options now; None when it is gone."""
        reads = _READS.get()
        key = (pool.org_id, pool.pool_id)
        if reads is not None and key in reads:
            found: tuple[StoredThread, dict[str, Any]] | None = reads[key]
            return found
        stored = self.repo.get(pool.pool_id)
        if stored is None or stored.thread.org_id != pool.org_id:
            found = None
        else:
            _agent, options = self._versions.active_options(stored.thread.agent_id)
            found = (stored, options)
        if reads is not None:
            reads[key] = found
        return found

    def current(self, pool: PoolRef) -> tuple[StoredThread, dict[str, Any]]:
        """The thread and options a change is decided on; AlreadyApplied when it is gone."""
        found = self.thread(pool)
        if found is None:
            raise AlreadyApplied("the thread is gone")
        return found

    def unread(self, stored: StoredThread, kind: PoolKind, upto: int | None) -> tuple[int, int]:
        """The step's read position, and the last message it reads through `upto`."""
        position = self.repo.position(stored.thread.id, kind)
        return position, stored.seq if upto is None else min(upto, stored.seq)

    def load(
        self,
        pool: PoolRef,
        upto: int | None,
        *,
        limit: int = MAX_MESSAGES,
        budget: int = MESSAGE_BUDGET,
    ) -> ThreadBatch | None:
        """Unread messages through `upto`, at least one, within `budget`; None when none."""
        found = self.thread(pool)
        if found is None:
            return None
        stored, options = found
        position, target = self.unread(stored, pool.kind, upto)
        if target <= position:
            return None
        read = self.repo.numbered(stored.thread, position, target, limit)
        kept: list[tuple[int, Message]] = []
        used = 0
        for seq, message in read:
            used += json_size(message.content)
            if kept and used > budget:
                break
            kept.append((seq, message))
        # Cut short: the next run starts after the last message read.
        end = kept[-1][0] + 1 if len(kept) < len(read) or len(read) == limit else target
        return ThreadBatch(options, position, end, tuple(kept))

    def advance(self, thread_id: str, kind: PoolKind, position: int, upto: int) -> Update:
        """The read position's move, to commit with the step's rows; AlreadyApplied if moved."""
        mark = self.repo.mark(thread_id, kind)
        if mark.position != position:
            raise AlreadyApplied(f"another run of {kind} read these messages")
        return self.repo.advance(thread_id, kind, mark, upto, self.clock.now_ms())

    def change(
        self,
        evidence: Evidence[Any],
        actions: Sequence[Action],
        outcome: Outcome,
        finish: FinishActions,
        then: Callable[[], None] | None = None,
    ) -> Change:
        """A step's `actions`, the read position's move and the run's end as one transaction,
        their events in one row; AlreadyApplied when the position moved."""
        pool = evidence.pool
        advance = self.advance(pool.pool_id, pool.kind, evidence.position, evidence.upto)
        return Change(one_row([*actions, advance, *finish(outcome)]), outcome, then)


class ThreadBackground:
    def __init__(self, learning: Workflow, steps: Sequence[ThreadStep]) -> None:
        self._learning = learning
        self.steps: list[ThreadStep] = list(steps)

    def after_save(self, saved: Saved) -> None:
        """Start one run per step that wants this save, none for a rider whose carrier's
        run started; never fails the committed save."""
        carried: set[PoolKind] = set()
        for step in self.steps:
            if step.kind in carried or not step.wanted(saved):
                continue
            if self._start(step, saved) == "started":
                carried.update(rider.kind for rider in step.riders)

    def before_save(
        self, thread: Thread, options: Mapping[str, Any], upto: int, now_ms: int
    ) -> None:
        """What the steps write before a save; Unavailable fails the save uncommitted."""
        for step in self.steps:
            step.before_save(thread, options, upto, now_ms)

    def flush_idle(self) -> int:
        """The schedule's tick: how many runs started."""
        return sum(step.flush_idle(self._learning) for step in self.steps)

    def _start(self, step: ThreadStep, saved: Saved) -> str:
        try:
            return self._learning.start(
                thread_pool(step.kind, saved.thread), upto=saved.upto, reason="turn"
            )
        except Unavailable:
            log.warning("thread background work not started: %s", step.kind)
            return "skipped"

    def executions(self, thread: Thread, *, limit: int = 100) -> list[RunView]:
        """Every step's newest runs, newest first, each with its step's kind."""
        runs = [
            replace(run, kind=step.kind)
            for step in self.steps
            for run in self._learning.executions(thread_pool(step.kind, thread), limit=limit)
        ]
        runs.sort(key=lambda run: (run.started_at or 0, run.id), reverse=True)
        return runs[:limit]


def carry(carrier: ThreadStep, pool: PoolRef, upto: int | None) -> None:
    """Each rider's due work, committed outside any execution, before its carrier loads its
    evidence (inside the carrier's `one_read`); a rider that fails is left to its own run or
    the idle flush."""
    for rider in carrier.riders:
        try:
            evidence = rider.load_carried(PoolRef(rider.kind, pool.org_id, pool.pool_id), upto)
            if evidence is None:
                continue
            if rider.task(evidence) is not None:
                raise ValueError(f"{rider.kind} asks a model: it cannot ride along another step")
            apply_cycle(rider.store, rider, evidence, None, lambda _outcome: ())
        except (Skipped, AlreadyApplied):
            continue  # nothing due, or another run did it
        except Exception as error:
            # Its read position did not move: a retry writes nothing twice.
            log.warning("%s not done on a %s run: %s", rider.kind, carrier.kind, error)
