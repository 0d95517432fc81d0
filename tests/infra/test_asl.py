"""learning.asl.json: its shape, its Retry and Catch as the local runner reads them, and moto's
Step Functions accepting and running it."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda_simple.models import LambdaSimpleBackend

from agent_memory.adapters.asl import Caught, Machine, Retry, State, on_error
from infra.cfn_yaml import load_template, render_definition
from infra.local.aws import state_machine_type

ROOT = Path(__file__).resolve().parents[2]
ASL_PATH = ROOT / "infra" / "statemachines" / "learning.asl.json"
REGION = "us-east-1"
ACCOUNT = "123456789012"
STEPS = {
    "LoadEvidence": "LoadEvidenceFunctionArn",
    "CallModel": "CallModelFunctionArn",
    "ApplyLearning": "ApplyLearningFunctionArn",
    "RecordFailure": "RecordFailureFunctionArn",
}
FAKE_ARNS = {
    placeholder: f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:agent-memory-{state}"
    for state, placeholder in STEPS.items()
}
RETRIED = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.Unknown",
    "Retryable",
}


@pytest.fixture(scope="module")
def asl() -> dict[str, Any]:
    definition: dict[str, Any] = json.loads(ASL_PATH.read_text())
    return definition


def tasks(asl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in asl["States"].items() if s["Type"] == "Task"}


# ------------------------------------------------------------------ shape


def test_flow(asl: dict[str, Any]) -> None:
    states = asl["States"]
    assert asl["StartAt"] == "LoadEvidence"
    assert set(tasks(asl)) == set(STEPS)
    assert states["LoadEvidence"]["Next"] == "NeedsModel"
    # Work that asks no model goes from LoadEvidence straight to ApplyLearning.
    assert states["NeedsModel"]["Choices"] == [
        {"Variable": "$.evidence.modelFree", "IsPresent": True, "Next": "ApplyLearning"}
    ]
    assert states["NeedsModel"]["Default"] == "CallModel"
    assert states["CallModel"]["Next"] == "ApplyLearning"
    assert states["ApplyLearning"]["Next"] == "Done"
    assert states["Done"]["Type"] == "Succeed"
    assert states["RecordFailure"]["Next"] == "Failed"
    assert states["Failed"]["Type"] == "Fail"
    for name, placeholder in STEPS.items():
        assert states[name]["Resource"] == f"${{{placeholder}}}"


def test_results_keep_the_execution_input(asl: dict[str, Any]) -> None:
    paths = {name: s["ResultPath"] for name, s in tasks(asl).items()}
    assert paths == {
        "LoadEvidence": "$.evidence",
        "CallModel": "$.model",
        "ApplyLearning": "$.result",
        "RecordFailure": "$.failure",
    }


def test_every_task_is_bounded_and_caught(asl: dict[str, Any]) -> None:
    for name, task in tasks(asl).items():
        assert 0 < task["TimeoutSeconds"] <= 120, name
        [catch] = task["Catch"]
        assert catch["ErrorEquals"] == ["States.ALL"]
        if name == "RecordFailure":
            assert catch["Next"] == "Failed"
        else:
            assert catch["Next"] == "RecordFailure"
            assert catch["ResultPath"] == "$.error"
    assert asl["States"]["CallModel"]["TimeoutSeconds"] == 120
    for name in ("LoadEvidence", "ApplyLearning", "RecordFailure"):
        assert asl["States"][name]["TimeoutSeconds"] == 30


def test_every_task_retries_transient_errors(asl: dict[str, Any]) -> None:
    for name, task in tasks(asl).items():
        [transient] = [r for r in task["Retry"] if "Retryable" in r["ErrorEquals"]]
        assert set(transient["ErrorEquals"]) == RETRIED, name
        assert (
            transient["IntervalSeconds"],
            transient["BackoffRate"],
            transient["MaxAttempts"],
        ) == (2, 2, 3)
        for retrier in task["Retry"]:
            assert "States.ALL" not in retrier["ErrorEquals"]
    call_model_retried = {e for r in asl["States"]["CallModel"]["Retry"] for e in r["ErrorEquals"]}
    assert "States.Timeout" not in call_model_retried


def _handled(state: State, errors: list[str]) -> tuple[list[float], Caught | None]:
    """The pauses `state` retries `errors` after, one by one, and where the last one goes."""
    pauses: list[float] = []
    retries: dict[int, int] = {}
    for error in errors:
        handled = on_error(state, error, "why", {"pool": "p1"}, retries)
        if not isinstance(handled, Retry):
            return pauses, handled
        pauses.append(handled.delay_s)
        retries = handled.retries
    raise AssertionError(f"{errors} are all still retried")


def test_the_local_runner_retries_then_catches_as_the_definition_says(
    asl: dict[str, Any],
) -> None:
    states = Machine.parse(asl).states
    recorded = {"pool": "p1", "error": {"Error": "Retryable", "Cause": "why"}}
    assert _handled(states["CallModel"], ["Retryable"] * 4) == (
        [2, 4, 8],
        Caught("RecordFailure", recorded),
    )
    # Each retrier counts its own retries: a timeout is retried once after three throttles.
    pauses, caught = _handled(states["LoadEvidence"], ["Retryable"] * 3 + ["States.Timeout"] * 2)
    assert pauses == [2, 4, 8, 2]
    assert caught == Caught(
        "RecordFailure", {**recorded, "error": {"Error": "States.Timeout", "Cause": "why"}}
    )
    # A model call past its time is not retried, and States.ALL does not catch States.Runtime.
    assert _handled(states["CallModel"], ["States.Timeout"])[0] == []
    assert on_error(states["CallModel"], "States.Runtime", "why", {}, {}) is None
    failed = on_error(states["RecordFailure"], "ModelRefused", "why", {"pool": "p1"}, {})
    assert failed == Caught(
        "Failed", {"pool": "p1", "recordFailureError": {"Error": "ModelRefused", "Cause": "why"}}
    )


def test_every_task_passes_input_and_context(asl: dict[str, Any]) -> None:
    for name, task in tasks(asl).items():
        params = task["Parameters"]
        assert params["input.$"] == "$", name
        assert params["context"]["executionName.$"] == "$$.Execution.Name"
        assert params["context"]["attempt.$"] == "$$.State.RetryCount"


def test_a_run_fits_in_express_five_minutes(asl: dict[str, Any]) -> None:
    # Express ends any execution at 5 minutes; a run whose every step uses its whole time
    # once (the longest path ends in RecordFailure) must end before that, and so must the
    # state machine's own bound.
    states = asl["States"]
    longest = sum(
        states[s]["TimeoutSeconds"] for s in ("LoadEvidence", "CallModel", "ApplyLearning")
    )
    longest += states["RecordFailure"]["TimeoutSeconds"]
    assert longest < asl["TimeoutSeconds"] <= 300


def test_jsonpath_only(asl: dict[str, Any]) -> None:
    text = ASL_PATH.read_text()
    assert "JSONata" not in text
    assert "{%" not in text
    assert asl.get("QueryLanguage", "JSONPath") == "JSONPath"
    for state in asl["States"].values():
        assert state.get("QueryLanguage", "JSONPath") == "JSONPath"
        assert not {"Arguments", "Output", "Assign"} & set(state)


def test_placeholders_match_the_template_substitutions() -> None:
    template = load_template(ROOT / "template.yaml")
    substitutions = template["Resources"]["LearningStateMachine"]["Properties"][
        "DefinitionSubstitutions"
    ]
    placeholders = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", ASL_PATH.read_text()))
    assert placeholders == set(substitutions) == set(FAKE_ARNS)


def test_render_definition_refuses_a_missing_substitution() -> None:
    with pytest.raises(KeyError, match="RecordFailureFunctionArn"):
        render_definition(
            ASL_PATH, {k: v for k, v in FAKE_ARNS.items() if k != "RecordFailureFunctionArn"}
        )


# ------------------------------------------------------------------ moto


MOTO_CONFIG: Any = {
    "stepfunctions": {"execute_state_machine": True},
    "lambda": {"use_docker": False},
    "core": {"reset_boto3_session": False},
}


@pytest.fixture
def stepfunctions(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for var, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(var, value)
    with mock_aws(config=MOTO_CONFIG):
        yield boto3.client("stepfunctions", region_name=REGION)


def create(client: Any, kind: str | None = None) -> str:
    """The learning state machine, of the template's type unless `kind` says."""
    response = client.create_state_machine(
        name="agent-memory-learning",
        definition=render_definition(ASL_PATH, FAKE_ARNS),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/agent-memory-learning",
        type=kind or state_machine_type(),
    )
    return str(response["stateMachineArn"])


Step = Callable[[str, dict[str, Any]], Any]


def route_tasks(monkeypatch: pytest.MonkeyPatch, step: Step) -> list[tuple[str, dict[str, Any]]]:
    """Send moto's Lambda task invocations to `step(state, event)`; an exception is a task error."""
    calls: list[tuple[str, dict[str, Any]]] = []
    states = {arn: state for state, arn in ((s, FAKE_ARNS[p]) for s, p in STEPS.items())}

    def invoke(
        self: Any,
        function_name: str,
        qualifier: Any,
        body: Any,
        headers: Any,
        response_headers: dict[str, str],
    ) -> str:
        state, event = states[function_name], json.loads(body)
        calls.append((state, event))
        try:
            return json.dumps(step(state, event))
        except Exception as error:  # reported the way Lambda reports an unhandled error
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)})

    monkeypatch.setattr(LambdaSimpleBackend, "invoke", invoke)
    return calls


def run(client: Any, machine: str, payload: dict[str, Any]) -> dict[str, Any]:
    execution = client.start_execution(
        stateMachineArn=machine, name="exec-1", input=json.dumps(payload)
    )["executionArn"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        described: dict[str, Any] = client.describe_execution(executionArn=execution)
        if described["status"] != "RUNNING":
            return described
        time.sleep(0.05)
    raise AssertionError("execution still running after 30 s")


@pytest.mark.parametrize("kind", ["STANDARD", "EXPRESS"])
def test_moto_accepts_the_definition(stepfunctions: Any, kind: str) -> None:
    machine = create(stepfunctions, kind)
    described = stepfunctions.describe_state_machine(stateMachineArn=machine)
    assert described["name"] == "agent-memory-learning"
    assert described["type"] == kind
    assert (
        json.loads(described["definition"])["States"]["LoadEvidence"]["Resource"]
        == (FAKE_ARNS["LoadEvidenceFunctionArn"])
    )


# moto runs an Express machine through StartExecution (asynchronous Express) as it runs a
# Standard one; it does not implement StartSyncExecution (404 "Not yet implemented").
@pytest.mark.parametrize("kind", ["STANDARD", "EXPRESS"])
def test_moto_runs_the_happy_path(
    stepfunctions: Any, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    calls = route_tasks(monkeypatch, lambda state, event: {"step": state})
    machine = create(stepfunctions, kind)
    described = run(stepfunctions, machine, {"pool": "p1", "executionId": "e1"})
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {
        "pool": "p1",
        "executionId": "e1",
        "evidence": {"step": "LoadEvidence"},
        "model": {"step": "CallModel"},
        "result": {"step": "ApplyLearning"},
    }
    assert [state for state, _ in calls] == ["LoadEvidence", "CallModel", "ApplyLearning"]
    _, apply_event = calls[2]
    assert apply_event == {
        "input": {
            "pool": "p1",
            "executionId": "e1",
            "evidence": {"step": "LoadEvidence"},
            "model": {"step": "CallModel"},
        },
        "context": {
            "executionName": "exec-1",
            "executionId": f"arn:aws:states:{REGION}:{ACCOUNT}:execution:"
            "agent-memory-learning:exec-1",
            "state": "ApplyLearning",
            "attempt": 0,
        },
    }


class ModelRefused(Exception):
    pass


def test_moto_routes_a_failure_to_record_failure(
    stepfunctions: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def step(state: str, event: dict[str, Any]) -> Any:
        if state == "CallModel":
            raise ModelRefused("no")
        return {"step": state}

    calls = route_tasks(monkeypatch, step)
    described = run(stepfunctions, create(stepfunctions), {"pool": "p1", "executionId": "e1"})
    assert described["status"] == "FAILED"
    assert described["error"] == "LearningFailed"
    # Not a retried error: one CallModel attempt, then RecordFailure sees the error.
    assert [state for state, _ in calls] == ["LoadEvidence", "CallModel", "RecordFailure"]
    _, failure_event = calls[-1]
    assert failure_event["input"]["pool"] == "p1"
    assert failure_event["input"]["evidence"] == {"step": "LoadEvidence"}
    assert failure_event["input"]["error"]["Error"] == "ModelRefused"
    assert failure_event["context"]["state"] == "RecordFailure"


class Retryable(Exception):
    pass


def test_moto_retries_retryable_with_the_attempt_number(
    stepfunctions: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def step(state: str, event: dict[str, Any]) -> Any:
        if state == "CallModel" and event["context"]["attempt"] == 0:
            raise Retryable("throttled")
        return {"step": state, "attempt": event["context"]["attempt"]}

    calls = route_tasks(monkeypatch, step)
    described = run(stepfunctions, create(stepfunctions), {"pool": "p1"})
    assert described["status"] == "SUCCEEDED"
    assert [(s, e["context"]["attempt"]) for s, e in calls] == [
        ("LoadEvidence", 0),
        ("CallModel", 0),
        ("CallModel", 1),
        ("ApplyLearning", 0),
    ]
    assert json.loads(described["output"])["model"] == {"step": "CallModel", "attempt": 1}
