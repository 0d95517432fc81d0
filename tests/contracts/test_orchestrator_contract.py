"""The Orchestrator port's contract: a start runs once under its name, a repeated start of
the same name is a no-op reported as `started=False`, and a busy or unreachable workflow
service is `Unavailable` with nothing started.

To run it against another set of adapters, add one entry to `ORCHESTRATORS`: a function
that builds an `OrchestratorRig` (the orchestrator, what it ran, and a way to make it busy).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.ports import Orchestrator

# A machine that only echoes its input: the contract is the adapter's, not the ASL's
# (tests/infra/test_asl.py and tests/integration run the learning machine itself).
ECHO = json.dumps({"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}})


@dataclass
class OrchestratorRig:
    orchestrator: Orchestrator
    # Every run started so far, by name: the inputs it was started with (settled first).
    runs: Callable[[], dict[str, list[dict[str, Any]]]]
    # Make the next `times` starts fail as a busy workflow service does.
    outage: Callable[[int], None]


def _recording(request: pytest.FixtureRequest) -> OrchestratorRig:
    from tests.support.in_memory import RecordingOrchestrator

    recording = RecordingOrchestrator()

    def outage(times: int) -> None:
        recording.outages = times

    return OrchestratorRig(
        recording,
        lambda: {name: [dict(payload)] for name, payload in recording.started.items()},
        outage,
    )


def _stepfunctions(request: pytest.FixtureRequest) -> OrchestratorRig:
    return _step_functions_rig(request, express=False)


def _express(request: pytest.FixtureRequest) -> OrchestratorRig:
    """Step Functions as an asynchronous Express machine behaves in AWS: a used name is
    started again (moto refuses it for both types, so each start's name is made unique on
    the way out, and the runs are grouped back by the name the adapter asked for). The
    adapter's name claims in the store keep the contract."""
    return _step_functions_rig(request, express=True)


def _step_functions_rig(request: pytest.FixtureRequest, *, express: bool) -> OrchestratorRig:
    from botocore.awsrequest import AWSResponse

    from agent_memory.adapters.stepfunctions import StepFunctionsOrchestrator
    from infra.local.aws import ACCOUNT, state_machine_type
    from tests.support.in_memory import FixedClock, InMemoryStore

    session, _local = request.getfixturevalue("local_aws")
    client = session.client("stepfunctions")
    machine = client.create_state_machine(
        name="contract-echo",
        definition=ECHO,
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/contract",
        type=state_machine_type(),
    )["stateMachineArn"]
    busy = [0]

    def throttle(**_: Any) -> Any:
        if busy[0] <= 0:
            return None
        busy[0] -= 1
        body = {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}
        return AWSResponse("https://injected", 400, {}, None), body

    client.meta.events.register("before-call.sfn.StartExecution", throttle)
    copies = [0]

    def as_express(params: dict[str, Any], **_: Any) -> None:
        copies[0] += 1
        params["name"] = f"{params['name']}~{copies[0]}"

    if express:
        client.meta.events.register("provide-client-params.sfn.StartExecution", as_express)

    def outage(times: int) -> None:
        busy[0] = times

    def runs() -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for listed in client.list_executions(stateMachineArn=machine)["executions"]:
            described = _settled(client, listed["executionArn"])
            asked = described["name"].split("~")[0]
            found.setdefault(asked, []).append(json.loads(described["input"]))
        return found

    orchestrator = StepFunctionsOrchestrator(
        client, machine, claims=InMemoryStore(), clock=FixedClock()
    )
    return OrchestratorRig(orchestrator, runs, outage)


def _settled(client: Any, arn: str) -> dict[str, Any]:
    deadline = time.monotonic() + 10
    while True:
        described: dict[str, Any] = client.describe_execution(executionArn=arn)
        if described["status"] != "RUNNING" or time.monotonic() > deadline:
            return described
        time.sleep(0.02)


def _local(request: pytest.FixtureRequest) -> OrchestratorRig:
    """The single-machine runner on the SQLite store, running a Task that records its run
    (a Pass state would leave nothing to observe but the runner's own rows)."""
    from agent_memory.adapters.local_orchestrator import LocalOrchestrator
    from agent_memory.adapters.sqlite_store import SqliteStore

    store = SqliteStore(request.getfixturevalue("tmp_path") / "table.sqlite3")
    request.addfinalizer(store.close)
    busy = [0]

    class Outage:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def write(self, actions: Any) -> None:
            if busy[0] > 0:
                busy[0] -= 1
                raise Unavailable("injected: the store is busy")
            store.write(actions)

    ran: dict[str, list[dict[str, Any]]] = {}
    machine = {
        "StartAt": "Record",
        "States": {
            "Record": {
                "Type": "Task",
                "Resource": "record",
                "Parameters": {"input.$": "$", "name.$": "$$.Execution.Name"},
                "End": True,
            }
        },
    }

    def record(event: dict[str, Any]) -> dict[str, Any]:
        ran.setdefault(event["name"], []).append(event["input"])
        return {}

    local = LocalOrchestrator(Outage(), machine, {"record": record})  # type: ignore[arg-type]
    local.run()
    request.addfinalizer(local.close)

    def runs() -> dict[str, list[dict[str, Any]]]:
        assert local.idle(10)
        return {name: list(inputs) for name, inputs in ran.items()}

    def outage(times: int) -> None:
        busy[0] = times

    return OrchestratorRig(local, runs, outage)


ORCHESTRATORS: dict[str, Callable[[pytest.FixtureRequest], OrchestratorRig]] = {
    "recording": _recording,
    "stepfunctions": _stepfunctions,
    "stepfunctions-express": _express,
    "local": _local,
}


@pytest.fixture(params=list(ORCHESTRATORS))
def rig(request: pytest.FixtureRequest) -> OrchestratorRig:
    return ORCHESTRATORS[request.param](request)


def test_a_start_runs_once_with_its_payload(rig: OrchestratorRig) -> None:
    started = rig.orchestrator.start("session-o-s-3", {"pool": {"poolId": "s"}, "upto": 3})
    assert (started.name, started.started) == ("session-o-s-3", True)
    assert rig.runs() == {"session-o-s-3": [{"pool": {"poolId": "s"}, "upto": 3}]}


def test_a_repeated_name_is_a_no_op(rig: OrchestratorRig) -> None:
    rig.orchestrator.start("n-1", {"upto": 1})
    rig.runs()  # the first has ended
    again = rig.orchestrator.start("n-1", {"upto": 1})
    other_payload = rig.orchestrator.start("n-1", {"upto": 2})
    assert (again.name, again.started) == ("n-1", False)
    assert other_payload.started is False
    assert rig.runs() == {"n-1": [{"upto": 1}]}


def test_other_names_are_other_runs(rig: OrchestratorRig) -> None:
    assert rig.orchestrator.start("a", {"upto": 1}).started
    assert rig.orchestrator.start("b", {"upto": 1}).started
    assert set(rig.runs()) == {"a", "b"}


def test_a_busy_service_is_unavailable_and_starts_nothing(rig: OrchestratorRig) -> None:
    rig.outage(1)
    with pytest.raises(Unavailable):
        rig.orchestrator.start("n-1", {"upto": 1})
    assert rig.runs() == {}
    # The name was not used up: the retry after the outage runs it.
    assert rig.orchestrator.start("n-1", {"upto": 1}).started
    assert rig.runs() == {"n-1": [{"upto": 1}]}
