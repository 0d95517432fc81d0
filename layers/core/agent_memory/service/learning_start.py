"""Durable learning, the API side: start runs, save and release waits, list a pool's runs.

A wait is written before its event is read and a release writes the event before it reads
the waits, so one finds the other; the orchestrator refuses a name's second start.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any, Literal

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.limits import quota_note
from agent_memory.domain.runs import RunError, RunView, seen_at
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.runs import ExecutionRow, Run
from agent_memory.persistence.waits import WAIT_TTL_S
from agent_memory.ports import (
    Clock,
    Execution,
    Ids,
    ModelCatalog,
    Orchestrator,
    Store,
)
from agent_memory.service.learning_pools import (
    LearningPool,
    PoolKind,
    PoolRef,
    StartAnswer,
)
from agent_memory.service.learning_runs import (
    LearningStepError,
    execution_name,
    run_of,
    run_pool,
)
from agent_memory.service.limits import ModelCallQuota

log = logging.getLogger(__name__)

# The `upto` of a wait whose last item only its event will tell (a turn still open).
UPTO_LATER = -1
# How a copy of an execution waits for the other copy's model call (under CallModel's 120 s).
COPY_WAIT_S = 100.0
# A pool kind's rules and repository, built when a step first asks for that kind: a learning
# step serves one pool, and every pool's rules together take about 20 ms to import.
PoolBuilder = Callable[[], LearningPool]
# An organization's current `allowedModels` (None: the deployment's list), read before a call.
OrgModels = Callable[[str], Sequence[str] | None]


class LearningStarts:
    def __init__(
        self,
        store: Store,
        runs: ExecutionRepository,
        clock: Clock,
        ids: Ids,
        orchestrator: Orchestrator | None,
        models: ModelCatalog,
        pools: Iterable[LearningPool] = (),
        quota: ModelCallQuota | None = None,
        builders: Mapping[PoolKind, PoolBuilder] | None = None,
        org_models: OrgModels | None = None,
    ) -> None:
        self._runs = runs
        self._org_models = org_models
        self._store = store
        self._quota = quota
        self._clock = clock
        self._ids = ids
        self._orchestrator = orchestrator
        self._models = models
        self.copy_wait_s = COPY_WAIT_S
        self._pools: dict[str, LearningPool] = {}
        self._builders = dict(builders or {})
        for pool in pools:
            self.register(pool)

    def register(self, pool: LearningPool) -> None:
        """Plug in (or replace) the rules of one kind of pool."""
        self._pools[pool.kind] = pool

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> StartAnswer:
        """Start learning `pool` up to item `upto`; a "turn" start is named after its
        evidence alone, so repeating it is a no-op. A turn's start skips when the workflow
        is unavailable (the next turn learns this evidence too); others raise Unavailable.
        Over the organization's model-call quota the run is recorded skipped: "throttled"."""
        if self._orchestrator is None:
            return "skipped"
        nonce = None if reason == "turn" else self._ids.new("r")
        name = execution_name(pool, upto, nonce)
        run = run_of(pool, name, self._clock.now_ms(), reason, upto)
        refused = self._quota.take(pool.org_id) if self._quota is not None else None
        if refused is not None:
            try:  # best effort
                note = quota_note(reason, refused)
                self._store.write(self._runs.skipped(run, run.requested_at, note))
            except (Unavailable, WriteConflict):
                log.warning("learning over the model-call quota: the skip was not recorded")
            return "throttled"
        try:
            self._orchestrator.start(name, _payload(run))
        except Unavailable:
            if reason != "turn":
                raise
            log.warning("learning not started: the workflow service is unavailable")
            return "skipped"
        return "started"

    def skipped(self, pool: PoolRef, *, event: str, reason: str, note: str, at: int) -> None:
        """Record, once per pool and `event`, the run a `wait` would have saved, as skipped;
        `at` is the same for every call of one event, so a repeated call finds its row."""
        run = run_of(pool, wait_name(pool, event, "s"), at, reason, 0)
        # A conflict: an earlier call for the same event recorded it.
        with suppress(WriteConflict):
            self._store.write(self._runs.skipped(run, self._clock.now_ms(), note, waited_for=event))

    def wait(
        self, pool: PoolRef, *, event: str, reason: str, upto: int | None = None
    ) -> Literal["waiting", "started", "exists", "skipped"]:
        """Save a run of `pool` that starts when `event` happens, one per pool and event
        (a repeat is "exists"); it starts now when the event happened first. `upto` is the
        last item when known now, else the event's."""
        if self._orchestrator is None:
            return "skipped"
        now = self._clock.now_ms()
        run = run_of(
            pool, wait_name(pool, event), now, reason, UPTO_LATER if upto is None else upto
        )
        recorded = self._runs.wait(run, event, now)
        if recorded.happened is None:
            return "exists" if recorded.repeated else "waiting"
        # A release may have failed to start it; a refused start means it started already.
        started = self._hand_over(recorded.run, recorded.happened, event).started
        if started or not recorded.repeated:
            return "started"  # a new wait refused: the event's release started it
        return "exists"

    def release(self, event: str, *, upto: int | None = None) -> list[Execution]:
        """Record `event` (the first call's `upto` stands) and start every run waiting on
        it, each once under its name, so the next release finishes a failed one."""
        now = self._clock.now_ms()
        data = self._runs.happen(event, {} if upto is None else {"upto": upto}, now)
        if self._orchestrator is None:
            return []
        results: list[Execution] = []
        failed: Unavailable | None = None
        for run in self._runs.waiters(event):
            try:
                results.append(self._hand_over(run, data, event))
            except Unavailable as error:
                failed = error  # the others still start; the next release retries this one
        if failed is not None:
            raise failed
        return results

    def wake(self, event: str) -> list[Execution]:
        """Wait again on `event` for the runs deferred to it (the farthest per pool and
        conversation), then release it."""
        deferred = self._runs.deferred(event)
        farthest: dict[str, Run] = {}
        for run in deferred:
            key = wait_name(run_pool(run), event)
            if key not in farthest or farthest[key].upto < run.upto:
                farthest[key] = run
        for run in farthest.values():
            self.wait(run_pool(run), event=event, reason="budget", upto=run.upto)
        started = self.release(event)
        self._runs.forget_deferred(event, deferred)
        return started

    def _hand_over(self, run: Run, happened: Mapping[str, Any], event: str) -> Execution:
        """Start a waiting run once its event happened, through the event's last item (else
        the one the wait named); the orchestrator's claim of the name refuses every other
        start, so nothing is written on its row. A wait past `WAIT_TTL_S` is not started:
        its name's claim may be gone."""
        assert self._orchestrator is not None  # callers checked
        if self._clock.now_ms() // 1000 >= run.requested_at // 1000 + WAIT_TTL_S:
            return Execution(name=run.name, started=False)
        if "upto" in happened:
            run = replace(run, upto=int(happened["upto"]))
        elif run.upto == UPTO_LATER:
            raise ValueError(f"neither the wait nor the event {event!r} names the last item")
        return self._orchestrator.start(run.name, _payload(run))

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[RunView]:
        """The pool's newest runs, newest first."""
        return self.shown(self._runs.newest(pool.kind, pool.pool_id, limit))

    def shown(self, rows: Sequence[ExecutionRow]) -> list[RunView]:
        """Execution rows read with their evidence rows (`newest`) as their pool's list
        shows them now."""
        now = self._clock.now_ms()
        return [self._shown(row, now) for row in rows]

    def _shown(self, row: ExecutionRow, now: int) -> RunView:
        details = self._runs.details(row)
        recorded = RunView(
            id=row.run.name,
            # A wait shows `waiting` until LoadEvidence begins it, even once it was asked for.
            status="running" if row.begun else row.status,
            started_at=row.started_at,
            ended_at=row.ended_at,
            reason=row.run.reason,
            model=row.model,
            item_ids=row.item_ids,
            applied=list(row.applied),
            rejected=details.get("rejected", []),
            source=row.run.source,
            error=RunError(row.error_type, details.get("error", "")),
            note=details.get("note") or None,
        )
        running_since = next(at for at in (row.began_at, row.started_at) if at is not None)
        return seen_at(recorded, running_since, now)

    def _pool(self, kind: PoolKind) -> LearningPool:
        pool = self._pools.get(kind)
        if pool is None and kind in self._builders:
            pool = self._pools[kind] = self._builders.pop(kind)()
        if pool is None:
            raise LearningStepError(f"no learning rules for pools of kind {kind!r}")
        return pool


def wait_name(pool: PoolRef, event: str, mark: str = "w") -> str:
    """One name per pool and event: a wait's, or with `mark` "s" a skip's."""
    digest = hashlib.sha256(event.encode()).hexdigest()[:16]
    return execution_name(pool, 0, f"{mark}{digest}")


def is_wait_name(name: str) -> bool:
    """Whether `name` is a wait's (`wait_name`): its row exists before LoadEvidence."""
    return _WAIT_NAME.search(name) is not None


_WAIT_NAME = re.compile(r"-0-w[0-9a-f]{16}$")


def _payload(run: Run) -> dict[str, Any]:
    """The execution input of a run (infra/statemachines/README.md)."""
    ref: dict[str, Any] = {"kind": run.kind, "orgId": run.org_id, "poolId": run.pool_id}
    if run.source is not None:
        ref["source"] = list(run.source)
    return {"pool": ref, "upto": run.upto, "reason": run.reason, "requestedAt": run.requested_at}
