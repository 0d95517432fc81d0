"""Background work on a thread after its saves (seed 003): the title now; semantic recall's
embeddings and the observer/reflector (issue 16) plug in the same way.

Each kind of work is a learning pool kind of its own (`thread-title`, ...): the learning
workflow runs one model call per execution, and each kind has its own read position
(`POS#<kind>` in the thread's partition) and its own executions. `ThreadBackground` is the
one dispatcher: `ThreadService.save` calls `after_save` once per committed save, and each
registered step whose `wanted` says so gets ONE execution for the whole save (its run reads
every message after its read position), never one per message. A model-free step may
ride along a model step (`Carrying`): a save that wants both starts ONE execution, whose
LoadEvidence first does the rider's work when the rider's batch is due (its own read
position, its own conditional write). A step may also write before each save
(`before_save`) and flush on the schedule (`flush_idle`: semantic recall's idle tail).
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

from agent_memory.domain import threads as rules
from agent_memory.domain.agents import Agent
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.learning_notes import (
    ALREADY_TITLED,
    NO_USER_MESSAGE,
    SOURCE_GONE,
    TITLES_OFF,
)
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.memory_changes import EvidenceItem
from agent_memory.domain.tasks.title import TITLE, Title, TitleInput
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.events import one_row
from agent_memory.persistence.threads import THREAD_POSITION, StoredThread, ThreadRepository
from agent_memory.ports import Clock, Execution, Store, Update
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Evidence,
    FinishActions,
    Outcome,
    PoolKind,
    PoolRef,
    Skipped,
)

log = logging.getLogger(__name__)

TITLE_KIND: PoolKind = "thread-title"
# The first user message is among the thread's first few.
TITLE_LOOKAHEAD = 10
# The model of tasks answered without a network call (a step that may ride along another).
LOCAL_MODEL = "local/rules"
DEFAULT_TITLE_MODEL = LOCAL_MODEL
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


class ThreadStep(Protocol):
    """One kind of background work on threads: a `LearningPool` (service/learning_pools.py)
    of its own kind, plus `wanted`."""

    kind: PoolKind
    # Model-free steps whose work this step's runs do as well (`Carrying`); none for most.
    riders: tuple[ThreadStep, ...]

    def wanted(self, saved: Saved) -> bool:
        """Whether this save starts a run (request path: no I/O, decided from `saved`)."""
        ...

    def task(self, evidence: Evidence) -> Ask[Any, Any]: ...

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None: ...

    def apply(self, evidence: Evidence, changes: Any, finish: FinishActions) -> Outcome: ...


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
    """Inside it, `ThreadReader.thread` reads each thread and its options once: a carried
    run's steps (rider and carrier) load from the same snapshot instead of reading the
    thread's row and its agent's version once each. Nested, the outer snapshot holds."""
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
        self._clock = clock
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
        None), `limit` at most and `budget` bytes of content (at least one); `upto` of the
        batch is where the position moves when they are done. None when the thread is gone
        or nothing is unread."""
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
        """`kind`'s read position from `position` to `upto`: commit it with the step's rows
        and `finish(outcome)`; a WriteConflict named THREAD_POSITION means another run of
        the step applied first (raise AlreadyApplied)."""
        return self.repo.advance(thread_id, kind, position, upto, self._clock.now_ms())


class Learning(Protocol):
    """The learning workflow, as threads use it (service/learning.py implements it)."""

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> str: ...

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[dict[str, Any]]: ...

    def wait(self, pool: PoolRef, *, event: str, reason: str, upto: int | None = None) -> str: ...

    def release(self, event: str, *, upto: int | None = None) -> list[Execution]: ...


class ThreadBackground:
    """The one dispatcher of background work after a thread's saves."""

    def __init__(self, learning: Learning | None, steps: Sequence[ThreadStep] = ()) -> None:
        self._learning = learning
        self.steps: list[ThreadStep] = list(steps)

    def register(self, step: ThreadStep) -> None:
        """Add a kind of background work (its pool must be registered with the workflow)."""
        self.steps.append(step)

    def after_save(self, saved: Saved) -> dict[PoolKind, str]:
        """Start one run per step that wants this save ("started", "skipped", "throttled"
        per kind); a rider of a started `Carrying` step starts none of its own (the
        carrier's run does its work: "started" for both). Never fails the save: it is
        committed, and a step that did not start reads these messages with its next run."""
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
        """What the steps write before a save that will leave `upto` messages commits (a
        step's `before_save`, e.g. semantic recall's pending row). Raises Unavailable when
        it could not: the save then fails uncommitted (retry it)."""
        for step in self.steps:
            write = getattr(step, "before_save", None)
            if write is not None:
                write(thread, options, upto, now_ms)

    def flush_idle(self) -> int:
        """The schedule's tick: each step's idle work (`flush_idle`, e.g. semantic recall's
        tail of idle threads); answers how many runs started. Raises Unavailable when the
        table or the workflow failed (the next tick flushes again)."""
        if self._learning is None:
            return 0
        started = 0
        for step in self.steps:
            flush = getattr(step, "flush_idle", None)
            if flush is not None:
                started += int(flush(self._learning))
        return started

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


class Carrying:
    """A model step whose runs also do the work of model-free steps (`riders`, whose task
    `local/rules` answers: semantic recall's indexing), so that a save wanting both starts
    one execution, not one per kind. The riders' work is done in LoadEvidence, before the
    model is asked, so a failed or refused model call leaves none of it undone; each rider
    keeps its own read position, reads after it and commits its move in its own
    conditional write, so a retried step or a run of the rider's own finds nothing left
    and writes nothing twice. A rider that fails (an embedding model that cannot answer)
    leaves its work for its own runs and never fails the carrier's. A rider with
    `load_carried` decides there whether its work is due on this run (recall: only once its
    batch is reached). Rider and carrier read the thread once (`one_read`). Everything else
    is the carrier's."""

    def __init__(self, carrier: ThreadStep, *riders: ThreadStep) -> None:
        self.kind: PoolKind = carrier.kind
        self.carrier = carrier
        self.riders: tuple[ThreadStep, ...] = riders

    def wanted(self, saved: Saved) -> bool:
        return self.carrier.wanted(saved)

    def task(self, evidence: Evidence) -> Ask[Any, Any]:
        return self.carrier.task(evidence)

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None:
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

    def apply(self, evidence: Evidence, changes: Any, finish: FinishActions) -> Outcome:
        return self.carrier.apply(evidence, changes, finish)


def ride(
    step: ThreadStep, pool: PoolRef, upto: int | None, *, carried: bool = False
) -> Outcome | None:
    """Run a model-free step's work on `pool` through `upto` now, outside any execution of
    its own: its evidence (`load_carried` when `carried` and the step has it: what is due
    on a carrier's run), its task's local answer, its apply with no execution to end.
    None when it had nothing to do or another run applied it first."""
    load = getattr(step, "load_carried", None) if carried else None
    try:
        evidence = (load or step.load_evidence)(pool, upto)
    except Skipped:
        return None
    if evidence is None:
        return None
    if evidence.model != LOCAL_MODEL:
        raise ValueError(f"{step.kind} asks a model: it cannot ride along another step")
    ask = step.task(evidence)
    try:
        return step.apply(evidence, ask.task.local_answer(ask.input), lambda _outcome: ())
    except AlreadyApplied:
        return None


class TitleStep:
    """`generateTitle`: the thread's title from its first user message, once the first
    answer is saved; `generateTitle.model`, else TITLE_MODEL, else `local/rules`. A failed
    model call fails the run (its execution says why) and leaves the thread untitled; the
    next save with an answer tries again."""

    kind: PoolKind = TITLE_KIND
    riders: tuple[ThreadStep, ...] = ()

    def __init__(
        self, reader: ThreadReader, store: Store, clock: Clock, title_model: str | None = None
    ) -> None:
        self._reader = reader
        self._repo = reader.repo
        self._store = store
        self._clock = clock
        self._title_model = title_model or DEFAULT_TITLE_MODEL

    def wanted(self, saved: Saved) -> bool:
        """An untitled thread, titles on, and an answer among the saved messages."""
        return (
            bool(saved.options["generateTitle"]["enabled"])
            and saved.thread.title is None
            and any(m.role == "assistant" for m in saved.messages)
        )

    def task(self, evidence: Evidence) -> Ask[TitleInput, Title]:
        """`title` of the first user message, with `generateTitle.instructions`."""
        instructions = evidence.extra.get("instructions")
        return Ask(TITLE, TitleInput(evidence.items[0].content, instructions))

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None:
        """The first user message of an untitled thread whose version titles; Skipped with
        why when the thread is gone or titled (or was, by this step), titles are off, or it
        has no user text yet."""
        found = self._reader.thread(pool)
        if found is None:
            raise Skipped(SOURCE_GONE)
        stored, options = found
        title = options["generateTitle"]
        if not title["enabled"]:
            raise Skipped(TITLES_OFF)
        if stored.thread.title is not None:
            raise Skipped(ALREADY_TITLED)
        position = self._repo.position(stored.thread.id, self.kind)
        if position > 0:
            raise Skipped(ALREADY_TITLED)
        first = rules.first_user_message(self._repo.first(stored.thread, TITLE_LOOKAHEAD))
        if first is None:
            raise Skipped(NO_USER_MESSAGE)
        return Evidence(
            pool=pool,
            position=position,
            upto=max(1, stored.seq if upto is None else upto),
            items=(EvidenceItem(first.id, first.role, first.content),),
            memory=(),
            model=title["model"] or self._title_model,
            allowed_kinds=(),
            extra={"instructions": title["instructions"]},
        )

    def apply(self, evidence: Evidence, changes: Title, finish: FinishActions) -> Outcome:
        """Name the thread, move the step's position and end the execution in one write;
        AlreadyApplied when another run titled it first (or the thread is gone)."""
        found = self._reader.thread(evidence.pool)
        if found is None or found[0].thread.title is not None:
            raise AlreadyApplied("the thread is titled or gone")
        thread = found[0].thread
        outcome = Outcome(applied=[{"key": "title", "op": "title"}], rejected=[])
        actions = [
            *self._repo.title_actions(thread, changes.title, self._clock.now_ms()),
            self._reader.advance(thread.id, self.kind, evidence.position, evidence.upto),
            *finish(outcome),
        ]
        try:
            # thread.updated and execution.ended in one event row (persistence/events.py).
            self._store.write(one_row(actions))
        except WriteConflict as error:
            if error.condition == THREAD_POSITION:
                raise AlreadyApplied("another run titled the thread") from error
            raise
        return outcome
