"""What a learning run carries from step to step: its name, task event, evidence and errors.

`Retryable`'s class name is the error the ASL retries; any other exception ends the run in
RecordFailure.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any

from agent_memory.domain.evidence import EvidenceItem, KnownEntry
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.persistence.runs import Run
from agent_memory.ports import ModelFailure
from agent_memory.service.learning_pools import Evidence, PoolRef, SourceRef

_NAME_SAFE = re.compile(r"[A-Za-z0-9_-]+")


class Retryable(Exception):  # the ASL retries errors by this exact class name
    """A transient failure: the state machine retries the step with backoff."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")


class LearningStepError(Exception):
    """A failure that retrying the same step cannot fix: the run ends in RecordFailure."""


class ModelTimeout(LearningStepError):
    """The model did not answer within its client timeout."""


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
    """Without a nonce the name depends on the evidence only, so Step Functions refuses a
    second start; a deliberate retry passes a nonce."""
    suffix = f"-{upto}" + (f"-{nonce}" if nonce else "")
    base = f"{pool.kind}-{pool.org_id}-{pool.pool_id}"
    named = f"{pool.kind}\0{pool.org_id}\0{pool.pool_id}"
    source = pool.source
    if source is not None:
        base, named = f"{base}-{source.id}", f"{named}\0{source.id}"
    if not _NAME_SAFE.fullmatch(base) or len(base) + len(suffix) > 80:
        digest = hashlib.sha256(named.encode())
        base = f"{pool.kind}-h{digest.hexdigest()[:32]}"
    return base + suffix


def run_of(pool: PoolRef, name: str, requested_at: int, reason: str, upto: int) -> Run:
    source = (pool.source.kind, pool.source.id) if pool.source is not None else None
    return Run(pool.kind, pool.org_id, pool.pool_id, name, requested_at, reason, upto, source)


def run_pool(run: Run) -> PoolRef:
    source = SourceRef(*run.source) if run.source is not None else None
    return PoolRef(run.kind, run.org_id, run.pool_id, source)


def pool_from_json(ref: Mapping[str, Any]) -> PoolRef:
    source = SourceRef(*ref["source"]) if ref.get("source") else None
    return PoolRef(str(ref["kind"]), str(ref["orgId"]), str(ref["poolId"]), source)


def evidence_json(evidence: Evidence[Any]) -> str:
    """The evidence as its fields (a pool's detail is a dataclass, or None)."""
    return json.dumps(asdict(evidence), ensure_ascii=False, separators=(",", ":"))


def evidence_from_json(text: str, detail_of: Callable[[Any], Any]) -> Evidence[Any]:
    data = json.loads(text)
    pool, source = data["pool"], data["pool"]["source"]
    return Evidence(
        pool=PoolRef(
            pool["kind"], pool["org_id"], pool["pool_id"], SourceRef(**source) if source else None
        ),
        position=data["position"],
        upto=data["upto"],
        items=tuple(EvidenceItem(**item) for item in data["items"]),
        memory=tuple(KnownEntry(**entry) for entry in data["memory"]),
        model=data["model"],
        allowed_kinds=tuple(data["allowed_kinds"]),
        detail=detail_of(data["detail"]),
        person=data["person"],
    )


def step_run(event: Mapping[str, Any]) -> tuple[Run, PoolRef, dict[str, Any], int]:
    """The run, its pool, the state so far and the attempt number of a task event."""
    state = dict(event["input"])
    context = event["context"]
    ref = pool_from_json(state["pool"])
    name, reason = str(context["executionName"]), str(state.get("reason", ""))
    run = run_of(ref, name, int(state["requestedAt"]), reason, int(state["upto"]))
    return run, ref, state, int(context.get("attempt", 0))


def model_error(failure: ModelFailure) -> Exception:
    message = str(failure)
    if failure.kind == "timeout":
        # One attempt may take the whole step; the next turn retries.
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
    """(type, message) of the error the ASL caught; Cause is the Lambda's JSON or text."""
    error = error or {}
    error_type = str(error.get("Error") or "LearningFailed")
    message = str(error.get("Cause") or "")
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
