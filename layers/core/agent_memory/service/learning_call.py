"""CallModel: one model call per attempt, claimed so that a second copy of an execution waits
for the first's answer instead of paying again."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from agent_memory.domain.errors import IntegrityError, Unavailable, WriteConflict
from agent_memory.domain.model_names import disallowed
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import STEP_DEADLINE_S, Ask
from agent_memory.persistence.model_calls import CALL_OPEN, reply_sk
from agent_memory.persistence.runs import ExecutionRow, Run
from agent_memory.ports import LearningModel, ModelFailure, ModelReply
from agent_memory.service.learning_pools import Evidence
from agent_memory.service.learning_runs import (
    ExecutionLost,
    NoModel,
    Retryable,
    evidence_from_json,
    model_error,
    step_run,
)
from agent_memory.service.learning_start import LearningStarts

log = logging.getLogger(__name__)

CALL_STEP = "CallModel"
# A model answer larger than this is not a memory update (100 changes of a few sentences).
MAX_REPLY_BYTES = 200_000
COPY_POLL_S = 0.25
# A paid call's charge and answer are written harder than a step retry would.
PAID_PAUSES_S: tuple[float | None, ...] = (0.2, 0.5, None)


class ModelCallStep(LearningStarts):
    def call_model(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """One model call, saved; an earlier attempt's saved answer is reused instead."""
        run, _ref, state, attempt = step_run(event)
        if (state.get("evidence") or {}).get("status") != "running":
            return {"status": "skipped"}
        with transient():
            row = self._running(run, evidence=True)
            if row is None:
                return {"status": "ended"}
            saved = self._answered(run)
            if saved:
                # An earlier attempt saved its answer (it crashed, or its reply was lost).
                return {"status": "answered", "call": saved, "reused": True}
            evidence = self._evidence(run, row)
            ask = self._pool(run.kind).task(evidence)
            if ask is None:
                return {"status": "modelFree"}  # its work is done when it is applied
            model = self._model_for(evidence)
            request = ask.request(STEP_DEADLINE_S)
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
            # Paid whether or not its answer is saved: charged once, before the save.
            self._charge(run, evidence, reply)
            self._check_reply(run, sk, ask, reply)
            answer = self._save_answer(run, sk, reply)
        usage = reply.usage
        return {
            "status": "answered",
            "call": answer,
            "reused": False,
            "task": ask.name,
            "tokens": [usage.input_tokens, usage.output_tokens],
        }

    def _model_for(self, evidence: Evidence[Any]) -> LearningModel:
        """The run's model, unless this deployment cannot run it or the organization's
        current `allowedModels` (it may have narrowed since the run began) leaves it out."""
        if self._org_models is not None:
            refused = disallowed(evidence.model, self._org_models(evidence.pool.org_id))
            if refused is not None:
                raise NoModel(refused)
        model = self._models.resolve(evidence.model)
        if model is None:
            raise NoModel(f"no model named {evidence.model!r} is configured here")
        return model

    def _check_reply(self, run: Run, sk: str, ask: Ask[Any, Any], reply: ModelReply) -> None:
        try:
            if len(reply.text.encode()) > MAX_REPLY_BYTES:
                raise InvalidModelOutput(f"the answer is over {MAX_REPLY_BYTES} bytes")
            ask.parse(reply.text)
        except InvalidModelOutput:
            self._runs.call_failed(run, sk, "invalid_output", self._clock.now_ms())
            raise

    def _save_answer(self, run: Run, sk: str, reply: ModelReply) -> str:
        """Save a paid answer; the step's handle on it."""
        usage = {"input": reply.usage.input_tokens, "output": reply.usage.output_tokens}
        answer = reply_sk(sk)

        def save() -> None:
            try:
                now = self._clock.now_ms()
                self._runs.call_answered(run, sk, reply.text, usage, reply.latency_ms, now)
            except WriteConflict as error:
                if error.condition != CALL_OPEN:
                    raise
                # An earlier try committed it and its reply was lost.
                if self._running(run) is None or self._answered(run) != answer:
                    raise ExecutionLost("the saved call was closed before its answer") from None

        _written_hard(save)
        return answer

    def _charge(self, run: Run, evidence: Evidence[Any], reply: ModelReply) -> None:
        """Charge one real call in a write of its own; a reused answer never comes here."""
        spent = list(self._pool(run.kind).charge(evidence, reply))
        if spent:
            _written_hard(lambda: self._store.write(spent))

    def _claim_call(
        self, run: Run, event: Mapping[str, Any], attempt: int, model: str, logged: str
    ) -> str | dict[str, Any]:
        """This attempt's call row when this copy may call the model; an Express execution
        can run twice, and the copy that did not claim waits for the other's answer."""
        owner = str(event["context"].get("executionId") or run.name)
        hold_ms = int((STEP_DEADLINE_S + 10) * 1000)
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

    def _answered(self, run: Run) -> str | None:
        return self._runs.answered_call(run, CALL_STEP)

    def _running(self, run: Run, *, evidence: bool = False) -> ExecutionRow | None:
        """The run's row while it runs; None once it ended; raises when it is missing."""
        row = self._runs.get(run, evidence=evidence)
        if row is None:
            raise ExecutionLost("the execution's row is missing")
        return None if row.terminal else row

    def _evidence(self, run: Run, row: ExecutionRow) -> Evidence[Any]:
        """The evidence sealed on the run's row, with its pool's detail."""
        text = self._runs.evidence(row)
        if text is None:
            raise ExecutionLost("the execution's evidence is missing")
        return evidence_from_json(text, self._pool(run.kind).detail_of)


def _written_hard(write: Callable[[], None]) -> None:
    """A paid call's charge or answer, written again after an outage or a lost transaction
    race (a conflict with no failed condition), pausing `PAID_PAUSES_S`."""
    for pause in PAID_PAUSES_S:
        try:
            write()
            return
        except (Unavailable, WriteConflict) as error:
            lost_race = isinstance(error, WriteConflict) and error.index is None
            if pause is None or not (isinstance(error, Unavailable) or lost_race):
                raise
            time.sleep(pause)


@contextmanager
def transient() -> Iterator[None]:
    """Turn a transient AWS failure into Retryable; IntegrityError too, as a throttled KMS
    Decrypt reads as "cannot decrypt" (a bad blob fails after the retries)."""
    try:
        yield
    except (Unavailable, IntegrityError) as error:
        raise Retryable(type(error).__name__, error.message) from error
