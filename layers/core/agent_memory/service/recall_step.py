"""Semantic recall's background step: a thread's new messages embedded in batches."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from agent_memory.domain import recall as rules
from agent_memory.domain import recall_batches as batches
from agent_memory.domain.observation import idle, observing
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.recall_pending import (
    NOTHING_LEFT,
    PendingRecalls,
    RecallTails,
    observed_boundary,
)
from agent_memory.ports import Store
from agent_memory.service.learning_pools import (
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolRef,
    Workflow,
)
from agent_memory.service.recall import RECALL_KIND, RecallService
from agent_memory.service.thread_learning import (
    Saved,
    ThreadReader,
    ThreadStep,
)

RUN_MESSAGES = 500
RUN_BUDGET = 400_000
# One per minute, so a repeated tick starts each run once.
IDLE_EVENT = "recall-idle:{minute}"
# Within the tick function's 60 s; the rest wait for the next tick.
FLUSH_LIMIT = 500


@dataclass(frozen=True)
class RecallDetail:
    """The numbers of the messages read, in order."""

    seqs: Sequence[int]


class RecallStep(ThreadStep):
    """Indexes a thread once a batch is full, so one PutVectors carries it; a pending row
    put before every save lets `flush_idle` index an idle thread's tail."""

    kind = RECALL_KIND
    detail_type = RecallDetail

    def __init__(self, reader: ThreadReader, recall: RecallService, store: Store) -> None:
        self._reader = reader
        self._recall = recall
        self.store = store
        self.pending = PendingRecalls(store)
        self.tails = RecallTails(store)

    def batch(self, options: Mapping[str, Any]) -> int:
        return batches.indexing_batch(options, self._recall.embedder.dimension)

    def wanted(self, saved: Saved) -> bool:
        """Recall on and the save closes a batch; no I/O."""
        return rules.settings_of(saved.options) is not None and batches.batch_due(
            saved.first, saved.upto, self.batch(saved.options)
        )

    def before_save(
        self, thread: Thread, options: Mapping[str, Any], upto: int, now_ms: int
    ) -> None:
        """The thread's pending row, so the idle flush finds it, and its tail row in the
        user's partition, so the next turn's recall ranks what the index lacks yet."""
        if rules.settings_of(options) is not None:
            self.pending.saved(thread, upto, now_ms)
            self.tails.saved(thread, upto, now_ms)

    def task(self, evidence: Evidence[Any]) -> None:
        return None

    def read_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """With nothing left to index, the pending row through `upto` is marked done."""
        found = self._reader.thread(pool)
        if found is None or rules.settings_of(found[1]) is None:
            self.pending.indexed(pool.pool_id, NOTHING_LEFT)
            return None
        batch = self._reader.load(pool, upto, limit=RUN_MESSAGES, budget=RUN_BUDGET)
        if batch is None:
            if upto is not None:
                self.pending.indexed(pool.pool_id, upto)
            return None
        return batch.evidence(pool, None, RecallDetail(tuple(seq for seq, _ in batch.messages)))

    def load_carried(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """On the observer's run, only when the messages close a batch."""
        found = self._reader.thread(pool)
        if found is None or rules.settings_of(found[1]) is None:
            return None
        stored, options = found
        position, target = self._reader.unread(stored, self.kind, upto)
        due = batches.batch_due(position, target, self.batch(options)) or (
            position < target and self._observed_out(stored.thread, options, position)
        )
        return self.load_evidence(pool, upto) if due else None

    def _observed_out(self, thread: Thread, options: Mapping[str, Any], position: int) -> bool:
        """Whether the observer made messages not indexed yet active (out of the raw window)."""
        if not observing(options):
            return False
        observation = options["observationalMemory"]["observation"]
        if not batches.may_be_observed_out(
            thread.tokens,
            int(observation["messageTokens"]),
            observation["activateAfterIdle"] is not False,
        ):
            return False
        # The observer's active observations replace messages below its boundary.
        return observed_boundary(self.store, thread.id) > position

    def change(
        self, evidence: Evidence[RecallDetail], changes: None, finish: FinishActions
    ) -> Change:
        """Embed and put, then move the position; another run that moved first put the same."""
        thread = self._reader.current(evidence.pool)[0].thread
        seqs = evidence.detail.seqs
        numbered = [
            (seq, Message(item.id, item.role, item.content, 0))
            for seq, item in zip(seqs, evidence.items, strict=True)
        ]
        count = self._recall.index_messages(thread, numbered)
        outcome = Outcome(applied=[{"key": "embeddings", "op": f"embedded {count}"}], rejected=[])
        indexed = partial(self.pending.indexed, thread.id, evidence.upto)
        return self._reader.change(evidence, (), outcome, finish, then=indexed)

    def flush_idle(self, workflow: Workflow) -> int:
        """The schedule's tick: a run for each idle thread not indexed yet; runs started."""
        now = self._reader.clock.now_ms()
        event = IDLE_EVENT.format(minute=now // 60_000)
        waiting = 0
        for row in self.pending.rows():
            if row.done:
                self.pending.forget(row)
            elif idle(row.at, now, batches.IDLE_MS) and waiting < FLUSH_LIMIT:
                pool = PoolRef(self.kind, row.org_id, row.thread_id)
                workflow.wait(pool, event=event, reason="idle", upto=row.upto)
                waiting += 1
        if not waiting:
            return 0
        return sum(1 for run in workflow.release(event) if run.started)
