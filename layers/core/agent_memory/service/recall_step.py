"""Semantic recall's background step: the embeddings of a thread's new messages, in
batches, off the request path. It asks no model: its runs go from LoadEvidence straight to
ApplyLearning, whose change embeds and puts the vectors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.domain import recall as rules
from agent_memory.domain import recall_batches as batches
from agent_memory.domain.observation import observing
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.recall_pending import NOTHING_LEFT, PendingRecalls, observed_boundary
from agent_memory.ports import Store
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolKind,
    PoolRef,
)
from agent_memory.service.recall import RECALL_KIND, RecallService
from agent_memory.service.thread_learning import (
    Saved,
    StepDefaults,
    ThreadReader,
    Workflow,
    one_read,
)

# Messages one background run embeds at most (the local model: ~10 s on a busy machine).
RUN_MESSAGES = 500
RUN_BUDGET = 400_000
# The flush's event: one per minute of ticks (a repeated tick starts each run once).
IDLE_EVENT = "recall-idle:{minute}"
# Threads one tick flushes at most (its function's 60 s); the rest wait for the next tick.
FLUSH_LIMIT = 500


@dataclass(frozen=True)
class RecallDetail:
    """The numbers of the run's messages in their thread (their vector keys)."""

    seqs: tuple[int, ...]


class RecallStep(StepDefaults):
    """`semanticRecall`'s background step (the `thread-recall` learning pool). A thread's
    messages are indexed once a multiple of its batch is reached (domain/recall_batches.py),
    every message after the read position at once, so one PutVectors carries the batch. On a
    save the observer runs on, the work rides in the observer's execution (`load_carried`);
    else a save that closes a batch starts a run of its own. Every save first puts the
    thread's pending row (persistence/recall_pending.py), so the schedule's `flush_idle`
    indexes the tail of an idle thread. A run moves the read position and ends its
    execution in one write."""

    kind: PoolKind = RECALL_KIND

    def __init__(self, reader: ThreadReader, recall: RecallService, store: Store) -> None:
        self._reader = reader
        self._recall = recall
        self.store = store
        self.pending = PendingRecalls(store)

    def batch(self, options: Mapping[str, Any]) -> int:
        """Messages one batch of this version's threads holds."""
        shown = None if observing(options) else int(options["lastMessages"])
        dimension = self._recall.embedder.dimension
        if dimension is None:
            return 1  # the model's size is unknown until it answers: index now, and learn it
        return batches.batch_size(shown, dimension)

    def wanted(self, saved: Saved) -> bool:
        """Recall on in the version the save followed, and the save closes a batch (no I/O:
        the read position is at most where the save began)."""
        return rules.settings_of(saved.options) is not None and batches.batch_due(
            saved.first, saved.upto, self.batch(saved.options)
        )

    def before_save(
        self, thread: Thread, options: Mapping[str, Any], upto: int, now_ms: int
    ) -> None:
        """Put the thread's pending row before a save with recall on commits (one plain
        write: its failure fails the save uncommitted, a save that fails after it leaves a
        row the flush finds nothing for): the idle flush finds the thread through it."""
        if rules.settings_of(options) is not None:
            self.pending.saved(thread, upto, now_ms)

    def detail_of(self, data: Any) -> RecallDetail:
        return RecallDetail(tuple(data["seqs"]))

    def task(self, evidence: Evidence[Any]) -> None:
        return None

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """The messages after the read position through `upto` (none when recall is off
        now). With nothing left to index, the pending row through `upto` is marked done."""
        with one_read():
            found = self._reader.thread(pool)
            if found is None or rules.settings_of(found[1]) is None:
                self.pending.indexed(pool.pool_id, NOTHING_LEFT)
                return None
            batch = self._reader.load(pool, upto, limit=RUN_MESSAGES, budget=RUN_BUDGET)
        if batch is None:
            if upto is not None:
                self.pending.indexed(pool.pool_id, upto)
            return None
        return Evidence(
            pool=pool,
            position=batch.position,
            upto=batch.upto,
            items=batch.items(),
            memory=(),
            model=None,
            allowed_kinds=(),
            detail=RecallDetail(tuple(seq for seq, _ in batch.messages)),
        )

    def load_carried(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """On the observer's run: the messages after the read position only when they close
        a batch (a save below it skips the indexing; the next batch or the idle flush
        takes them)."""
        found = self._reader.thread(pool)
        if found is None or rules.settings_of(found[1]) is None:
            return None
        stored, options = found
        position = self._reader.repo.position(stored.thread.id, self.kind)
        target = stored.seq if upto is None else min(upto, stored.seq)
        due = batches.batch_due(position, target, self.batch(options)) or (
            position < target and self._observed_out(stored.thread, options, position)
        )
        return self.load_evidence(pool, upto) if due else None

    def _observed_out(self, thread: Thread, options: Mapping[str, Any], position: int) -> bool:
        """Whether the observer made messages not indexed yet active (out of the raw
        window); its log's head is read only when it may have."""
        if not observing(options):
            return False
        observation = options["observationalMemory"]["observation"]
        if not batches.may_be_observed_out(
            thread.tokens,
            int(observation["messageTokens"]),
            observation["activateAfterIdle"] is not False,
        ):
            return False
        return batches.observed_out(position, observed_boundary(self.store, thread.id))

    def change(
        self, evidence: Evidence[RecallDetail], changes: None, finish: FinishActions
    ) -> Change:
        """Embed and put the run's messages, then move the position with the execution's
        end (another run that moved it first put the same vectors). The pending row through
        the new position is marked done once that holds."""
        found = self._reader.thread(evidence.pool)
        if found is None:
            raise AlreadyApplied("the thread is gone")
        thread = found[0].thread
        seqs = evidence.detail.seqs
        numbered = [
            (seq, Message(item.id, item.role, item.content, 0))
            for seq, item in zip(seqs, evidence.items, strict=True)
        ]
        count = self._recall.index_messages(thread, numbered)
        outcome = Outcome(applied=[{"key": "embeddings", "op": f"embedded {count}"}], rejected=[])
        actions = [
            self._reader.advance(thread.id, self.kind, evidence.position, evidence.upto),
            *finish(outcome),
        ]
        return Change(actions, outcome, then=lambda: self.pending.indexed(thread.id, evidence.upto))

    def flush_idle(self, workflow: Workflow) -> int:
        """The schedule's tick: a run for each thread idle for `IDLE_MS` whose last save is
        not indexed yet (a wait on this minute's event, released at once: waits and
        releases touch only the LEARN# and WAIT# partitions, and each run starts once
        however often the tick comes); done rows are deleted. Answers the runs started."""
        now = self._reader.clock.now_ms()
        event = IDLE_EVENT.format(minute=now // 60_000)
        waiting = 0
        for row in self.pending.rows():
            if row.done:
                self.pending.forget(row)
            elif batches.idle(row.at, now) and waiting < FLUSH_LIMIT:
                pool = PoolRef(self.kind, row.org_id, row.thread_id)
                workflow.wait(pool, event=event, reason="idle", upto=row.upto)
                waiting += 1
        if not waiting:
            return 0
        return sum(1 for run in workflow.release(event) if run.started)
