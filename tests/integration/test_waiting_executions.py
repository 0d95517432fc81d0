"""Learning executions that wait for an event (seed 002: a confide's learning waits for its
turn to complete; a spent budget waits for the next period): recorded as rows, listed as
`waiting`, released by their event through the real ASL on the embedded AWS, started once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agent_memory.bootstrap import aws_adapters
from agent_memory.domain.errors import Unavailable
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.service.learning import LearningService
from agent_memory.service.learning_pools import PoolRef
from agent_memory.service.learning_start import wait_name
from tests.support.in_memory import (
    FakeCipher,
    FixedClock,
    InMemoryStore,
    RecordingOrchestrator,
    SequentialIds,
)
from tests.support.learning_doubles import Catalog
from tests.support.state_machine import ORG, Workflow, wf

BUDGET = "Remember that my budget is 1500 EUR."
TURN = "turn:o-1:c-1:t-1"

__all__ = ["wf"]  # the fixture this module uses


def executions_started(wf: Workflow) -> list[str]:
    listed = wf.sfn.list_executions(stateMachineArn=wf.machine_arn)["executions"]
    return sorted(e["name"] for e in listed)


def test_a_wait_is_listed_as_waiting_and_runs_when_its_event_happens(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)

    assert wf.learning.wait(ref, event=TURN, reason="confide") == "waiting"
    [waiting] = wf.executions(ref)
    assert waiting["status"] == "waiting"
    assert (waiting["reason"], waiting["itemIds"], waiting["endedAt"]) == ("confide", [], None)
    assert executions_started(wf) == []  # nothing runs, and no model is asked, before the event
    assert wf.model.calls == []

    [started] = wf.learning.release(TURN, upto=upto)
    assert (started.name, started.started) == (waiting["id"], True)
    described = wf.wait_arn(wf.arn(started.name))
    assert described["status"] == "SUCCEEDED"
    assert wf.task_states(described["executionArn"]) == [
        "LoadEvidence",
        "CallModel",
        "ApplyLearning",
    ]
    [ended] = wf.executions(ref)
    assert (ended["id"], ended["status"], ended["itemIds"]) == (
        waiting["id"],
        "succeeded",
        ["i-01"],
    )
    assert ended["startedAt"] == waiting["startedAt"]
    assert ended["applied"] == [{"key": "budget", "op": "remember"}]
    assert wf.pool.head(ref)["position"] == upto


def test_a_released_wait_with_nothing_new_ends_skipped(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET)  # the turn's own learning reads it first
    assert wf.wait(ref, upto)["status"] == "SUCCEEDED"
    assert wf.learning.wait(ref, event=TURN, reason="confide") == "waiting"

    [started] = wf.learning.release(TURN, upto=upto)
    assert wf.wait_arn(wf.arn(started.name))["status"] == "SUCCEEDED"
    statuses = {e["id"]: e["status"] for e in wf.executions(ref)}
    assert statuses[started.name] == "skipped"
    assert len(wf.model.calls) == 1  # the turn's run only


def test_an_event_that_happened_first_starts_the_wait_at_once(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    assert wf.learning.release(TURN, upto=upto) == []  # nobody waits yet

    assert wf.learning.wait(ref, event=TURN, reason="confide") == "started"
    name = wait_name(ref, TURN)
    assert wf.wait_arn(wf.arn(name))["status"] == "SUCCEEDED"
    [execution] = wf.executions(ref)
    assert (execution["status"], execution["itemIds"]) == ("succeeded", ["i-01"])
    # Waiting again for the same event is the same execution, not a second one.
    assert wf.learning.wait(ref, event=TURN, reason="confide") == "exists"
    assert executions_started(wf) == [name]


def test_a_double_release_starts_it_once(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    wf.learning.wait(ref, event=TURN, reason="confide")

    [first] = wf.learning.release(TURN, upto=upto)
    [second] = wf.learning.release(TURN, upto=upto + 5)  # the first event's upto stands
    assert (first.started, second.started) == (True, False)
    assert wf.wait_arn(wf.arn(first.name))["status"] == "SUCCEEDED"
    [second_late] = wf.learning.release(TURN)
    assert second_late.started is False
    assert executions_started(wf) == [first.name]
    assert len(wf.model.calls) == 1
    assert [e["status"] for e in wf.executions(ref)] == ["succeeded"]


def test_a_wait_survives_a_restart(wf: Workflow, settings: Any, local_aws: Any) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    wf.learning.wait(ref, event=TURN, reason="confide")

    # A new process: fresh adapters and a fresh service over the same table.
    session, _local = local_aws
    fresh = aws_adapters(settings, session)
    restarted = LearningService(
        fresh.store,
        ExecutionRepository(fresh.store, fresh.cipher),
        fresh.clock,
        fresh.ids,
        fresh.orchestrator,
        wf.adapters.models,
    )
    assert [e.status for e in restarted.executions(ref)] == ["waiting"]
    [started] = restarted.release(TURN, upto=upto)
    assert started.started
    assert wf.wait_arn(wf.arn(started.name))["status"] == "SUCCEEDED"
    assert [e.status for e in restarted.executions(ref)] == ["succeeded"]
    assert "budget" in wf.pool.entries(ref)


def test_a_release_that_lost_the_workflow_is_finished_by_the_next(wf: Workflow) -> None:
    ref = wf.new_pool()
    upto = wf.turn(ref, BUDGET, start=False)
    wf.learning.wait(ref, event=TURN, reason="confide")
    wf.faults.add("sfn.StartExecution", "ThrottlingException")

    with pytest.raises(Unavailable):
        wf.learning.release(TURN, upto=upto)
    assert executions_started(wf) == []
    [waiting] = wf.executions(ref)
    # Nothing was written to release it: it waits for the next release.
    assert waiting["status"] == "waiting"

    [started] = wf.learning.release(TURN)
    assert started.started
    assert wf.wait_arn(wf.arn(started.name))["status"] == "SUCCEEDED"
    assert [e["status"] for e in wf.executions(ref)] == ["succeeded"]


# --- the race: the event happens while the wait is being recorded ---------------------------


def test_a_wait_and_its_event_at_the_same_moment_start_it_exactly_once() -> None:
    store, orchestrator = InMemoryStore(), RecordingOrchestrator()
    learning = LearningService(
        store,
        ExecutionRepository(store, FakeCipher()),
        FixedClock(),
        SequentialIds(),
        orchestrator,
        Catalog({}),
    )
    pools = [PoolRef("session", ORG, f"s-{n}") for n in range(60)]

    def race(pool: PoolRef) -> None:
        event = f"turn:{ORG}:{pool.pool_id}:t-1"
        gate = threading.Barrier(2)

        def wait() -> None:
            gate.wait()
            learning.wait(pool, event=event, reason="confide")

        def happen() -> None:
            gate.wait()
            learning.release(event, upto=7)

        threads = [threading.Thread(target=wait), threading.Thread(target=happen)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    for pool in pools:
        race(pool)
    # Whichever came first, every wait was started, once, reading through the event's item.
    assert sorted(orchestrator.started) == sorted(
        wait_name(p, f"turn:{ORG}:{p.pool_id}:t-1") for p in pools
    )
    assert {payload["upto"] for payload in orchestrator.started.values()} == {7}
    # Asked for, not begun yet (no step runs here): still `waiting` until LoadEvidence.
    for pool in pools:
        assert [e.status for e in learning.executions(pool)] == ["waiting"]
