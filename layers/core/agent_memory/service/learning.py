"""Durable learning: start a workflow run per completed turn, and the four steps it runs.

Built once for every kind of pool: the pool's rules plug in through `LearningPool`
(service/learning_pools.py). The steps run as Lambda tasks of `learning.asl.json`:
LoadEvidence -> CallModel -> ApplyLearning, any failure -> RecordFailure. Decisions:
docs/decisions/learning.md.

- Workflow messages carry ids and counts only; the evidence, the model's request and reply,
  rejected changes and error messages are sealed in the table.
- A step asks the state machine for a retry by raising `Retryable` (its class name is the
  error the ASL retries); any other exception ends the run in RecordFailure.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, Literal

from agent_memory.domain.errors import IntegrityError, Unavailable, WriteConflict
from agent_memory.domain.learning_prompt import instructions_for
from agent_memory.domain.proposals import InvalidModelOutput, ProposedChange, parse_changes
from agent_memory.persistence.executions import ExecutionRepository, ExecutionRow, Run
from agent_memory.ports import (
    Cipher,
    Clock,
    EvidenceItem,
    Ids,
    KnownEntry,
    LearningRequest,
    ModelCatalog,
    ModelFailure,
    Orchestrator,
    Store,
)
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Evidence,
    LearningPool,
    Outcome,
    PoolKind,
    PoolRef,
)

log = logging.getLogger(__name__)

CALL_STEP = "CallModel"
# Sealed evidence must fit one 400 KB row with room to spare; a pool bounds what it loads.
MAX_EVIDENCE_BYTES = 300_000
# A model answer larger than this is not a memory update (100 changes of a few sentences).
MAX_REPLY_BYTES = 200_000
# ApplyLearning re-reads and re-applies this often when memory changes under it.
APPLY_ROUNDS = 3
# The state machine's own TimeoutSeconds (1800 s) plus a margin: a row still "running"
# after that lost its execution (it timed out or RecordFailure itself failed).
RUN_LIMIT_MS = (1800 + 300) * 1000
_NAME_SAFE = re.compile(r"[A-Za-z0-9_-]+")


class Retryable(Exception):  # the ASL retries errors by this exact class name
    """A transient failure: the state machine retries the step with backoff."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")


class LearningStepError(Exception):
    """A failure that retrying the same step cannot fix: the run ends in RecordFailure."""


class ModelTimeout(LearningStepError):
    """The model did not answer within its client timeout (below the step's 2 minutes)."""


class ModelUnavailable(LearningStepError):
    pass


class ModelConfigError(LearningStepError):
    pass


class NoModel(LearningStepError):
    pass


class EvidenceTooLarge(LearningStepError):
    pass


class ExecutionLost(LearningStepError):
    """The execution's row or saved call is gone (expired, or the table was restored)."""


def execution_name(pool: PoolRef, upto: int, nonce: str | None = None) -> str:
    """The Step Functions name of learning `pool` up to item `upto` (<= 80 characters of
    [A-Za-z0-9_-]). Without a nonce it depends on the evidence only, so starting the same
    learning twice is refused by Step Functions; a deliberate retry passes a nonce."""
    suffix = f"-{upto}" + (f"-{nonce}" if nonce else "")
    base = f"{pool.kind}-{pool.org_id}-{pool.pool_id}"
    if not _NAME_SAFE.fullmatch(base) or len(base) + len(suffix) > 80:
        digest = hashlib.sha256(f"{pool.kind}\0{pool.org_id}\0{pool.pool_id}".encode())
        base = f"{pool.kind}-h{digest.hexdigest()[:32]}"
    return base + suffix


def evidence_json(evidence: Evidence) -> str:
    data = {
        "pool": [evidence.pool.kind, evidence.pool.org_id, evidence.pool.pool_id],
        "position": evidence.position,
        "upto": evidence.upto,
        "items": [asdict(item) for item in evidence.items],
        "memory": [asdict(entry) for entry in evidence.memory],
        "model": evidence.model,
        "allowedKinds": list(evidence.allowed_kinds),
        "person": evidence.person,
        "extra": evidence.extra,
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def evidence_from_json(text: str) -> Evidence:
    data = json.loads(text)
    kind, org_id, pool_id = data["pool"]
    return Evidence(
        pool=PoolRef(kind, org_id, pool_id),
        position=int(data["position"]),
        upto=int(data["upto"]),
        items=tuple(EvidenceItem(**item) for item in data["items"]),
        memory=tuple(KnownEntry(**entry) for entry in data["memory"]),
        model=data["model"],
        allowed_kinds=tuple(data["allowedKinds"]),
        person=data["person"],
        extra=dict(data["extra"]),
    )


def _step_run(event: Mapping[str, Any]) -> tuple[Run, PoolRef, dict[str, Any], int]:
    """The run, its pool, the state so far and the attempt number of a task event
    (infra/statemachines/README.md)."""
    state = dict(event["input"])
    context = event["context"]
    pool = state["pool"]
    ref = PoolRef(pool["kind"], str(pool["orgId"]), str(pool["poolId"]))
    run = Run(
        kind=ref.kind,
        org_id=ref.org_id,
        pool_id=ref.pool_id,
        name=str(context["executionName"]),
        requested_at=int(state["requestedAt"]),
        reason=str(state.get("reason", "")),
        upto=int(state["upto"]),
    )
    return run, ref, state, int(context.get("attempt", 0))


def _model_error(failure: ModelFailure) -> Exception:
    message = str(failure)
    if failure.kind == "timeout":
        # Never retried: one attempt may take the whole 2-minute step; the next turn retries.
        return ModelTimeout(message)
    if failure.kind == "invalid_output":
        return InvalidModelOutput(message)
    if failure.kind == "config":
        return ModelConfigError(message)
    if failure.retryable:
        kind = "ModelThrottled" if failure.kind == "throttled" else "ModelUnavailable"
        return Retryable(kind, message)
    return ModelUnavailable(message)


def describe_error(error: Mapping[str, Any] | None) -> tuple[str, str]:
    """(type, message) of the error the ASL caught: `{"Error": ..., "Cause": ...}`, where
    Cause is the Lambda error's JSON (`errorType`, `errorMessage`) or plain text."""
    error = error or {}
    error_type = str(error.get("Error") or "LearningFailed")
    cause = error.get("Cause")
    message = str(cause or "")
    try:
        parsed = json.loads(message) if message else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        message = str(parsed.get("errorMessage") or "")
    if error_type == "Retryable" and ": " in message:
        error_type, message = message.split(": ", 1)
    if error_type == "States.Timeout" and not message:
        message = "the step took longer than its time limit"
    return error_type, message


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
    ) -> None:
        self._runs = ExecutionRepository(store, cipher)
        self._clock = clock
        self._ids = ids
        self._orchestrator = orchestrator
        self._models = models
        self._pools: dict[str, LearningPool] = {}
        for pool in pools:
            self.register(pool)

    def register(self, pool: LearningPool) -> None:
        """Plug in (or replace) the rules of one kind of pool."""
        self._pools[pool.kind] = pool

    # -- the API side ------------------------------------------------------------------------

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> Literal["started", "skipped"]:
        """Start learning `pool` up to item `upto`. `reason` "turn" names the run after the
        evidence alone, so a repeated start is a no-op; any other reason ("refresh", a retry)
        adds a nonce, because Step Functions refuses a used name for 90 days.

        "skipped" when this deployment has no workflow, or when a turn's start finds the
        workflow service unavailable: the turn is already saved, the read position did not
        move, and the next turn learns from this evidence too. Other reasons raise
        Unavailable (503) so that the caller may retry."""
        if self._orchestrator is None:
            return "skipped"
        nonce = None if reason == "turn" else self._ids.new("r")
        payload = {
            "pool": {"kind": pool.kind, "orgId": pool.org_id, "poolId": pool.pool_id},
            "upto": upto,
            "reason": reason,
            "requestedAt": self._clock.now_ms(),
        }
        try:
            self._orchestrator.start(execution_name(pool, upto, nonce), payload)
        except Unavailable:
            if reason != "turn":
                raise
            log.warning("learning not started: the workflow service is unavailable")
            return "skipped"
        return "started"

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[dict[str, Any]]:
        """The pool's newest executions, newest first, in API.md's Execution shape."""
        now = self._clock.now_ms()
        rows = self._runs.newest(pool.kind, pool.org_id, pool.pool_id, limit)
        return [self._view(row, now) for row in rows]

    def _view(self, row: ExecutionRow, now: int) -> dict[str, Any]:
        status: str = row.status
        details = self._runs.details(row) if "detail" in row.record else {}
        error = {"type": row.error_type, "message": details.get("error", "")}
        if status == "running" and now - row.started_at > RUN_LIMIT_MS:
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
        if status == "failed":
            view["error"] = error
        if details.get("note"):
            view["note"] = details["note"]
        return view

    # -- the steps ---------------------------------------------------------------------------

    def load_evidence(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """LoadEvidence: the unprocessed items up to `upto`, sealed in the execution's row
        (the row is written here, so a start that never ran leaves no "running" ghost)."""
        run, ref, _state, _attempt = _step_run(event)
        with _transient():
            evidence = self._pool(ref.kind).load_evidence(ref, run.upto)
            text = evidence_json(evidence) if evidence else None
            if text is not None and len(text.encode()) > MAX_EVIDENCE_BYTES:
                raise EvidenceTooLarge(f"the evidence is over {MAX_EVIDENCE_BYTES} bytes")
            try:
                self._runs.begin(
                    run,
                    self._clock.now_ms(),
                    evidence=text,
                    position=evidence.position if evidence else None,
                    item_ids=[item.id for item in evidence.items] if evidence else None,
                    model=evidence.model if evidence else None,
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
        run, _ref, state, attempt = _step_run(event)
        if (state.get("evidence") or {}).get("status") != "running":
            return {"status": "skipped"}
        with _transient():
            for saved in self._runs.calls(run, CALL_STEP):
                if saved.status == "answered":
                    return {"status": "answered", "call": saved.sk, "reused": True}
            row = self._running(run)
            if row is None:
                return {"status": "ended"}
            evidence = evidence_from_json(self._evidence(row))
            model = self._models.resolve(evidence.model)
            if model is None:
                raise NoModel(f"no model named {evidence.model!r} is configured here")
            request = LearningRequest(
                pool_kind=run.kind,
                instructions=instructions_for(run.kind, evidence.allowed_kinds, evidence.person),
                items=evidence.items,
                memory=evidence.memory,
                allowed_kinds=evidence.allowed_kinds,
                person=evidence.person,
            )
            logged = json.dumps(asdict(request), ensure_ascii=False)
            sk = self._runs.call_started(
                run, CALL_STEP, attempt, model.name, logged, self._clock.now_ms()
            )
            try:
                reply = model.propose(request)
            except ModelFailure as failure:
                self._runs.call_failed(run, sk, failure.kind, self._clock.now_ms())
                raise _model_error(failure) from None
            try:
                if len(reply.text.encode()) > MAX_REPLY_BYTES:
                    raise InvalidModelOutput(f"the answer is over {MAX_REPLY_BYTES} bytes")
                changes = parse_changes(reply.text, known_keys=[e.key for e in evidence.memory])
            except InvalidModelOutput:
                self._runs.call_failed(run, sk, "invalid_output", self._clock.now_ms())
                raise
            usage = {"input": reply.usage.input_tokens, "output": reply.usage.output_tokens}
            # The answer is paid for: try harder to save it than a step retry would.
            for pause in (0.2, 0.5, None):
                try:
                    self._runs.call_answered(
                        run, sk, reply.text, usage, reply.latency_ms, self._clock.now_ms()
                    )
                    break
                except Unavailable:
                    if pause is None:
                        raise
                    time.sleep(pause)
        return {"status": "answered", "call": sk, "reused": False, "changes": len(changes)}

    def apply_learning(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """ApplyLearning: check the saved answer's changes against the pool's rules and commit
        them, the read position and the execution's end in one transaction, conditional on
        the read position the run started from. When another run moved it first, the
        changes are checked again against what is still unprocessed (or the run is skipped)."""
        run, ref, state, _attempt = _step_run(event)
        answered = state.get("model") or {}
        if answered.get("status") != "answered":
            return self._ended(run, (state.get("evidence") or {}).get("status", "skipped"))
        with _transient():
            row = self._running(run)
            if row is None:
                return self._ended(run)
            text = self._runs.reply(run, str(answered["call"]))
            if text is None:
                raise ExecutionLost("the saved model answer is gone")
            evidence = evidence_from_json(self._evidence(row))
            changes = parse_changes(text, known_keys=[e.key for e in evidence.memory])
            pool = self._pool(ref.kind)
            for _round in range(APPLY_ROUNDS):
                try:
                    outcome = pool.apply(evidence, changes, self._finisher(run))
                    return {
                        "status": "succeeded",
                        "applied": len(outcome.applied),
                        "rejected": len(outcome.rejected),
                    }
                except (AlreadyApplied, WriteConflict):
                    pass  # another run, an edit or our own earlier attempt: look again
                if self._running(run) is None:
                    return self._ended(run)
                fresh = pool.load_evidence(ref, run.upto)
                if fresh is None:
                    return self._skip(run, changes, "another run learned this evidence first")
                evidence = fresh
        raise Retryable("LearningConflict", "the pool kept changing while learning")

    def record_failure(self, event: Mapping[str, Any]) -> dict[str, Any]:
        """RecordFailure: the error's type and message on the execution row. The pool is not
        touched, so its read position stays and the next run reads this evidence again."""
        run, _ref, state, _attempt = _step_run(event)
        error_type, message = describe_error(state.get("error"))
        step = self._failed_step(state)
        with _transient():
            for _round in range(2):
                existing = self._runs.get(run)
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

    def _pool(self, kind: PoolKind | str) -> LearningPool:
        pool = self._pools.get(kind)
        if pool is None:
            raise LearningStepError(f"no learning rules for pools of kind {kind!r}")
        return pool

    def _running(self, run: Run) -> ExecutionRow | None:
        """The run's row while it runs; None once it ended. Raises when it is missing."""
        row = self._runs.get(run)
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

    def _finisher(self, run: Run) -> Any:
        def finish(outcome: Outcome) -> list[Any]:
            return self._runs.finish_actions(
                run,
                self._clock.now_ms(),
                status="succeeded",
                applied=outcome.applied,
                rejected=outcome.rejected,
            )

        return finish

    def _skip(self, run: Run, changes: Sequence[ProposedChange], note: str) -> dict[str, Any]:
        rejected = [{"change": change.to_dict(), "reason": note} for change in changes]
        try:
            self._runs.finish(
                run, self._clock.now_ms(), status="skipped", rejected=rejected, note=note
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


@contextmanager
def _transient() -> Iterator[None]:
    """Turn a transient AWS failure into Retryable, for the ASL to retry. IntegrityError too:
    the Encryption SDK reports a failed KMS Decrypt (throttled, 5xx) as "cannot decrypt", so
    the cipher cannot tell an outage from a bad blob; a bad blob fails after the retries."""
    try:
        yield
    except (Unavailable, IntegrityError) as error:
        raise Retryable(type(error).__name__, error.message) from error
