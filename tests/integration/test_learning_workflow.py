"""Durable learning end to end: the real ASL in moto's executor, the step handlers, DynamoDB
and KMS on the embedded AWS, a test pool, scripted models (the real `local/rules` unless a
test scripts another answer)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.ports import ModelReply
from infra.local import aws as local_aws_module
from infra.local.aws import state_machine_definition
from tests.support.learning_doubles import failing, remember_reply
from tests.support.state_machine import Workflow, crash_after, wf, workflow

BUDGET = "Remember that my budget is 1500 EUR."
HOTEL = "My hotel is the Adlon."

__all__ = ["wf"]  # the fixture this module uses


def test_a_turn_becomes_memory(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET)
    described = wf.wait(ref, upto)

    assert described["status"] == "SUCCEEDED"
    assert wf.task_states(described["executionArn"]) == [
        "LoadEvidence",
        "CallModel",
        "ApplyLearning",
    ]
    entries = wf.pool.entries(ref)
    assert entries["budget"]["content"].endswith("1500 EUR.")
    assert entries["budget"]["sources"] == ["i-01"]
    assert wf.pool.head(ref)["position"] == upto
    [execution] = wf.executions(ref)
    assert execution["status"] == "succeeded"
    assert execution["itemIds"] == ["i-01"]
    assert execution["applied"] == [{"key": "budget", "op": "remember"}]
    assert execution["rejected"] == []
    assert execution["endedAt"] >= execution["startedAt"]
    assert "error" not in execution
    assert len(wf.model.calls) == 1


def test_the_workflow_carries_ids_and_the_table_keeps_content_sealed(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET)
    described = wf.wait(ref, upto)

    history = str(wf.history(described["executionArn"])) + described.get("output", "")
    assert "EUR" not in history
    rows = wf.adapters.store.query("LEARN#session#s-1").records
    types = {r["type"] for r in rows}
    assert types == {
        "learning-execution",
        "learning-evidence",
        "model-call",
        "model-reply",
    }  # no `call-claim` row: the claim is on the first call row
    for row in rows:
        assert "EUR" not in str({k: v for k, v in row.items() if not isinstance(v, bytes)})
    # The answer is a row of its own beside its call, both expiring.
    [call] = [r for r in rows if r["type"] == "model-call"]
    [reply] = [r for r in rows if r["type"] == "model-reply"]
    assert (reply["sk"], reply["status"]) == (f"{call['sk']}#reply", "answered")
    assert call["sk"].endswith("#CallModel#00")
    assert call["owner"]
    assert call["until"]
    assert call["ttl"] > call["startedAt"] // 1000
    assert reply["ttl"] >= call["ttl"]
    [execution] = [r for r in rows if r["type"] == "learning-execution"]
    assert "evidence" not in execution  # never on it: a row of its own
    # The evidence row is not deleted by the run's end (a Delete there bills its whole
    # size, twice): it expires with the saved calls, whose request holds the same content.
    [kept] = [r for r in rows if r["type"] == "learning-evidence"]
    assert (kept["sk"], kept["name"]) == (
        execution["sk"].replace("EXEC#", "EVIDENCE#"),
        execution["name"],
    )
    assert call["ttl"] - 60 <= kept["ttl"] <= call["ttl"]  # kept just before the call


def test_starting_the_same_learning_twice_is_a_no_op(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET)
    assert wf.learning.start(ref, upto=upto, reason="turn") == "started"
    wf.wait(ref, upto)
    assert wf.learning.start(ref, upto=upto, reason="turn") == "started"

    assert len(wf.wait_all()) == 1
    assert len(wf.model.calls) == 1
    assert len(wf.pool.changes(ref)) == 1


@pytest.mark.parametrize(
    ("failure", "error_type", "model_calls"),
    [
        # The adapter's client timed out (below the step's 120 s): not retried.
        (failing("timeout", retryable=True, message="no answer within 60 s"), "ModelTimeout", 1),
        # 5xx: retried with backoff (3 more attempts), then recorded.
        (failing("unavailable", retryable=True, message="answered 503"), "ModelUnavailable", 4),
        (lambda request: "this is not JSON", "InvalidModelOutput", 1),
        (lambda request: '{"changes": [{"op": "remember"}]}', "InvalidModelOutput", 1),
    ],
    ids=["timeout", "5xx", "not-json", "wrong-shape"],
)
def test_a_failed_model_leaves_the_read_position_and_the_next_turn_learns_both(
    wf: Workflow, failure: Any, error_type: str, model_calls: int
) -> None:
    ref = wf.new_pool()
    wf.model.script = failure
    first = wf.turn(ref, BUDGET)
    described = wf.wait(ref, first)

    assert described["status"] == "FAILED"
    assert described["error"] == "LearningFailed"
    assert wf.task_states(described["executionArn"])[-1] == "RecordFailure"
    assert len(wf.model.calls) == model_calls
    assert wf.pool.head(ref)["position"] == 0
    assert wf.pool.entries(ref) == {}
    [execution] = wf.executions(ref)
    assert execution["status"] == "failed"
    assert execution["error"]["type"] == error_type
    assert execution["error"]["message"].startswith("CallModel: ")
    assert execution["applied"] == []
    if error_type == "ModelUnavailable":
        assert wf.waits == [2, 4, 8]  # the checked-in backoff, not waited for

    wf.model.script = None
    second = wf.turn(ref, HOTEL)
    assert wf.wait(ref, second)["status"] == "SUCCEEDED"
    newest = wf.executions(ref)[0]
    assert newest["itemIds"] == ["i-01", "i-02"]
    assert {a["key"] for a in newest["applied"]} == {"budget", "hotel"}
    assert wf.pool.head(ref)["position"] == second


def test_refresh_after_a_failure_runs_again_under_a_new_name(wf: Workflow) -> None:
    ref = wf.new_pool()
    wf.model.script = failing("timeout", retryable=False)
    upto = wf.turn(ref, BUDGET)
    wf.wait(ref, upto)
    wf.model.script = None

    assert wf.learning.start(ref, upto=upto, reason="refresh") == "started"
    finished = wf.wait_all()
    assert sorted(e["status"] for e in finished) == ["FAILED", "SUCCEEDED"]
    assert [e["status"] for e in wf.executions(ref)] == ["succeeded", "failed"]
    assert "budget" in wf.pool.entries(ref)


@pytest.mark.parametrize(
    "function", ["LoadEvidenceFunction", "CallModelFunction", "ApplyLearningFunction"]
)
def test_a_step_that_crashes_after_its_work_is_retried_without_a_second_model_call(
    wf: Workflow, function: str
) -> None:
    local_aws_module.add_invoke_hook(crash_after(function))
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET)
    described = wf.wait(ref, upto)

    assert described["status"] == "SUCCEEDED"
    states = wf.task_states(described["executionArn"])
    retried = function.removesuffix("Function")
    assert states.count(retried) == 2
    assert len(wf.model.calls) == 1
    assert len(wf.pool.changes(ref)) == 1
    [execution] = wf.executions(ref)
    assert execution["status"] == "succeeded"
    assert execution["applied"] == [{"key": "budget", "op": "remember"}]
    if function == "CallModelFunction":
        calls = wf.adapters.store.query("LEARN#session#s-1").records
        # One call, answered once: its answer row.
        assert [r["type"] for r in calls if r["type"].startswith("model-")] == [
            "model-call",
            "model-reply",
        ]


def _barrier_model(wf: Workflow, parties: int) -> None:
    """Each model call waits for the others: every run has read its evidence before any
    applies, the worst case for applying evidence twice."""
    barrier = threading.Barrier(parties, timeout=10)

    def script(request: ModelRequest) -> ModelReply:
        barrier.wait()
        from agent_memory.adapters.rules_model import RulesModel

        return RulesModel().propose(request)

    wf.model.script = script


def test_two_executions_for_the_same_evidence_apply_it_once(wf: Workflow) -> None:
    ref = wf.new_pool()
    _barrier_model(wf, 2)
    upto = wf.turn(ref, BUDGET, start=False)
    assert wf.learning.start(ref, upto=upto, reason="turn") == "started"
    assert wf.learning.start(ref, upto=upto, reason="refresh") == "started"
    finished = wf.wait_all()

    assert [e["status"] for e in finished] == ["SUCCEEDED", "SUCCEEDED"]
    assert len(wf.model.calls) == 2
    assert len(wf.pool.changes(ref)) == 1
    statuses = sorted(e["status"] for e in wf.executions(ref))
    assert statuses == ["skipped", "succeeded"]
    [skipped] = [e for e in wf.executions(ref) if e["status"] == "skipped"]
    assert skipped["applied"] == []
    assert skipped["note"] == "another run learned this evidence first"
    assert wf.pool.head(ref)["position"] == upto


def test_overlapping_turns_learn_every_item_once(wf: Workflow) -> None:
    ref = wf.new_pool()
    _barrier_model(wf, 2)
    first = wf.turn(ref, BUDGET)
    second = wf.turn(ref, HOTEL)
    wf.wait_all()

    assert wf.pool.head(ref)["position"] == second > first
    assert set(wf.pool.entries(ref)) == {"budget", "hotel"}
    applied = [a for e in wf.executions(ref) for a in e["applied"]]
    assert sorted(a["key"] for a in applied) == ["budget", "hotel"]


def test_a_remember_committed_while_the_model_works_is_kept(wf: Workflow) -> None:
    ref = wf.new_pool()

    def script(request: ModelRequest) -> str:
        # A person edits memory between LoadEvidence and ApplyLearning.
        wf.pool.remember(ref, "hotel", "The hotel is the Adlon.")
        wf.pool.remember(ref, "budget", "The budget is 2000 EUR.")
        return remember_reply("budget", "The budget is 1500 EUR.", "i-01")

    wf.model.script = script
    upto = wf.turn(ref, BUDGET)
    assert wf.wait(ref, upto)["status"] == "SUCCEEDED"

    entries = wf.pool.entries(ref)
    assert entries["hotel"]["content"] == "The hotel is the Adlon."
    assert entries["budget"]["content"] == "The budget is 2000 EUR."
    [execution] = wf.executions(ref)
    assert execution["status"] == "succeeded"
    assert execution["applied"] == []
    assert execution["rejected"] == [
        {
            "change": {
                "op": "remember",
                "key": "budget",
                "content": "The budget is 1500 EUR.",
                "kind": "fact",
                "sources": ["i-01"],
            },
            "reason": "a person changed this entry while the model worked",
        }
    ]
    assert wf.pool.head(ref)["position"] == upto


# --- through the HTTP API, with the session pool ---------------------------------------------


class Person:
    """One user of the HTTP API."""

    def __init__(self, client: Any, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    def post(self, url: str, body: Any) -> Any:
        return self.client.post(url, json=body, headers=self.headers)

    def get(self, url: str) -> Any:
        answer = self.client.get(url, headers=self.headers)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def new_session(self) -> str:
        agent = self.post("/v1/agents", {"name": "Trip planner"}).json()["agent"]["id"]
        answer = self.post("/v1/sessions", {"agentId": agent})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["session"]["id"])

    def turn(self, session: str, *texts: str) -> dict[str, Any]:
        items = [{"role": "user", "content": text} for text in texts]
        answer = self.post(f"/v1/sessions/{session}/turns", {"items": items})
        assert answer.status_code == 200, answer.text
        return dict(answer.json()["turn"])

    def command(self, session: str, command: dict[str, Any]) -> Any:
        view = self.get(f"/v1/sessions/{session}")["session"]
        body = {"expected": view["head"], "revision": view["revision"], "command": command}
        return self.post(f"/v1/sessions/{session}/memory", body)


@pytest.fixture
def web(
    local_aws: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Workflow, Person]]:
    """The app over the same services the step handlers use; `local/rules` is scripted."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from tests.conftest import ADMIN_TOKEN

    with workflow(local_aws, settings, monkeypatch, model="local/rules", notes=False) as flow:
        app = create_app(lambda: flow.services)
        with TestClient(app, raise_server_exceptions=False) as client:
            admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
            org = client.post("/v1/admin/organizations", json={"name": "A"}, headers=admin)
            user = client.post(
                "/v1/admin/users", json={"organizationId": org.json()["id"]}, headers=admin
            ).json()
            yield flow, Person(client, {"Authorization": f"Bearer {user['token']}"})


def test_http_a_turn_becomes_session_memory_with_cold_started_steps(
    web: tuple[Workflow, Person],
) -> None:
    flow, ana = web
    from agent_memory.bootstrap import step_services

    step_services.reset()  # the steps build their own services from the environment
    session = ana.new_session()
    assert ana.turn(session, "Plan a trip to Berlin.", BUDGET)["learning"] == "started"
    [described] = flow.wait_all()

    assert described["status"] == "SUCCEEDED"
    memory = ana.get(f"/v1/sessions/{session}/memory")
    assert memory["entries"]["budget"]["content"].endswith("1500 EUR.")
    assert memory["entries"]["budget"]["sources"] == ["i-02"]
    assert memory["processed"] == ["i-01", "i-02"]
    [execution] = ana.get(f"/v1/sessions/{session}/learning")["executions"]
    assert execution["status"] == "succeeded"
    assert execution["itemIds"] == ["i-01", "i-02"]
    assert execution["applied"] == [{"key": "budget", "op": "remember"}]
    assert flow.model.calls == []  # the cold-started steps used the real local/rules


def test_http_a_failed_model_is_shown_and_the_next_turn_learns_both(
    web: tuple[Workflow, Person],
) -> None:
    flow, ana = web
    session = ana.new_session()
    flow.model.script = lambda request: "Sure! Here is what I learned: the budget."
    ana.turn(session, BUDGET)
    [failed] = flow.wait_all()
    assert failed["status"] == "FAILED"
    [execution] = ana.get(f"/v1/sessions/{session}/learning")["executions"]
    assert execution["status"] == "failed"
    assert execution["error"]["type"] == "InvalidModelOutput"
    assert ana.get(f"/v1/sessions/{session}/memory")["processed"] == []

    flow.model.script = None
    ana.turn(session, HOTEL)
    flow.wait_all()
    memory = ana.get(f"/v1/sessions/{session}/memory")
    assert set(memory["entries"]) == {"budget", "hotel"}
    assert memory["processed"] == ["i-01", "i-02"]
    newest, oldest = ana.get(f"/v1/sessions/{session}/learning")["executions"]
    assert (newest["status"], oldest["status"]) == ("succeeded", "failed")
    assert newest["itemIds"] == ["i-01", "i-02"]


def test_http_refresh_learns_after_a_failure(web: tuple[Workflow, Person]) -> None:
    flow, ana = web
    session = ana.new_session()
    flow.model.script = failing("timeout", retryable=True)
    ana.turn(session, BUDGET)
    flow.wait_all()
    flow.model.script = None

    answer = ana.command(session, {"_tag": "Refresh"})
    assert answer.status_code == 200, answer.text
    flow.wait_all()
    memory = ana.get(f"/v1/sessions/{session}/memory")
    assert "budget" in memory["entries"]
    statuses = [e["status"] for e in ana.get(f"/v1/sessions/{session}/learning")["executions"]]
    assert statuses == ["succeeded", "failed"]


def test_http_a_remember_committed_while_the_model_works_is_kept(
    web: tuple[Workflow, Person],
) -> None:
    flow, ana = web
    session = ana.new_session()
    from agent_memory.adapters.rules_model import RulesModel

    def script(request: ModelRequest) -> ModelReply:
        remember = {"_tag": "Remember", "key": "hotel", "content": "Hotel Adlon.", "kind": "fact"}
        assert ana.command(session, remember).status_code == 200
        return RulesModel().propose(request)

    flow.model.script = script
    ana.turn(session, BUDGET)
    [described] = flow.wait_all()

    assert described["status"] == "SUCCEEDED"
    entries = ana.get(f"/v1/sessions/{session}/memory")["entries"]
    assert entries["hotel"]["content"] == "Hotel Adlon."
    assert entries["budget"]["sources"] == ["i-01"]
    [execution] = ana.get(f"/v1/sessions/{session}/learning")["executions"]
    assert execution["applied"] == [{"key": "budget", "op": "remember"}]


def test_a_model_step_over_its_time_limit_fails_safely(wf: Workflow) -> None:
    """The checked-in limit is 120 s; a copy of the definition with 1 s shows the path
    (States.Timeout, never retried, recorded) without waiting two minutes."""
    definition = json.loads(state_machine_definition()[1])
    definition["States"]["CallModel"]["TimeoutSeconds"] = 1
    wf.sfn.update_state_machine(stateMachineArn=wf.machine_arn, definition=json.dumps(definition))
    answered = threading.Event()

    def slow(request: ModelRequest) -> str:
        time.sleep(1.5)
        answered.set()
        return remember_reply("budget", "The budget is 1500 EUR.", "i-01")

    wf.model.script = slow
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET)
    described = wf.wait(ref, upto)

    assert described["status"] == "FAILED"
    assert wf.task_states(described["executionArn"]) == [
        "LoadEvidence",
        "CallModel",
        "RecordFailure",
    ]
    [execution] = wf.executions(ref)
    assert execution["status"] == "failed"
    assert execution["error"]["type"] == "States.Timeout"
    assert execution["error"]["message"].startswith("CallModel: ")
    # The late answer is saved in the call log but changes nothing.
    assert answered.wait(5)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        calls = wf.adapters.store.query("LEARN#session#s-1").records
        if any(r.get("status") == "answered" for r in calls):
            break
        time.sleep(0.05)
    assert wf.pool.head(ref)["position"] == 0
    assert wf.pool.entries(ref) == {}
    assert wf.executions(ref)[0]["status"] == "failed"
