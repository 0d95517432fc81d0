"""The steps of a learning run: LoadEvidence -> CallModel -> ApplyLearning, or RecordFailure.

Workflow messages carry ids and counts only; evidence, model calls and errors are sealed in
the table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.learning_notes import LEARNED_ELSEWHERE, LEARNED_IN_PART, NOTHING_NEW
from agent_memory.domain.tasks.base import Ask
from agent_memory.persistence.events import one_row, pool_changed
from agent_memory.persistence.retrying import AGAIN, Again, until_it_lands
from agent_memory.persistence.runs import Began, ExecutionRow, Run
from agent_memory.ports import Action
from agent_memory.service.learning_call import ModelCallStep, transient
from agent_memory.service.learning_pools import (
    APPLY_TRIES,
    AlreadyApplied,
    Deferred,
    Evidence,
    FinishActions,
    Outcome,
    PoolRef,
    Skipped,
    apply_cycle,
)
from agent_memory.service.learning_runs import (
    EvidenceTooLarge,
    ExecutionLost,
    Retryable,
    describe_error,
    evidence_from_json,
    evidence_json,
    step_run,
)
from agent_memory.service.learning_start import is_wait_name

log = logging.getLogger(__name__)

# Sealed evidence must fit one 400 KB row with room to spare; a pool bounds what it loads.
MAX_EVIDENCE_BYTES = 300_000


class LearningService(ModelCallStep):
    def load_evidence(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Seal the unread items on the run's evidence row, then write the execution's row,
        so a start that never ran leaves no "running" ghost; a retry keeps the first
        attempt's evidence. A waited run begins on its evidence row alone."""
        run, ref, _state, _attempt = step_run(event)
        waited = is_wait_name(run.name)
        with transient():
            row = self._runs.get(run) if waited else None
            if row is not None and row.terminal:
                return _row_answer(row)
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
                    return self._began(ref, evidence)
            try:
                began = _began(evidence) if evidence is not None else None
                self._runs.begin(run, now, began, note=note, waited=waited)
            except WriteConflict:
                return _row_answer(self._first_attempts(run)) | self._model_free(ref, evidence)
        if evidence is None:
            return {"status": "skipped", "items": 0, "reason": note}
        return self._began(ref, evidence)

    def _first_attempts(self, run: Run) -> ExecutionRow:
        """The row a retried step's first attempt wrote: it stands."""
        row = self._runs.get(run)
        if row is None:
            raise Retryable("LearningConflict", "the execution row changed")
        return row

    def _began(self, ref: PoolRef, evidence: Evidence[Any]) -> dict[str, Any]:
        began = {"status": "running", "position": evidence.position, "items": len(evidence.items)}
        return began | self._model_free(ref, evidence)

    def _model_free(self, ref: PoolRef, evidence: Evidence[Any] | None) -> dict[str, Any]:
        """`modelFree` sends the run from LoadEvidence straight to ApplyLearning."""
        if evidence is not None and self._pool(ref.kind).task(evidence) is None:
            return {"modelFree": True}
        return {}

    def _keep(self, run: Run, evidence: Evidence[Any], now: int, *, waited: bool) -> Evidence[Any]:
        """Seal the evidence on the run's row; an earlier attempt's evidence stands."""
        text = evidence_json(evidence)
        if len(text.encode()) > MAX_EVIDENCE_BYTES:
            raise EvidenceTooLarge(f"the evidence is over {MAX_EVIDENCE_BYTES} bytes")
        kept = self._runs.keep_evidence(run, text, now, _began(evidence) if waited else None)
        return (
            evidence if kept == text else evidence_from_json(kept, self._pool(run.kind).detail_of)
        )

    def apply_learning(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Commit the saved answer, the read position and the execution's end in one
        transaction; when another run moved first, judge it again on what is still unread."""
        run, ref, state, _attempt = step_run(event)
        answered = state.get("model") or {}
        model_free = "modelFree" in (state.get("evidence") or {})
        if not model_free and answered.get("status") != "answered":
            return self._ended(run, (state.get("evidence") or {}).get("status", "skipped"))
        with transient():
            row, text = self._answered_row(run, None if model_free else str(answered["call"]))
            if row.terminal:
                return {"status": row.status}
            evidence = self._evidence(run, row)
            ask = self._pool(ref.kind).task(evidence)
            answer: Any = None
            if ask is not None:
                if text is None:
                    raise ExecutionLost("the saved model answer is gone")
                answer = ask.parse(text)
            return self._apply(run, ref, row, evidence, ask, answer)

    def _apply(
        self,
        run: Run,
        ref: PoolRef,
        row: ExecutionRow,
        evidence: Evidence[Any],
        ask: Ask[Any, Any] | None,
        answer: Any,
    ) -> dict[str, Any]:
        """Apply the answer; when another run moved first, apply it again to what
        is still unread (the pool refuses a change citing an item the other run learned)."""
        seen = {item.id for item in evidence.items}
        unread = [evidence]

        def attempt() -> dict[str, Any] | Again:
            try:
                finish = self._finisher(run, row)
                pool = self._pool(ref.kind)
                outcome = apply_cycle(self._store, pool, unread[-1], answer, finish)
                return {
                    "status": "succeeded",
                    "applied": len(outcome.applied),
                    "rejected": len(outcome.rejected),
                }
            except (AlreadyApplied, WriteConflict):
                pass  # another run, an edit or our own earlier attempt: look again
            if self._running(run) is None:
                return self._ended(run)
            fresh, note = self._unread_again(run, ref, seen)
            if fresh is None:
                kept = ask.describe(answer) if ask is not None else []
                return self._skip(run, row, kept, note or LEARNED_ELSEWHERE)
            unread.append(fresh)
            return AGAIN

        return until_it_lands(
            attempt, _kept_changing("the pool kept changing while learning"), tries=APPLY_TRIES
        )

    def _answered_row(self, run: Run, call: str | None) -> tuple[ExecutionRow, str | None]:
        row, text = (
            (self._runs.get(run, evidence=True), None)
            if call is None
            else self._runs.with_reply(run, call)
        )
        if row is None:
            # Its pool was erased while the model worked: what the call left goes too.
            self._runs.forget_calls(run)
            raise ExecutionLost("the execution's row is missing")
        return row, text

    def _unread_again(
        self, run: Run, ref: PoolRef, seen: set[str]
    ) -> tuple[Evidence[Any] | None, str | None]:
        """What is still unread, or None and why: items its model never saw stay unread."""
        try:
            fresh = self._pool(ref.kind).load_evidence(ref, run.upto)
        except Skipped as skipped:
            if isinstance(skipped, Deferred):
                self._wait_again(run, skipped)
            return None, skipped.reason
        if fresh is None:
            return None, LEARNED_ELSEWHERE
        if not {item.id for item in fresh.items} <= seen:
            return None, LEARNED_IN_PART
        return fresh, None

    def record_failure(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """Record the error on the execution row; the read position stays for the next run."""
        run, _ref, state, _attempt = step_run(event)
        error_type, message = describe_error(state.get("error"))
        step = self._failed_step(state)
        waited = is_wait_name(run.name)

        def record() -> dict[str, Any]:
            existing = self._runs.get(run, evidence=waited)
            if existing is not None and existing.terminal:
                return {"status": existing.status, "recorded": False}
            self._runs.fail(run, self._clock.now_ms(), error_type, f"{step}: {message}", existing)
            return {"status": "failed", "type": error_type, "recorded": True}

        with transient():
            return until_it_lands(
                record, _kept_changing("the execution row kept changing"), tries=2
            )

    def _wait_again(self, run: Run, deferred: Deferred) -> None:
        """Note a deferred run for `wake`: only the API and the tick start learning."""
        self._store.write([self._runs.deferral(run, deferred.event, self._clock.now_ms())])

    def _defer(self, run: Run, ref: PoolRef, deferred: Deferred) -> dict[str, Any]:
        """Note the run for `wake`, then end it skipped with why."""
        self._wait_again(run, deferred)
        try:
            waited = is_wait_name(run.name)
            self._runs.begin(run, self._clock.now_ms(), None, note=deferred.reason, waited=waited)
        except WriteConflict:
            return {"status": self._first_attempts(run).status, "items": 0}
        return {"status": "skipped", "items": 0}

    def _ended(self, run: Run, status: str | None = None) -> dict[str, Any]:
        row = self._runs.get(run)
        return {"status": row.status if row else (status or "skipped")}

    def _finisher(self, run: Run, row: ExecutionRow) -> FinishActions:
        """The execution's end, from `row` as ApplyLearning read it."""

        def finish(outcome: Outcome) -> list[Action]:
            now = self._clock.now_ms()
            # Both events (`memory.changed`, then `execution.ended`) in one row.
            learned = pool_changed(run.kind, run.org_id, run.pool_id, now)
            ending = self._runs.finish_actions(
                run,
                now,
                status="succeeded",
                applied=outcome.applied,
                rejected=outcome.rejected,
                row=row,
            )
            return one_row([*(learned if outcome.applied else []), *ending])

        return finish

    def _skip(
        self,
        run: Run,
        row: ExecutionRow,
        changes: Sequence[Mapping[str, Any]],
        note: str,
    ) -> dict[str, Any]:
        rejected = [{"change": dict(change), "reason": note} for change in changes]
        now = self._clock.now_ms()
        try:
            self._store.write(
                self._runs.finish_actions(
                    run, now, status="skipped", applied=[], rejected=rejected, note=note, row=row
                )
            )
        except WriteConflict:
            return self._ended(run)
        return {"status": "skipped", "applied": 0, "rejected": len(rejected), "reason": note}

    @staticmethod
    def _failed_step(state: Mapping[str, Any]) -> str:
        if "evidence" not in state:
            return "LoadEvidence"
        if "model" not in state and "modelFree" not in state["evidence"]:
            return "CallModel"
        return "ApplyLearning"


def _row_answer(row: ExecutionRow) -> dict[str, Any]:
    return {"status": row.status, "position": row.position, "items": len(row.item_ids)}


def _began(evidence: Evidence[Any]) -> Began:
    return Began(evidence.position, [item.id for item in evidence.items], evidence.model)


def _kept_changing(message: str) -> Callable[[], Retryable]:
    return lambda: Retryable("LearningConflict", message)
