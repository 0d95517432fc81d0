"""Durable learning: start a workflow run per completed turn, and the four steps it runs.

Built once for every kind of pool: the pool's rules plug in through `LearningPool`
(service/learning_pools.py). The steps run as Lambda tasks of `learning.asl.json`:
LoadEvidence -> CallModel -> ApplyLearning, any failure -> RecordFailure. Workflow messages
carry ids and counts only; the evidence, the model's request and reply, rejected changes and
error messages are sealed in the table. Decisions: docs/decisions.md, "Durable learning".
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Literal

from agent_memory.domain.errors import IntegrityError, Unavailable, WriteConflict
from agent_memory.domain.learning_notes import (
    LEARNED_ELSEWHERE,
    LEARNED_IN_PART,
    NOTHING_NEW,
    failure_note,
)
from agent_memory.domain.limits import quota_note
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import STEP_DEADLINE_S, Ask, Refusal
from agent_memory.persistence.events import one_row, pool_changed
from agent_memory.persistence.executions import (
    CALL_OPEN,
    WAIT_TTL_S,
    ExecutionRepository,
    ExecutionRow,
    Run,
    reply_sk,
)
from agent_memory.ports import (
    Action,
    Cipher,
    Clock,
    Execution,
    Ids,
    ModelCatalog,
    ModelFailure,
    ModelReply,
    Orchestrator,
    Store,
)
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Deferred,
    Evidence,
    FinishActions,
    LearningPool,
    Outcome,
    PoolKind,
    PoolRef,
    Skipped,
    SourceRef,
)
from agent_memory.service.learning_runs import (
    EvidenceTooLarge,
    ExecutionLost,
    LearningStepError,
    NoModel,
    Retryable,
    describe_error,
    evidence_from_json,
    evidence_json,
    execution_name,
    model_error,
    step_run,
)
from agent_memory.service.limits import ModelCallQuota

log = logging.getLogger(__name__)

CALL_STEP = "CallModel"
# Sealed evidence must fit one 400 KB row with room to spare; a pool bounds what it loads.
MAX_EVIDENCE_BYTES = 300_000
# A model answer larger than this is not a memory update (100 changes of a few sentences).
MAX_REPLY_BYTES = 200_000
# A learning step's model call gives up first, with a kind, inside the 120 s CallModel step.
MODEL_DEADLINE_S = STEP_DEADLINE_S
# ApplyLearning re-reads and re-applies this often when memory changes under it.
APPLY_ROUNDS = 3
# How a copy of an execution waits for the other copy's model call (under CallModel's 120 s).
COPY_WAIT_S = 100.0
COPY_POLL_S = 0.25
# The state machine's own TimeoutSeconds (300 s, Express's limit) plus a margin: a row still
# "running" after that lost its execution (it timed out or RecordFailure itself failed).
RUN_LIMIT_MS = (300 + 300) * 1000
# The `upto` of a wait whose last item only its event will tell (a turn still open).
UPTO_LATER = -1


# A paid-for model call's charge and answer are written harder than a step retry would:
# these pauses (seconds) between tries, None after the last.
PAID_PAUSES_S: tuple[float | None, ...] = (0.2, 0.5, None)


class LearningService:
    """Starts learning runs, lists them, and runs their steps for any registered pool."""

    def __init__(
        self,
        store: Store,
        cipher: Cipher,
        clock: Clock,
        ids: Ids,
        orchestrator: Orchestrator | None,
        models: ModelCatalog,
        pools: Iterable[LearningPool] = (),
        quota: ModelCallQuota | None = None,
    ) -> None:
        self._runs = ExecutionRepository(store, cipher)
        self._store = store
        # ORG_MODEL_CALLS_PER_MINUTE, taken by every start (service/limits.py).
        self._quota = quota
        self._clock = clock
        self._ids = ids
        self._orchestrator = orchestrator
        self._models = models
        self.copy_wait_s = COPY_WAIT_S
        self._pools: dict[str, LearningPool] = {}
        for pool in pools:
            self.register(pool)

    def register(self, pool: LearningPool) -> None:
        """Plug in (or replace) the rules of one kind of pool."""
        self._pools[pool.kind] = pool

    # -- the API side ------------------------------------------------------------------------

    def start(
        self, pool: PoolRef, *, upto: int, reason: str
    ) -> Literal["started", "skipped", "throttled"]:
        """Start learning `pool` up to item `upto`. `reason` "turn" names the run after the
        evidence alone, so a repeated start is a no-op; any other reason ("refresh", a retry)
        adds a nonce, because Step Functions refuses a used name for 90 days.

        "skipped" when this deployment has no workflow, or when a turn's start finds the
        workflow service unavailable: the turn is already saved, the read position did not
        move, and the next turn learns from this evidence too. Other reasons raise
        Unavailable (503) so that the caller may retry.

        Every start is a model call of the pool's organization: over its quota
        (ORG_MODEL_CALLS_PER_MINUTE) the run is recorded as skipped with a note saying why,
        and "throttled" is answered; the read position did not move."""
        if self._orchestrator is None:
            return "skipped"
        nonce = None if reason == "turn" else self._ids.new("r")
        name = execution_name(pool, upto, nonce)
        refused = self._quota.take(pool.org_id) if self._quota is not None else None
        if refused is not None:
            self._record_skip(pool, name, upto, reason, quota_note(reason, refused))
            return "throttled"
        payload = _payload(_run(pool, name, self._clock.now_ms(), reason, upto))
        try:
            self._orchestrator.start(name, payload)
        except Unavailable:
            if reason != "turn":
                raise
            log.warning("learning not started: the workflow service is unavailable")
            return "skipped"
        return "started"

    def _record_skip(self, pool: PoolRef, name: str, upto: int, reason: str, note: str) -> None:
        """A run that never started, with why, for the pool's executions. Best effort: the
        caller's request succeeds whether or not the row is written."""
        now = self._clock.now_ms()
        try:
            run = _run(pool, name, now, reason, upto)
            self._store.write([self._runs.skipped(run, now, note), *self._runs.ended(run, now)])
        except (Unavailable, WriteConflict):
            log.warning("learning over the model-call quota: the skip was not recorded")

    def skipped(self, pool: PoolRef, *, event: str, reason: str, note: str, at: int) -> None:
        """Record, once per pool and `event`, the run a `wait` for `event` would have saved,
        as skipped with why (`note`): nothing may be learned, so nothing waits. `at`: when
        it was asked for, the same for every call of one event (a Turn's start), so a
        repeated call finds its row. A later wait for the same event is a run of its own
        (its name differs), so a model configured meanwhile still learns. Raises
        Unavailable when the table is unavailable."""
        now = self._clock.now_ms()
        run = _run(pool, skip_name(pool, event), at, reason, 0)
        try:
            row = self._runs.skipped(run, now, note, waited_for=event)
            self._store.write([row, *self._runs.ended(run, now)])
        except WriteConflict:
            pass  # recorded by an earlier call for the same event

    def wait(
        self, pool: PoolRef, *, event: str, reason: str, upto: int | None = None
    ) -> Literal["waiting", "started", "exists", "skipped"]:
        """Save a learning execution of `pool` that starts when `event` happens (`release`),
        e.g. `turn:<org>:<chat>:<turn>` (a confide waits for its turn) or a budget period.
        The wait is a row: it survives restarts. One wait per pool and event: a repeated
        call is "exists" (a call retried after a crash completes the first one's wait).
        When the event happened first, the run starts now ("started"). `upto` is the last
        item to read when known now; else the event's `upto` says.

        The wait is written before the event is read, and a release writes the event before
        it reads the waits, so one of them finds the other; whichever does asks the workflow
        to start the run under its name, and when both do, the orchestrator refuses the
        second start (docs/decisions.md: nothing is written to release it).

        "skipped" when this deployment has no workflow (nothing is saved). Raises
        Unavailable when the table or, for an event that already happened, the workflow
        service is unavailable (call again: it is started once)."""
        if self._orchestrator is None:
            return "skipped"
        now = self._clock.now_ms()
        run = _run(pool, wait_name(pool, event), now, reason, UPTO_LATER if upto is None else upto)
        recorded = self._runs.wait(run, event, now)
        if recorded.happened is None:
            return "exists" if recorded.repeated else "waiting"
        if _forgotten(recorded.run, now):
            return "exists"
        named = None if recorded.run.upto == UPTO_LATER else recorded.run.upto
        run = replace(recorded.run, upto=_upto(recorded.happened, named, event))
        # Saved before or not, it is asked for: a release (or this call, before) may have
        # failed to start it; a refused start means it started already.
        if self._hand_over(run, now).started or not recorded.repeated:
            return "started"  # a new wait refused: the event's release started it
        return "exists"

    def release(self, event: str, *, upto: int | None = None) -> list[Execution]:
        """`event` happened: record it (once: the first call's `upto` stands, and a wait
        saved later starts at once) and start every execution waiting on it. Each is
        started once: every linked run is asked for under its name, which the orchestrator
        refuses when it started before (`started=False`), so a release that failed to start
        one (or died before it could) is finished by the next. A run asked for before its
        wait wrote its row (a wait half written) starts as well: its link names it, and
        LoadEvidence writes its row. Nothing is written on the runs' rows. Raises
        Unavailable when the table or the workflow service fails (call again)."""
        now = self._clock.now_ms()
        data = self._runs.happen(event, {} if upto is None else {"upto": upto}, now)
        if self._orchestrator is None:
            return []
        results: list[Execution] = []
        failed: Unavailable | None = None
        for waiter in self._runs.waiters(event):
            if _forgotten(waiter.run, now):
                results.append(Execution(name=waiter.run.name, started=False))
                continue
            named = None if waiter.run.upto == UPTO_LATER else waiter.run.upto
            run = replace(waiter.run, upto=_upto(data, named, event))
            try:
                results.append(self._hand_over(run, now))
            except Unavailable as error:
                failed = error  # the others still start; the next release retries this one
        if failed is not None:
            raise failed
        return results

    def wake(self, event: str) -> list[Execution]:
        """`event` happened (a budget period started): every run deferred to it is saved
        again as a wait on it, reading as far as the farthest deferred run of its pool and
        conversation, and the event is released (`release`: each run starts once, however
        often this is called). Raises Unavailable when the table or the workflow failed
        (call again)."""
        deferred = self._runs.deferred(event)
        farthest: dict[str, Run] = {}
        for run in deferred:
            key = wait_name(_ref(run), event)
            if key not in farthest or farthest[key].upto < run.upto:
                farthest[key] = run
        for run in farthest.values():
            self.wait(_ref(run), event=event, reason="budget", upto=run.upto)
        started = self.release(event)
        self._runs.forget_deferred(event, deferred)
        return started

    def _hand_over(self, run: Run, now: int) -> Execution:
        """Ask the workflow to start a run whose event happened, reading up to `run.upto`
        (the event's, else the wait's: the same for every caller, so each asks with the
        same input). Nothing is written on its row: the orchestrator's claim of the name
        lets one start happen and refuses the others (`started=False`), whoever asks and
        however often; a run that began or ended is refused too. A start the workflow
        refused gives the name back, so the next release or repeated wait asks again."""
        assert self._orchestrator is not None  # callers checked
        return self._orchestrator.start(run.name, _payload(run))

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[dict[str, Any]]:
        """The pool's newest executions, newest first, in API.md's Execution shape."""
        now = self._clock.now_ms()
        rows = self._runs.newest(pool.kind, pool.org_id, pool.pool_id, limit, evidence=True)
        return [self._view(row, now) for row in rows]

    def _view(self, row: ExecutionRow, now: int) -> dict[str, Any]:
        # A wait shows `waiting` until LoadEvidence begins it on its evidence row, even once
        # it was asked for (a second at most; nothing is written to release it), then
        # `running` until it ends (its row is not written in between).
        status: str = "running" if row.begun else row.status
        details = self._runs.details(row) if "detail" in row.record else {}
        error = {"type": row.error_type, "message": details.get("error", "")}
        running_since = next(at for at in (row.began_at, row.started_at) if at is not None)
        if status == "running" and now - running_since > RUN_LIMIT_MS:
            status = "failed"
            error = {"type": "States.Timeout", "message": "the run did not finish in time"}
        view: dict[str, Any] = {
            "id": row.run.name,
            "status": status,
            "startedAt": row.started_at,
            "endedAt": row.ended_at,
            "itemIds": row.item_ids,
            "applied": row.applied,
            "rejected": details.get("rejected", []),
            "reason": row.run.reason,
            "model": row.model,
        }
        if row.run.session:
            view["sessionId"] = row.run.session
        if status == "failed":
            view["error"] = error
            # Said from its kind when shown, so a run timed out while listed says it too.
            view["note"] = failure_note(str(error["type"]))
        if details.get("note"):
            view["note"] = details["note"]
        return view

    # -- the steps ---------------------------------------------------------------------------

    def load_evidence(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """LoadEvidence: the unprocessed items up to `upto`, sealed on the run's evidence row,
        then the execution's row (written here, so a start that never ran leaves no
        "running" ghost; small, as its end bills its size twice). A retried or
        repeated step learns from the evidence its first attempt kept.

        A waited run (a confide's) whose `waiting` row exists begins on its evidence row
        alone: that row carries the position, items and model, and the execution row is
        written once, when the run ends (one write unit less). Its row is read
        first (1 read unit, less than the update it replaces): one that ended already (a
        repeated step, a run started again once its name was forgotten) learns nothing,
        and one not written yet (a wait started before its row was) is put by `begin`."""
        run, ref, _state, _attempt = step_run(event)
        waited = is_wait_name(run.name)
        with _transient():
            row = self._runs.get(run) if waited else None
            if row is not None and row.terminal:
                return {"status": row.status, "position": row.position, "items": len(row.item_ids)}
            note: str | None = None
            try:
                evidence = self._pool(ref.kind).load_evidence(ref, run.upto)
            except Deferred as deferred:
                return self._defer(run, ref, deferred)
            except Skipped as skipped:
                evidence, note = None, skipped.reason
            if evidence is None:
                note = note or NOTHING_NEW
            text = evidence_json(evidence) if evidence else None
            if text is not None and len(text.encode()) > MAX_EVIDENCE_BYTES:
                raise EvidenceTooLarge(f"the evidence is over {MAX_EVIDENCE_BYTES} bytes")
            now = self._clock.now_ms()
            if evidence is not None and text is not None:
                # A wait's evidence row says where it began, whoever writes its row.
                kept = self._runs.keep_evidence(
                    run,
                    text,
                    now,
                    begins=waited,
                    position=evidence.position,
                    item_ids=[item.id for item in evidence.items],
                    model=evidence.model,
                )
                if kept != text:  # an earlier attempt kept its evidence first: it stands
                    evidence = evidence_from_json(kept)
                if row is not None:  # its `waiting` row: the run began on its evidence row
                    return {
                        "status": "running",
                        "position": evidence.position,
                        "items": len(evidence.items),
                    }
            try:
                self._runs.begin(
                    run,
                    now,
                    learns=evidence is not None,
                    position=evidence.position if evidence else None,
                    item_ids=[item.id for item in evidence.items] if evidence else None,
                    model=evidence.model if evidence else None,
                    note=note,
                    waited=waited,
                )
            except WriteConflict:
                # A retried step: the first attempt's row (and its evidence) stands.
                row = self._runs.get(run)
                if row is None:
                    raise Retryable("LearningConflict", "the execution row changed") from None
                return {"status": row.status, "position": row.position, "items": len(row.item_ids)}
        if evidence is None:
            return {"status": "skipped", "items": 0}
        return {"status": "running", "position": evidence.position, "items": len(evidence.items)}

    def call_model(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """CallModel: one model call, saved with its attempt; a saved answer of an earlier
        attempt of this execution is reused instead of calling the model again."""
        run, _ref, state, attempt = step_run(event)
        if (state.get("evidence") or {}).get("status") != "running":
            return {"status": "skipped"}
        with _transient():
            row = self._running(run, evidence=True)
            if row is None:
                return {"status": "ended"}
            saved = self._answered(run)
            if saved:
                # An earlier attempt saved its answer (it crashed, or its reply was lost).
                return {"status": "answered", "call": saved, "reused": True}
            evidence = evidence_from_json(self._evidence(row))
            model = self._models.resolve(evidence.model)
            if model is None:
                raise NoModel(f"no model named {evidence.model!r} is configured here")
            ask = self._ask(run.kind, evidence)
            request = ask.request(MODEL_DEADLINE_S)
            logged = json.dumps(
                {"task": request.task, "system": request.system, "user": request.user},
                ensure_ascii=False,
            )
            claimed = self._claim_call(run, event, attempt, model.name, logged)
            if not isinstance(claimed, str):
                return claimed  # the other copy's answer (or the run ended meanwhile)
            sk = claimed
            try:
                reply = model.propose(request)
            except ModelFailure as failure:
                self._runs.call_failed(run, sk, failure.kind, self._clock.now_ms())
                raise model_error(failure) from None
            # This real call is paid, whether or not its answer is saved or used: charge it
            # now, once, before the answer is saved (docs/decisions.md).
            self._charge(run, evidence, reply)
            try:
                if len(reply.text.encode()) > MAX_REPLY_BYTES:
                    raise InvalidModelOutput(f"the answer is over {MAX_REPLY_BYTES} bytes")
                ask.parse(reply.text)
            except InvalidModelOutput:
                self._runs.call_failed(run, sk, "invalid_output", self._clock.now_ms())
                raise
            usage = {"input": reply.usage.input_tokens, "output": reply.usage.output_tokens}
            answer = reply_sk(sk)  # the step's handle on the saved answer (its own row)
            # The answer is paid for: try harder to save it than a step retry would (a try
            # of this loop never charges: the call was charged once, above).
            for pause in PAID_PAUSES_S:
                try:
                    self._runs.call_answered(
                        run, sk, reply.text, usage, reply.latency_ms, self._clock.now_ms()
                    )
                    break
                except (Unavailable, WriteConflict) as error:
                    if isinstance(error, WriteConflict) and error.condition == CALL_OPEN:
                        # The attempt's answer is saved already: an earlier try committed it
                        # (its reply was lost on the way); accepted only if it is the run's.
                        still = self._running(run)
                        if still is not None and self._answered(run) == answer:
                            break
                        raise ExecutionLost("the saved call was closed before its answer") from None
                    # A conflict without a failed condition is another transaction on the
                    # same rows (TransactionConflict): transient, like an outage.
                    lost_race = isinstance(error, WriteConflict) and error.index is None
                    if pause is None or not (isinstance(error, Unavailable) or lost_race):
                        raise
                    time.sleep(pause)
        return {"status": "answered", "call": answer, "reused": False, "task": ask.name}

    def _charge(self, run: Run, evidence: Evidence, reply: ModelReply) -> None:
        """What the pool spends on one real model call (e.g. a memory Bot's budget), in a
        plain write of its own, before the answer is saved: a crash after it calls the model
        again on the step's retry, a second real call charged once more; an answer saved
        and reused later (a retried step, the other copy of an execution) is never charged
        again, as only a real call comes here. Retried on an outage like the save; past
        that the step fails and its retry calls (and charges) anew."""
        spent = list(self._pool(run.kind).charge(evidence, reply))
        if not spent:
            return
        for pause in PAID_PAUSES_S:
            try:
                self._store.write(spent)
                return
            except Unavailable:
                if pause is None:
                    raise
                time.sleep(pause)

    def _claim_call(
        self, run: Run, event: Mapping[str, Any], attempt: int, model: str, logged: str
    ) -> str | dict[str, Any]:
        """The call row of this attempt, saved with `logged` (the request), when this copy
        of the execution may call the model. An asynchronous Express execution can run
        twice: the copy that did not claim the call waits for the other's saved answer
        (reused, never paid twice) instead of calling. The claim is on the first attempt's
        call row: attempt 0 claims with it in one write (`ExecutionRepository.claim_call`)."""
        owner = str(event["context"].get("executionId") or run.name)
        hold_ms = int((MODEL_DEADLINE_S + 10) * 1000)
        now = self._clock.now_ms()
        claim = self._runs.claim_call(run, CALL_STEP, attempt, owner, model, logged, now, hold_ms)
        if claim.call is not None:
            return claim.call
        if claim.holder is None:
            # Another copy's first claim ran out: the next attempt takes it over (ASL retry).
            raise Retryable("LearningBusy", "another copy's claim of the model call ran out")
        deadline = time.monotonic() + self.copy_wait_s
        while time.monotonic() < deadline:
            time.sleep(COPY_POLL_S)
            row = self._running(run)
            if row is None:
                return {"status": "ended"}
            saved = self._answered(run)
            if saved:
                return {"status": "answered", "call": saved, "reused": True}
        raise Retryable("LearningBusy", "another copy of this execution is calling the model")

    def apply_learning(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """ApplyLearning: check the saved answer's changes against the pool's rules and commit
        them, the read position and the execution's end in one transaction, conditional on
        the read position the run started from. When another run moved it first, the
        changes are checked again against what is still unprocessed (or the run is skipped)."""
        run, ref, state, _attempt = step_run(event)
        answered = state.get("model") or {}
        if answered.get("status") != "answered":
            return self._ended(run, (state.get("evidence") or {}).get("status", "skipped"))
        with _transient():
            row, text = self._runs.with_reply(run, str(answered["call"]))
            if row is None:
                # Its pool was erased while the model worked: what the call left goes too.
                self._runs.forget_calls(run)
                raise ExecutionLost("the execution's row is missing")
            if row.terminal:
                return {"status": row.status}
            if text is None:
                raise ExecutionLost("the saved model answer is gone")
            evidence = evidence_from_json(self._evidence(row))
            seen = {item.id for item in evidence.items}
            ask = self._ask(ref.kind, evidence)
            review = ask.review(ask.parse(text))
            pool = self._pool(ref.kind)
            for _round in range(APPLY_ROUNDS):
                try:
                    finish = self._finisher(run, row, review.refused)
                    outcome = pool.apply(evidence, review.kept, finish)
                    return {
                        "status": "succeeded",
                        "applied": len(outcome.applied),
                        "rejected": len(outcome.rejected) + len(review.refused),
                    }
                except (AlreadyApplied, WriteConflict):
                    pass  # another run, an edit or our own earlier attempt: look again
                if self._running(run) is None:
                    return self._ended(run)
                try:
                    fresh = pool.load_evidence(ref, run.upto)
                except Skipped as skipped:
                    if isinstance(skipped, Deferred):
                        self._wait_again(run, ref, skipped)
                    kept = ask.describe(review.kept)
                    return self._skip(run, row, kept, review.refused, skipped.reason)
                if fresh is None:
                    kept = ask.describe(review.kept)
                    return self._skip(run, row, kept, review.refused, LEARNED_ELSEWHERE)
                if not {item.id for item in fresh.items} <= seen:
                    # Applied there, the answer would mark items read that its model never
                    # saw: they stay unread for a later run, with what is left of these.
                    kept = ask.describe(review.kept)
                    return self._skip(run, row, kept, review.refused, LEARNED_IN_PART)
                # The same answer, judged against what is still unread: the pool refuses a
                # change citing an item the other run learned (LearningPool.apply).
                evidence = fresh
        raise Retryable("LearningConflict", "the pool kept changing while learning")

    def record_failure(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """RecordFailure: the error's type and message on the execution row. The pool is not
        touched, so its read position stays and the next run reads this evidence again. A
        waited run's row is read with its evidence row, where it began (its items)."""
        run, _ref, state, _attempt = step_run(event)
        error_type, message = describe_error(state.get("error"))
        step = self._failed_step(state)
        waited = is_wait_name(run.name)
        with _transient():
            for _round in range(2):
                existing = self._runs.get(run, evidence=waited)
                if existing is not None and existing.terminal:
                    return {"status": existing.status, "recorded": False}
                try:
                    self._runs.fail(
                        run, self._clock.now_ms(), error_type, f"{step}: {message}", existing
                    )
                    return {"status": "failed", "type": error_type, "recorded": True}
                except WriteConflict:
                    continue
        raise Retryable("LearningConflict", "the execution row kept changing")

    # -- helpers -----------------------------------------------------------------------------

    def _wait_again(self, run: Run, ref: PoolRef, deferred: Deferred) -> None:
        """Note a deferred run in `deferred.event`'s list, for `wake` to save again as a
        wait (a step writes no wait itself: only the API and the tick start learning)."""
        self._store.write([self._runs.deferral(run, deferred.event, self._clock.now_ms())])

    def _defer(self, run: Run, ref: PoolRef, deferred: Deferred) -> dict[str, Any]:
        """LoadEvidence of a run its pool may not learn now: noted for `wake` first (a
        retried step notes it again, the same row), then the run ends skipped with why."""
        self._wait_again(run, ref, deferred)
        try:
            self._runs.begin(
                run,
                self._clock.now_ms(),
                learns=False,
                note=deferred.note,
                waited=is_wait_name(run.name),
            )
        except WriteConflict:
            row = self._runs.get(run)  # a retried step: the first attempt's row stands
            if row is None:
                raise Retryable("LearningConflict", "the execution row changed") from None
            return {"status": row.status, "items": 0}
        return {"status": "skipped", "items": 0}

    def _pool(self, kind: PoolKind) -> LearningPool:
        pool = self._pools.get(kind)
        if pool is None:
            raise LearningStepError(f"no learning rules for pools of kind {kind!r}")
        return pool

    def _ask(self, kind: PoolKind, evidence: Evidence) -> Ask[Any, Any]:
        """The pool's task for this evidence."""
        return self._pool(kind).task(evidence)

    def _answered(self, run: Run) -> str | None:
        """The saved answer this run uses: its answer row, when an attempt saved one."""
        return self._runs.answered_call(run, CALL_STEP)

    def _running(self, run: Run, *, evidence: bool = False) -> ExecutionRow | None:
        """The run's row while it runs (with its evidence when `evidence`, in the same
        request); None once it ended. Raises when it is missing."""
        row = self._runs.get(run, evidence=evidence)
        if row is None:
            raise ExecutionLost("the execution's row is missing")
        return None if row.terminal else row

    def _evidence(self, row: ExecutionRow) -> str:
        text = self._runs.evidence(row)
        if text is None:
            raise ExecutionLost("the execution's evidence is missing")
        return text

    def _ended(self, run: Run, status: str | None = None) -> dict[str, Any]:
        row = self._runs.get(run)
        return {"status": row.status if row else (status or "skipped")}

    def _finisher(
        self, run: Run, row: ExecutionRow, refused: Sequence[Refusal] = ()
    ) -> FinishActions:
        """The execution's end, from `row` as ApplyLearning read it (a waited run that began
        on its evidence row ends from `waiting`); what the task's own rules refused is
        recorded first."""

        def finish(outcome: Outcome) -> list[Action]:
            now = self._clock.now_ms()
            # The memory's event, in the transaction that changes it (docs: "Events").
            # Both events (`memory.changed`, then `execution.ended`) in one row.
            learned = pool_changed(run.kind, run.org_id, run.pool_id, now)
            ending = self._runs.finish_actions(
                run,
                now,
                status="succeeded",
                applied=outcome.applied,
                rejected=[r.to_dict() for r in refused] + outcome.rejected,
                row=row,
            )
            return one_row([*(learned if outcome.applied else []), *ending])

        return finish

    def _skip(
        self,
        run: Run,
        row: ExecutionRow,
        changes: Sequence[Mapping[str, Any]],
        refused: Sequence[Refusal],
        note: str,
    ) -> dict[str, Any]:
        rejected = [r.to_dict() for r in refused]
        rejected += [{"change": dict(change), "reason": note} for change in changes]
        try:
            self._runs.finish(
                run, self._clock.now_ms(), status="skipped", rejected=rejected, note=note, row=row
            )
        except WriteConflict:
            return self._ended(run)
        return {"status": "skipped", "applied": 0, "rejected": len(rejected)}

    @staticmethod
    def _failed_step(state: Mapping[str, Any]) -> str:
        if "evidence" not in state:
            return "LoadEvidence"
        if "model" not in state:
            return "CallModel"
        return "ApplyLearning"


def wait_name(pool: PoolRef, event: str) -> str:
    """The execution name of `pool`'s wait for `event`: one per pool and event."""
    digest = hashlib.sha256(event.encode()).hexdigest()[:16]
    return execution_name(pool, 0, f"w{digest}")


def skip_name(pool: PoolRef, event: str) -> str:
    """The execution name of `pool`'s skipped learning for `event`: one per pool and event."""
    digest = hashlib.sha256(event.encode()).hexdigest()[:16]
    return execution_name(pool, 0, f"s{digest}")


def is_wait_name(name: str) -> bool:
    """Whether `name` is a wait's (`wait_name`): its row exists before LoadEvidence."""
    return _WAIT_NAME.search(name) is not None


_WAIT_NAME = re.compile(r"-0-w[0-9a-f]{16}$")


def _run(pool: PoolRef, name: str, now: int, reason: str, upto: int) -> Run:
    return Run(pool.kind, pool.org_id, pool.pool_id, name, now, reason, upto, pool.session)


def _ref(run: Run) -> PoolRef:
    """The pool (and conversation) a run learns, as its row names it."""
    source = SourceRef("session", run.session) if run.session else None
    return PoolRef(run.kind, run.org_id, run.pool_id, source)


def _upto(data: Mapping[str, Any], upto: int | None, event: str) -> int:
    """The last item a released run reads: the event's, else the one the wait named."""
    if "upto" in data:
        return int(data["upto"])
    if upto is None:
        raise ValueError(f"neither the wait nor the event {event!r} names the last item")
    return upto


def _forgotten(run: Run, now: int) -> bool:
    """Whether the wait of `run` is past its time (`WAIT_TTL_S` from when it was asked
    for): its link and event are expired, only not deleted yet. The orchestrator keeps a
    name at least that long from the start, which came later; past it, a start might no
    longer be refused, so an expired wait is not asked for again."""
    return now // 1000 >= run.requested_at // 1000 + WAIT_TTL_S


def _payload(run: Run) -> dict[str, Any]:
    """The execution input of a run (infra/statemachines/README.md), as `start` builds it."""
    ref: dict[str, str] = {"kind": run.kind, "orgId": run.org_id, "poolId": run.pool_id}
    if run.session:
        ref["sessionId"] = run.session
    return {"pool": ref, "upto": run.upto, "reason": run.reason, "requestedAt": run.requested_at}


@contextmanager
def _transient() -> Iterator[None]:
    """Turn a transient AWS failure into Retryable, for the ASL to retry. IntegrityError too:
    the Encryption SDK reports a failed KMS Decrypt (throttled, 5xx) as "cannot decrypt", so
    the cipher cannot tell an outage from a bad blob; a bad blob fails after the retries."""
    try:
        yield
    except (Unavailable, IntegrityError) as error:
        raise Retryable(type(error).__name__, error.message) from error
