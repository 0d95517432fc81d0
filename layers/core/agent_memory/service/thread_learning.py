"""Background work on a thread after its saves (seed 003): each kind of work is a learning
pool of its own (`thread-title`, `thread-observe`, `thread-recall`) with its own read
position and executions. `ThreadBackground.after_save` starts at most ONE run per step for a
whole save (the run reads every message after its read position). A model-free step may
ride along a model step (`Carrying`) so that a save wanting both starts one execution.
How to add a step: docs/decisions.md, "Thread background work".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from agent_memory.domain.agents import Agent
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.threads import StoredThread, ThreadRepository
from agent_memory.ports import Action, Clock, EvidenceItem, Execution, ModelReply, Store, Update
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
    apply_cycle,
)

log = logging.getLogger(__name__)

# What one run of a step reads at most (the sealed evidence must fit one execution row).
MAX_MESSAGES = 200
MESSAGE_BUDGET = 150_000


@dataclass(frozen=True)
class Saved:
    """One committed save: the messages numbered `first <= seq < upto`, and the effective
    options of the agent's active version the save followed."""

    thread: Thread
    options: Mapping[str, Any]
    first: int
    upto: int
    messages: tuple[Message, ...]


class Workflow(Protocol):
    """The learning workflow, as threads use it (service/learning.py implements it)."""

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> str: ...

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[dict[str, Any]]: ...

    def wait(self, pool: PoolRef, *, event: str, reason: str, upto: int | None = None) -> str: ...

    def release(self, event: str, *, upto: int | None = None) -> list[Execution]: ...


class ThreadStep(Protocol):
    """One kind of background work on threads: a `LearningPool` (service/learning_pools.py)
    of its own kind, plus when a save wants it and what it does around saves."""

    kind: PoolKind
    # Model-free steps whose work this step's runs do as well (`Carrying`).
    riders: tuple[ThreadStep, ...]
    # Where the step's runs commit (a rider commits its work outside any execution).
    store: Store

    def wanted(self, saved: Saved) -> bool:
        """Whether this save starts a run (request path: no I/O, decided from `saved`)."""
        ...

    def task(self, evidence: Evidence[Any]) -> Ask[Any, Any] | None: ...

    def charge(self, evidence: Evidence[Any], reply: ModelReply) -> Sequence[Action]: ...

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None: ...

    def load_carried(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """The rider's work that is due on its carrier's run."""
        ...

    def change(self, evidence: Evidence[Any], changes: Any, finish: FinishActions) -> Change: ...

    def lost(self, error: WriteConflict) -> bool: ...

    def detail_of(self, data: Any) -> Any: ...

    def before_save(
        self, thread: Thread, options: Mapping[str, Any], upto: int, now_ms: int
    ) -> None:
        """What the step writes before a save that will leave `upto` messages commits."""
        ...

    def flush_idle(self, workflow: Workflow) -> int:
        """The schedule's tick: the runs this step starts for idle threads."""
        ...


class StepDefaults(PoolDefaults):
    """What most steps do around saves: nothing; as a rider, all their unread work."""

    riders: tuple[ThreadStep, ...] = ()

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        raise NotImplementedError

    def load_carried(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        return self.load_evidence(pool, upto)

    def before_save(
        self, thread: Thread, options: Mapping[str, Any], upto: int, now_ms: int
    ) -> None:
        return None

    def flush_idle(self, workflow: Workflow) -> int:
        return 0


def thread_pool(kind: PoolKind, thread: Thread) -> PoolRef:
    """The pool of one step's work on one thread: its executions are the thread's."""
    return PoolRef(kind, thread.org_id, thread.id)


class ActiveOptions(Protocol):
    def active_options(self, agent_id: str) -> tuple[Agent | None, dict[str, Any]]: ...


@dataclass(frozen=True)
class ThreadBatch:
    """What a step's run reads: the thread, the options now, and the messages numbered
    `position <= seq < upto` still stored (oldest first)."""

    thread: Thread
    options: dict[str, Any]
    position: int
    upto: int
    messages: tuple[tuple[int, Message], ...]

    def items(self) -> tuple[EvidenceItem, ...]:
        """The messages as evidence items (ids, roles, contents)."""
        return tuple(EvidenceItem(m.id, m.role, m.content) for _seq, m in self.messages)


def _size(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode())


# The threads (and their options) read inside `one_read()`, by (organization, thread id).
_READS: ContextVar[dict[tuple[str, str], Any] | None] = ContextVar("thread_reads", default=None)


@contextmanager
def one_read() -> Iterator[None]:
    """Inside it, `ThreadReader.thread` reads each thread and its options once (a carried
    run's rider and carrier load from one snapshot); nested, the outer snapshot holds."""
    if _READS.get() is not None:
        yield
        return
    token = _READS.set({})
    try:
        yield
    finally:
        _READS.reset(token)


class ThreadReader:
    """What every thread step reads the same way: the thread of a pool, its options now,
    the messages after the step's read position, and the conditional move of it."""

    def __init__(self, repo: ThreadRepository, versions: ActiveOptions, clock: Clock) -> None:
        self.repo = repo
        self._versions = versions
        self.clock = clock

    def thread(self, pool: PoolRef) -> tuple[StoredThread, dict[str, Any]] | None:
        """The pool's thread (of the pool's organization) and its effective options now;
        None when it is gone. Inside `one_read()`, read once."""
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

    def load(
        self,
        pool: PoolRef,
        upto: int | None,
        *,
        limit: int = MAX_MESSAGES,
        budget: int = MESSAGE_BUDGET,
    ) -> ThreadBatch | None:
        """The messages after `pool.kind`'s read position through `upto` (all saved when
        None), `limit` at most and `budget` bytes of content (at least one). None when the
        thread is gone or nothing is unread."""
        found = self.thread(pool)
        if found is None:
            return None
        stored, options = found
        position = self.repo.position(stored.thread.id, pool.kind)
        target = stored.seq if upto is None else min(upto, stored.seq)
        if target <= position:
            return None
        read = self.repo.numbered(stored.thread, position, target, limit)
        kept: list[tuple[int, Message]] = []
        used = 0
        for seq, message in read:
            used += _size(message.content)
            if kept and used > budget:
                break
            kept.append((seq, message))
        # Cut short: the next run starts after the last message read.
        end = kept[-1][0] + 1 if len(kept) < len(read) or len(read) == limit else target
        return ThreadBatch(stored.thread, options, position, end, tuple(kept))

    def advance(self, thread_id: str, kind: PoolKind, position: int, upto: int) -> Update:
        """`kind`'s read position from `position` to `upto`, to commit with the step's rows:
        AlreadyApplied when another run moved it first (or a WriteConflict named
        READ_POSITION, when it moves between this read and the commit)."""
        mark = self.repo.mark(thread_id, kind)
        if mark.position != position:
            raise AlreadyApplied(f"another run of {kind} read these messages")
        return self.repo.advance(thread_id, kind, mark, upto, self.clock.now_ms())


class ThreadBackground:
    """The one dispatcher of background work after a thread's saves."""

    def __init__(self, learning: Workflow | None, steps: Sequence[ThreadStep] = ()) -> None:
        self._learning = learning
        self.steps: list[ThreadStep] = list(steps)

    def after_save(self, saved: Saved) -> dict[PoolKind, str]:
        """Start one run per step that wants this save ("started", "skipped", "throttled"
        per kind; a rider of a started `Carrying` step starts none of its own). Never fails
        the committed save: a step that did not start reads these messages next time."""
        answers: dict[PoolKind, str] = {}
        if self._learning is None:
            return answers
        wanted = [step for step in self.steps if step.wanted(saved)]
        carried: set[PoolKind] = set()
        for step in wanted:
            if step.kind in carried:
                continue
            answers[step.kind] = self._start(step, saved)
            if answers[step.kind] == "started":
                for rider in step.riders:
                    carried.add(rider.kind)
                    answers[rider.kind] = "started"
        return answers

    def before_save(
        self, thread: Thread, options: Mapping[str, Any], upto: int, now_ms: int
    ) -> None:
        """What the steps write before a save that will leave `upto` messages commits; raises
        Unavailable when it could not (the save then fails uncommitted)."""
        for step in self.steps:
            step.before_save(thread, options, upto, now_ms)

    def flush_idle(self) -> int:
        """The schedule's tick: each step's idle work; answers how many runs started."""
        if self._learning is None:
            return 0
        return sum(step.flush_idle(self._learning) for step in self.steps)

    def _start(self, step: ThreadStep, saved: Saved) -> str:
        if self._learning is None:
            return "skipped"
        try:
            return self._learning.start(
                thread_pool(step.kind, saved.thread), upto=saved.upto, reason="turn"
            )
        except Unavailable:
            log.warning("thread background work not started: %s", step.kind)
            return "skipped"

    def executions(self, thread: Thread, *, limit: int = 100) -> list[dict[str, Any]]:
        """Every step's executions on the thread, newest first, each with its `kind`."""
        if self._learning is None:
            return []
        views: list[dict[str, Any]] = []
        for step in self.steps:
            for view in self._learning.executions(thread_pool(step.kind, thread), limit=limit):
                views.append(view | {"kind": step.kind})
        views.sort(key=lambda v: (int(v.get("startedAt") or 0), str(v["id"])), reverse=True)
        return views[:limit]


class Carrying(StepDefaults):
    """A model step whose runs also do the work of model-free steps (`riders`: semantic
    recall's indexing), so that a save wanting both starts one execution. The riders' work
    is done in LoadEvidence, before the model is asked, so a failed model call leaves none
    of it undone; each rider keeps its own read position and conditional write, so a retry
    writes nothing twice, and a rider that fails leaves its work for its own runs without
    failing the carrier's. Rider and carrier read the thread once (`one_read`)."""

    def __init__(self, carrier: ThreadStep, *riders: ThreadStep) -> None:
        self.kind: PoolKind = carrier.kind
        self.carrier = carrier
        self.riders: tuple[ThreadStep, ...] = riders
        self.store = carrier.store

    def wanted(self, saved: Saved) -> bool:
        return self.carrier.wanted(saved)

    def task(self, evidence: Evidence[Any]) -> Ask[Any, Any] | None:
        return self.carrier.task(evidence)

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """Each rider's work up to `upto` first when due (done and committed), then the
        carrier's evidence."""
        with one_read():
            for rider in self.riders:
                try:
                    ride(rider, PoolRef(rider.kind, pool.org_id, pool.pool_id), upto, carried=True)
                except Exception as error:
                    # Its read position did not move: its own run or the idle flush does it.
                    log.warning("%s not done on a %s run: %s", rider.kind, self.kind, error)
            return self.carrier.load_evidence(pool, upto)

    def detail_of(self, data: Any) -> Any:
        return self.carrier.detail_of(data)

    def change(self, evidence: Evidence[Any], changes: Any, finish: FinishActions) -> Change:
        return self.carrier.change(evidence, changes, finish)


def ride(
    step: ThreadStep, pool: PoolRef, upto: int | None, *, carried: bool = False
) -> Outcome | None:
    """Run a model-free step's work on `pool` through `upto` now, outside any execution of
    its own (`carried`: only what is due on a carrier's run). None when it had nothing to do
    or another run applied it first."""
    load = step.load_carried if carried else step.load_evidence
    try:
        evidence = load(pool, upto)
    except Skipped:
        return None
    if evidence is None:
        return None
    if step.task(evidence) is not None:
        raise ValueError(f"{step.kind} asks a model: it cannot ride along another step")
    try:
        return apply_cycle(step.store, step, evidence, None, lambda _outcome: ())
    except AlreadyApplied:
        return None
