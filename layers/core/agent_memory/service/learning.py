"""Durable learning: start a workflow run per completed turn, and the four steps it runs.

Built once for every kind of pool: the pool's rules plug in through `LearningPool`
(service/learning_pools.py). The steps run as Lambda tasks of `learning.asl.json`:
LoadEvidence -> CallModel -> ApplyLearning, any failure -> RecordFailure. Workflow messages
carry ids and counts only; the evidence, the model's request and reply, rejected changes and
error messages are sealed in the table. Decisions: docs/decisions.md, "Durable learning".
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from agent_memory.domain.errors import IntegrityError, Unavailable, WriteConflict
from agent_memory.domain.learning_notes import (
    LEARNED_ELSEWHERE,
    LEARNED_IN_PART,
    NOTHING_NEW,
)
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import STEP_DEADLINE_S, Ask, Refusal
from agent_memory.persistence.events import one_row, pool_changed
from agent_memory.persistence.executions import (
    CALL_OPEN,
    ExecutionRow,
    Run,
    reply_sk,
)
from agent_memory.ports import (
    Action,
    ModelFailure,
    ModelReply,
)
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Deferred,
    Evidence,
    FinishActions,
    Outcome,
    PoolKind,
    PoolRef,
    Skipped,
)
from agent_memory.service.learning_runs import (
    EvidenceTooLarge,
    ExecutionLost,
    NoModel,
    Retryable,
    describe_error,
    evidence_from_json,
    evidence_json,
    model_error,
    step_run,
)
from agent_memory.service.learning_start import (
    LearningStarts,
    is_wait_name,
)

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
# How often a copy of an execution looks for the other copy's saved answer.
COPY_POLL_S = 0.25


# A paid-for model call's charge and answer are written harder than a step retry would:
# these pauses (seconds) between tries, None after the last.
PAID_PAUSES_S: tuple[float | None, ...] = (0.2, 0.5, None)


class LearningService(LearningStarts):
    """Starts learning runs, lists them, and runs their steps for any registered pool."""

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
            now = self._clock.now_ms()
            if evidence is not None:
                evidence = self._keep(run, evidence, now, waited=waited)
                if row is not None:  # its `waiting` row: the run began on its evidence row
                    return _began(evidence)
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
        return {"status": "skipped", "items": 0} if evidence is None else _began(evidence)

    def _keep(self, run: Run, evidence: Evidence, now: int, *, waited: bool) -> Evidence:
        """Seal the evidence on the run's evidence row (a wait's row says where it began,
        whoever writes it); an earlier attempt's evidence, kept first, stands."""
        text = evidence_json(evidence)
        if len(text.encode()) > MAX_EVIDENCE_BYTES:
            raise EvidenceTooLarge(f"the evidence is over {MAX_EVIDENCE_BYTES} bytes")
        kept = self._runs.keep_evidence(
            run,
            text,
            now,
            begins=waited,
            position=evidence.position,
            item_ids=[item.id for item in evidence.items],
            model=evidence.model,
        )
        return evidence if kept == text else evidence_from_json(kept)

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
            logged = {"task": request.task, "system": request.system, "user": request.user}
            claimed = self._claim_call(
                run, event, attempt, model.name, json.dumps(logged, ensure_ascii=False)
            )
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
            self._check_reply(run, sk, ask, reply)
            answer = self._save_answer(run, sk, reply)
        return {"status": "answered", "call": answer, "reused": False, "task": ask.name}

    def _check_reply(self, run: Run, sk: str, ask: Ask[Any, Any], reply: ModelReply) -> None:
        """A reply too large or not parseable fails its call (and the step)."""
        try:
            if len(reply.text.encode()) > MAX_REPLY_BYTES:
                raise InvalidModelOutput(f"the answer is over {MAX_REPLY_BYTES} bytes")
            ask.parse(reply.text)
        except InvalidModelOutput:
            self._runs.call_failed(run, sk, "invalid_output", self._clock.now_ms())
            raise

    def _save_answer(self, run: Run, sk: str, reply: ModelReply) -> str:
        """Save a paid answer, harder than a step retry would (a try here never charges: the
        call was charged once); the step's handle on it (its own row)."""
        usage = {"input": reply.usage.input_tokens, "output": reply.usage.output_tokens}
        answer = reply_sk(sk)
        for pause in PAID_PAUSES_S:
            try:
                self._runs.call_answered(
                    run, sk, reply.text, usage, reply.latency_ms, self._clock.now_ms()
                )
                return answer
            except (Unavailable, WriteConflict) as error:
                if isinstance(error, WriteConflict) and error.condition == CALL_OPEN:
                    # The attempt's answer is saved already: an earlier try committed it
                    # (its reply was lost on the way); accepted only if it is the run's.
                    if self._running(run) is not None and self._answered(run) == answer:
                        return answer
                    raise ExecutionLost("the saved call was closed before its answer") from None
                # A conflict without a failed condition is another transaction on the
                # same rows (TransactionConflict): transient, like an outage.
                lost_race = isinstance(error, WriteConflict) and error.index is None
                if pause is None or not (isinstance(error, Unavailable) or lost_race):
                    raise
                time.sleep(pause)
        return answer

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
                fresh, note = self._unread_again(run, ref, seen)
                if fresh is None:
                    kept = ask.describe(review.kept)
                    return self._skip(run, row, kept, review.refused, note or LEARNED_ELSEWHERE)
                # The same answer, judged against what is still unread: the pool refuses a
                # change citing an item the other run learned (LearningPool.apply).
                evidence = fresh
        raise Retryable("LearningConflict", "the pool kept changing while learning")

    def _unread_again(
        self, run: Run, ref: PoolRef, seen: set[str]
    ) -> tuple[Evidence | None, str | None]:
        """What is still unread once another run moved first, or None and why the answer
        is not applied: nothing may be learned now, all of it was learned, or what is
        unread holds items its model never saw (they stay unread for a later run)."""
        try:
            fresh = self._pool(ref.kind).load_evidence(ref, run.upto)
        except Skipped as skipped:
            if isinstance(skipped, Deferred):
                self._wait_again(run, ref, skipped)
            return None, skipped.reason
        if fresh is None:
            return None, LEARNED_ELSEWHERE
        if not {item.id for item in fresh.items} <= seen:
            return None, LEARNED_IN_PART
        return fresh, None

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


def _began(evidence: Evidence) -> dict[str, Any]:
    return {"status": "running", "position": evidence.position, "items": len(evidence.items)}


@contextmanager
def _transient() -> Iterator[None]:
    """Turn a transient AWS failure into Retryable, for the ASL to retry. IntegrityError too:
    the Encryption SDK reports a failed KMS Decrypt (throttled, 5xx) as "cannot decrypt", so
    the cipher cannot tell an outage from a bad blob; a bad blob fails after the retries."""
    try:
        yield
    except (Unavailable, IntegrityError) as error:
        raise Retryable(type(error).__name__, error.message) from error
