"""Fault injection at each step boundary of the learning workflow: AWS errors (throttling,
TransactionCanceledException, KMS failures) on the real clients, injected through botocore's
`before-call` event. Whatever fails, nothing is half-written and nothing is applied twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from agent_memory.adapters.stepfunctions import StepFunctionsOrchestrator
from agent_memory.domain.errors import Unavailable
from agent_memory.service.learning_pools import PoolRef
from tests.support.in_memory import FixedClock, InMemoryStore
from tests.support.state_machine import Workflow, canceled, wf

BUDGET = "Remember that my budget is 1500 EUR."
HOTEL = "My hotel is the Adlon."

__all__ = ["wf"]  # the fixture this module uses


def _learned_once(wf: Workflow, ref: PoolRef, upto: int) -> None:
    """The evidence was applied exactly once and the run ended cleanly."""
    assert wf.pool.head(ref)["position"] == upto
    assert len(wf.pool.changes(ref)) == 1
    assert wf.pool.entries(ref)["budget"]["sources"] == ["i-01"]
    [execution] = wf.executions(ref)
    assert execution["status"] == "succeeded"
    assert execution["applied"] == [{"key": "budget", "op": "remember"}]
    assert len(wf.model.calls) == 1
    _evidence_kept_apart(wf)


def _evidence_kept_apart(wf: Workflow) -> None:
    """No execution row holds evidence once its run ended; the evidence is on a row of its
    own, one per run at most, expiring like the saved calls."""
    rows = wf.adapters.store.query("LEARN#session#s-1").records
    assert all("evidence" not in r for r in rows if r["type"] != "learning-evidence")
    kept = [r for r in rows if r["type"] == "learning-evidence"]
    assert len(kept) <= 1
    assert all(r["ttl"] > 0 for r in kept)


def _nothing_written(wf: Workflow, ref: PoolRef) -> None:
    assert wf.pool.head(ref)["position"] == 0
    assert wf.pool.entries(ref) == {}
    assert wf.pool.changes(ref) == []


THROTTLED = "ProvisionedThroughputExceededException"


# `params` is the serialized request here (before-call): match on its text.
def _commit(params: dict[str, Any]) -> bool:
    """ApplyLearning's transaction (it writes the pool's change record), not CallModel's."""
    return "LOG#" in json.dumps(params, default=str)


def _saving_answer(params: dict[str, Any]) -> bool:
    text = json.dumps(params, default=str)
    return "answered" in text and "LOG#" not in text


@pytest.mark.parametrize(
    ("event", "code", "options", "retried"),
    [
        # LoadEvidence: the execution row's write, then the first seal (a KMS data key).
        (
            "dynamodb.PutItem",
            THROTTLED,
            # Not the start's name claim (a PutItem too): the execution row's own write.
            {"when": lambda params: "learning-execution" in json.dumps(params, default=str)},
            "LoadEvidence",
        ),
        ("kms.GenerateDataKey", "ThrottlingException", {}, "LoadEvidence"),
        ("dynamodb.Query", "InternalServerError", {"status": 500}, "LoadEvidence"),
        # CallModel: opening the sealed evidence (the first KMS Decrypt).
        ("kms.Decrypt", "KMSInternalException", {"status": 500}, "CallModel"),
        ("kms.Decrypt", "DependencyTimeoutException", {"status": 503}, "CallModel"),
        # ApplyLearning: the one transaction.
        (
            "dynamodb.TransactWriteItems",
            "TransactionCanceledException",
            {
                "extra": canceled("ThrottlingError", "None", "None", "None", "None"),
                "when": _commit,
            },
            "ApplyLearning",
        ),
        ("dynamodb.TransactWriteItems", "ThrottlingException", {"when": _commit}, "ApplyLearning"),
    ],
)
def test_a_transient_fault_is_retried_and_the_evidence_applied_once(
    wf: Workflow, event: str, code: str, options: dict[str, Any], retried: str
) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    fault = wf.faults.add(event, code, **options)
    wf.learning.start(ref, upto=upto, reason="turn")
    described = wf.wait(ref, upto)

    assert fault.hits == 1
    assert described["status"] == "SUCCEEDED"
    assert wf.task_states(described["executionArn"]).count(retried) == 2
    _learned_once(wf, ref, upto)


@pytest.mark.parametrize(
    "reasons",
    [
        # Another writer won a condition (e.g. a person's edit between re-read and commit).
        ("ConditionalCheckFailed", "None", "None", "None", "None"),
        ("TransactionConflict", "None", "None", "None", "None"),
    ],
)
def test_a_lost_race_in_the_commit_is_applied_again_within_the_step(
    wf: Workflow, reasons: tuple[str, ...]
) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    fault = wf.faults.add(
        "dynamodb.TransactWriteItems",
        "TransactionCanceledException",
        extra=canceled(*reasons),
        when=_commit,
    )
    wf.learning.start(ref, upto=upto, reason="turn")
    described = wf.wait(ref, upto)

    assert fault.hits == 1
    assert described["status"] == "SUCCEEDED"
    assert wf.task_states(described["executionArn"]).count("ApplyLearning") == 1
    _learned_once(wf, ref, upto)


def test_saving_the_answer_is_retried_in_the_step_so_the_model_is_not_paid_twice(
    wf: Workflow,
) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    # A session pool's answer is one plain Put of its own row (no transaction).
    fault = wf.faults.add("dynamodb.PutItem", "ThrottlingException", when=_saving_answer)
    wf.learning.start(ref, upto=upto, reason="turn")
    assert wf.wait(ref, upto)["status"] == "SUCCEEDED"

    assert fault.hits == 1
    _learned_once(wf, ref, upto)


@pytest.mark.parametrize(
    ("event", "code", "options", "error_type", "step"),
    [
        (
            "dynamodb.TransactWriteItems",
            "TransactionCanceledException",
            {
                "extra": canceled("ThrottlingError", "None", "None", "None", "None"),
                "when": _commit,
            },
            "Unavailable",
            "ApplyLearning",
        ),
        ("kms.Decrypt", "AccessDeniedException", {}, "IntegrityError", "CallModel"),
        ("dynamodb.Query", THROTTLED, {}, "Unavailable", "LoadEvidence"),
    ],
)
def test_a_lasting_fault_fails_the_run_with_nothing_half_written(
    wf: Workflow, event: str, code: str, options: dict[str, Any], error_type: str, step: str
) -> None:
    ref = wf.new_pool()
    first = wf.turn(ref, BUDGET, start=False)
    wf.faults.add(event, code, times=10_000, **options)
    wf.learning.start(ref, upto=first, reason="turn")
    described = wf.wait(ref, first)
    wf.faults.rules.clear()  # the test's own reads below go through the same clients

    assert described["status"] == "FAILED"
    assert wf.task_states(described["executionArn"])[-1] == "RecordFailure"
    _nothing_written(wf, ref)
    [execution] = wf.executions(ref)
    assert execution["status"] == "failed"
    assert execution["error"]["type"] == error_type
    assert execution["error"]["message"].startswith(f"{step}: ")
    _evidence_kept_apart(wf)

    second = wf.turn(ref, HOTEL)
    assert wf.wait(ref, second)["status"] == "SUCCEEDED"
    assert wf.pool.head(ref)["position"] == second
    assert set(wf.pool.entries(ref)) == {"budget", "hotel"}
    assert wf.executions(ref)[0]["itemIds"] == ["i-01", "i-02"]


def test_record_failure_is_retried_when_its_write_is_throttled(wf: Workflow) -> None:
    ref = wf.new_pool()
    wf.model.script = lambda request: "not json"
    upto = wf.turn(ref, BUDGET, start=False)
    # CallModel's writes: PutItem (attempt), UpdateItem (failed); RecordFailure: one
    # transaction (the row's end and its event). Only RecordFailure's write names an error type.
    fault = wf.faults.add(
        "dynamodb.TransactWriteItems",
        THROTTLED,
        when=lambda params: "errorType" in json.dumps(params, default=str),
    )
    wf.learning.start(ref, upto=upto, reason="turn")
    described = wf.wait(ref, upto)

    assert fault.hits == 1
    assert wf.task_states(described["executionArn"]).count("RecordFailure") == 2
    [execution] = wf.executions(ref)
    assert execution["error"]["type"] == "InvalidModelOutput"
    _nothing_written(wf, ref)


def test_a_throttled_start_skips_a_turn_and_fails_a_refresh(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    wf.faults.add("sfn.StartExecution", "ThrottlingException", times=2)

    assert wf.learning.start(ref, upto=upto, reason="turn") == "skipped"
    with pytest.raises(Unavailable):
        wf.learning.start(ref, upto=upto, reason="refresh")
    assert wf.wait_all() == []
    assert wf.executions(ref) == []
    _nothing_written(wf, ref)


# --- the orchestrator adapter, against the real Step Functions request shapes ---------------

ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:agent-memory-learning"


@pytest.fixture
def stubbed() -> Iterator[tuple[StepFunctionsOrchestrator, Stubber]]:
    client = boto3.client(
        "stepfunctions",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stubber:
        orchestrator = StepFunctionsOrchestrator(
            client, ARN, claims=InMemoryStore(), clock=FixedClock()
        )
        yield orchestrator, stubber
        stubber.assert_no_pending_responses()


def test_the_orchestrator_starts_a_named_execution(stubbed: Any) -> None:
    orchestrator, stubber = stubbed
    stubber.add_response(
        "start_execution",
        {"executionArn": f"{ARN}:x".replace("stateMachine", "execution"), "startDate": 0},
        {"stateMachineArn": ARN, "name": "session-o-s-3", "input": '{"upto":3}'},
    )
    started = orchestrator.start("session-o-s-3", {"upto": 3})
    assert (started.name, started.started) == ("session-o-s-3", True)


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        ("ExecutionAlreadyExists", "not started"),
        ("ThrottlingException", Unavailable),
        ("ExecutionLimitExceeded", Unavailable),
        ("ServiceUnavailable", Unavailable),
        ("StateMachineDoesNotExist", ClientError),
        ("InvalidName", ClientError),
    ],
)
def test_the_orchestrator_maps_errors(stubbed: Any, code: str, outcome: Any) -> None:
    orchestrator, stubber = stubbed
    stubber.add_client_error("start_execution", service_error_code=code, http_status_code=400)
    if outcome == "not started":
        assert orchestrator.start("n", {}).started is False
    else:
        with pytest.raises(outcome):
            orchestrator.start("n", {})
