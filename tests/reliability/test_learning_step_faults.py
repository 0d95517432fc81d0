"""Faults at every AWS call of every learning step, for the real session and agent pools
driven through HTTP (tests/integration/test_learning_faults.py covers hand-picked calls on a
test pool).

A clean run records the calls each step makes (per attempt of the step). Then, for each
step, each call position in it and each fault that fits the call, a new pool's Turn is
learned with the fault armed:

- transient: the fault hits that call (every SDK attempt of it) in the step's FIRST attempt:
  the state machine retries the step and the run succeeds, applying the evidence once, with
  one model call (a failed condition may also end the run: it says another writer won);
- lasting: that call and every later call of the same operation fail in EVERY attempt of
  the step: the run either still succeeds (the step did not need the call) or fails with the
  error recorded by RecordFailure, memory and read position untouched; then the next Turn
  learns both Turns' items.

RecordFailure's calls are faulted in a run whose model answers garbage: the failure is
recorded after a retry (transient) or the run ends FAILED (lasting); memory is untouched
either way and the next Turn learns.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_memory.persistence.agent_memory import AgentMemoryRepository
from agent_memory.service.learning_pools import PoolRef, SourceRef
from agent_memory.service.learning_runs import execution_name
from infra.local import aws as local_aws_module
from tests.conftest import ADMIN_TOKEN
from tests.reliability import faults as F
from tests.reliability.faults import FaultInjector
from tests.reliability.world import put_back, snapshot
from tests.support.state_machine import Workflow, cached_dispatch, crash_after, workflow

MODEL = "local/rules"  # the real extractor, counted (tests/support/learning_doubles.ScriptedModel)
# Two Turns per pool kind: the rules model learns one entry from each.
TEXTS = {
    "session": ("Remember that my budget is 1500 EUR.", "My hotel is the Adlon."),
    "agent": ("I prefer short answers.", "We decided to deploy on Tuesdays."),
}
STEPS = ("LoadEvidence", "CallModel", "ApplyLearning", "RecordFailure")
KINDS = ("session", "agent")


@dataclass(frozen=True)
class Pool:
    kind: str
    agent: str
    session: str


@dataclass
class Lab:
    flow: Workflow
    faults: FaultInjector
    client: Any
    orgs: dict[str, str]  # per pool kind: agent learning needs an org with a helper model
    headers: dict[str, dict[str, str]]
    table: str
    saved: Any = None  # the table with the organizations and people only
    notes: list[str] = field(default_factory=list)
    calls: dict[tuple[str, bool], dict[str, list[str]]] = field(default_factory=dict)

    def call(self, kind: str, method: str, path: str, body: Any = None) -> Any:
        answer = self.client.request(method, path, json=body, headers=self.headers[kind])
        assert answer.status_code < 300, answer.text
        return answer.json()

    def new_pool(self, kind: str) -> Pool:
        """A new Agent and Session: a session pool, or (a Session without a model, so that
        only agent learning runs) an agent pool."""
        agent = self.call(kind, "POST", "/v1/agents", {"name": "helper"})["agent"]["id"]
        body = {"agentId": agent} | ({"model": None} if kind == "agent" else {})
        session = self.call(kind, "POST", "/v1/sessions", body)["session"]["id"]
        return Pool(kind, agent, session)

    def learn(self, pool: Pool, turn: int) -> dict[str, Any]:
        """Turn number `turn` (1 or 2), then its learning run to the end."""
        body = {"items": [{"role": "user", "content": TEXTS[pool.kind][turn - 1]}]}
        answer = self.call(pool.kind, "POST", f"/v1/sessions/{pool.session}/turns", body)
        started = answer["turn"]["learning" if pool.kind == "session" else "agentLearning"]
        assert started == "started", answer
        [item] = answer["turn"]["itemIds"]
        upto = int(item.removeprefix("i-"))
        org = self.orgs[pool.kind]
        ref = (
            PoolRef("session", org, pool.session)
            if pool.kind == "session"
            else PoolRef("agent", org, pool.agent, SourceRef("session", pool.session))
        )
        return self.flow.wait_arn(self.flow.arn(execution_name(ref, upto)))

    def memory(self, pool: Pool) -> tuple[dict[str, Any], int]:
        """(entry key -> sources, read position) of the pool."""
        if pool.kind == "session":
            held = self.call("session", "GET", f"/v1/sessions/{pool.session}/memory")
            position = len(held["processed"])
        else:
            held = self.call("agent", "GET", f"/v1/agents/{pool.agent}/memory")
            repo = AgentMemoryRepository(self.flow.adapters.store, self.flow.adapters.cipher)
            position = repo.position(pool.agent, pool.session).position
        return {k: e["sources"] for k, e in held["entries"].items()}, position

    def executions(self, pool: Pool) -> list[dict[str, Any]]:
        path = (
            f"/v1/sessions/{pool.session}/learning"
            if pool.kind == "session"
            else f"/v1/agents/{pool.agent}/learning"
        )
        return list(self.call(pool.kind, "GET", path)["executions"])

    def model_calls(self, kind: str) -> int:
        return sum(1 for request in self.flow.model.calls if request.input.pool_kind == kind)


@pytest.fixture(scope="module")
def lab(module_aws: tuple[Any, Any, Any]) -> Iterator[Lab]:
    import botocore.endpoint
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from tests.reliability.world import _NoSleep

    session, local, settings = module_aws
    faults = FaultInjector()
    faults.install(session._session)  # before workflow() builds its clients
    with (
        pytest.MonkeyPatch.context() as patch,
        workflow((session, local), settings, patch, model=MODEL, notes=False) as flow,
    ):
        for name in ("aws_encryption_sdk", "agent_memory", "agent-memory"):
            patch.setattr(logging.getLogger(name), "disabled", True)
        patch.setattr(botocore.endpoint, "time", _NoSleep([]))
        # CallModel's pauses between tries to save a paid answer (0.2 s, 0.5 s): recorded.
        patch.setattr("agent_memory.service.learning_call.time", _NoSleep([]))
        # Name the step each invocation runs, in the thread that runs it.
        local_aws_module.add_invoke_hook(_marking(faults))
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        with TestClient(create_app(lambda: flow.services), raise_server_exceptions=False) as c:
            orgs, headers = {}, {}
            for kind in KINDS:
                org = c.post("/v1/admin/organizations", json={"name": kind}, headers=admin)
                orgs[kind] = org.json()["id"]
                user = c.post("/v1/admin/users", json={"organizationId": orgs[kind]}, headers=admin)
                headers[kind] = {"Authorization": f"Bearer {user.json()['token']}"}
            helper = {"helperModel": MODEL}
            patched = c.patch(
                f"/v1/organizations/{orgs['agent']}/settings", json=helper, headers=admin
            )
            assert patched.status_code == 200, patched.text
            made = Lab(flow, faults, c, orgs, headers, local.table_name)
            made.saved = snapshot(local.table_name)
            yield made


def _marking(faults: FaultInjector) -> Any:
    dispatch = cached_dispatch()

    def hook(logical_id: str, event: dict[str, Any]) -> Any:
        faults.enter_step(event["context"]["state"])
        try:
            return dispatch(logical_id, event)
        finally:
            faults.enter_step(None)

    return hook


def _reset(lab: Lab, kind: str, script: Any = None) -> Pool:
    """A new pool on a table holding the organizations and people only (every run ended)."""
    put_back(lab.table, lab.saved)
    lab.faults.reset()
    lab.flow.model.calls.clear()
    lab.flow.model.script = script
    return lab.new_pool(kind)


def _not_json(_request: Any) -> str:
    return "Sure! Noted."


def step_calls(lab: Lab, kind: str, script: Any = None) -> dict[str, list[str]]:
    """The calls each step makes in its first attempt, in a clean run (one per pool kind
    and model behaviour)."""
    key = (kind, script is not None)
    if key not in lab.calls:
        lab.calls[key] = _record_calls(lab, kind, script)
    return lab.calls[key]


def _record_calls(lab: Lab, kind: str, script: Any) -> dict[str, list[str]]:
    pool = _reset(lab, kind, script)
    lab.learn(pool, 1)
    calls: dict[str, list[str]] = {}
    for step, attempt, _index, call in lab.faults.step_calls:
        if attempt == 1:
            calls.setdefault(step, []).append(call)
    return calls


def _faults_for(call: str, lasting: bool) -> list[F.Fault]:
    """Throttling (DynamoDB, KMS) and TransactionCanceledException with each reason; a lasting
    outage is throttling: a condition that fails on every retry is a transient one repeated."""
    if call.startswith("kms."):
        return [F.KMS_THROTTLED]
    if F.TX_THROTTLED.fits(call):  # a transaction is throttled by a cancellation reason
        return [F.TX_THROTTLED] if lasting else [F.TX_CONDITION, F.TX_CONFLICT, F.TX_THROTTLED]
    return [F.DDB_THROTTLED]


WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem")
# RELIABILITY_FULL=1: every call of every step, not one per operation before a write.
FULL = os.environ.get("RELIABILITY_FULL") == "1"


def _covered(calls: list[str], index: int, lasting: bool) -> bool:
    """A fault here takes the same path as one at an earlier call: both hit reads before the
    step wrote anything, so the step is retried (transient: at each operation's first call)
    or fails (lasting: at the step's first call) from the same state. Every write and every
    call after the step's first write are tried."""
    call = calls[index]
    if FULL or call.endswith(WRITES) or any(c.endswith(WRITES) for c in calls[:index]):
        return False
    return index > 0 if lasting else call in calls[:index]


def _applied_once(lab: Lab, pool: Pool) -> str | None:
    entries, position = lab.memory(pool)
    if position != 1 or len(entries) != 1:
        return f"memory {entries} read up to {position}"
    executions = lab.executions(pool)
    if [e["status"] for e in executions] != ["succeeded"]:
        return f"executions {executions}"
    if [a["op"] for a in executions[0]["applied"]] != ["remember"]:
        return f"applied {executions[0]['applied']}"
    return None


def _untouched_then_next_turn_learns(lab: Lab, pool: Pool, step: str) -> str | None:
    entries, position = lab.memory(pool)
    if entries or position:
        return f"memory changed by a failed run: {entries} read up to {position}"
    [execution] = lab.executions(pool)
    recorded = execution["status"] == "failed" and execution["error"]["message"].startswith(
        f"{step}: "
    )
    if step != "RecordFailure" and not recorded:
        return f"the failure is not recorded: {execution}"
    lab.faults.reset()
    lab.flow.model.script = None
    described = lab.learn(pool, 2)
    entries, position = lab.memory(pool)
    if described["status"] != "SUCCEEDED" or position != 2 or len(entries) != 2:
        return f"the next turn did not learn both: {described['status']} {entries} {position}"
    return None


def _case(
    lab: Lab, kind: str, step: str, index: int, call: str, fault: F.Fault, lasting: bool
) -> str | None:
    pool = _reset(lab, kind, _not_json if step == "RecordFailure" else None)
    armed = lab.faults.arm(
        fault, step=step, step_call=index, every_attempt=lasting, onward=lasting, operation=call
    )
    described = lab.learn(pool, 1)
    lab.faults.armed.clear()  # the checks below read through the same clients
    if armed.hits == 0:
        return "the fault never fired"
    lab.notes.append(described["status"])
    if step == "RecordFailure":
        if described["status"] != "FAILED":
            return f"a run whose model failed ended {described['status']}"
        return _untouched_then_next_turn_learns(lab, pool, step)
    if described["status"] == "SUCCEEDED":
        if lab.model_calls(kind) != 1:
            return f"{lab.model_calls(kind)} model calls"
        return _applied_once(lab, pool)
    if not lasting and fault is not F.TX_CONDITION:
        return f"a transient fault failed the run: {lab.executions(pool)[0].get('error')}"
    return _untouched_then_next_turn_learns(lab, pool, step)


# Findings not fixed yet, by (step, call, fault) (none today).
KNOWN: dict[tuple[str, str, str], str] = {}


@pytest.mark.parametrize("lasting", [False, True], ids=["transient", "lasting"])
@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_fault_at_any_call_of_a_step_is_retried_or_recorded(
    lab: Lab, kind: str, step: str, lasting: bool
) -> None:
    calls = step_calls(lab, kind, _not_json if step == "RecordFailure" else None)[step]
    assert calls, f"{step} made no AWS call"
    findings, known = [], set()
    lab.notes.clear()
    for index, call in enumerate(calls):
        if _covered(calls, index, lasting):
            continue
        for fault in _faults_for(call, lasting):
            what = _case(lab, kind, step, index, call, fault, lasting)
            if what and (step, call, fault.name) in KNOWN:
                known.add((step, call, fault.name))
            elif what:
                findings.append(f"{kind} {step} {fault.name} at #{index} ({call}): {what}")
    assert not findings, "\n".join(findings)
    if lasting:  # an outage of any call a step needs ends the run (RecordFailure)
        assert "FAILED" in lab.notes
    expected = {k for k in KNOWN if k[0] == step and k[1] in calls and not lasting}
    assert known == expected, f"known findings that no longer happen: {expected - known}"


@pytest.mark.parametrize(
    "function", ["LoadEvidenceFunction", "CallModelFunction", "ApplyLearningFunction"]
)
@pytest.mark.parametrize("kind", KINDS)
def test_a_step_that_crashes_after_its_work_recovers_without_a_second_model_call(
    lab: Lab, kind: str, function: str
) -> None:
    pool = _reset(lab, kind)
    with local_aws_module.invoke_hook(crash_after(function)):
        described = lab.learn(pool, 1)
    assert described["status"] == "SUCCEEDED"
    states = lab.flow.task_states(described["executionArn"])
    assert states.count(function.removesuffix("Function")) == 2
    assert lab.model_calls(kind) == 1
    assert _applied_once(lab, pool) is None
