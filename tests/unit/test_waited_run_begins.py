"""A waited run (a confide's) begins on its evidence row alone: its `waiting`
execution row is read at LoadEvidence, not written, until the run ends. It is listed as
running while the model works, ends succeeded or failed with the items it read, a failure
recorded meanwhile stops its apply, and a run that ended learns nothing when a step (or
the whole run) is played again.

The LearningService, its repository and its steps are the real ones, over the in-memory
table (tests/unit/test_recorded_waits.py's harness: one session pool, a confide's wait).
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.runs import RunView
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.persistence.executions import RUN_ENDS, ExecutionRepository
from agent_memory.persistence.runs import Run
from agent_memory.ports import ModelFailure, ModelReply, Put, Update
from agent_memory.service.learning_runs import step_run
from agent_memory.service.learning_start import wait_name
from tests.support.learning import EVENT, REF, WaitHarness, row_put
from tests.support.learning_doubles import MODEL
from tests.support.waits import h

__all__ = ["h"]  # the fixture this module uses


def _released(h: WaitHarness) -> tuple[str, dict[str, Any]]:
    assert h.wait() == "waiting"
    assert [e.started for e in h.release()] == [True]
    [(name, payload)] = h.orchestrator.started.items()
    return name, dict(payload)


def _exec_writes(h: WaitHarness) -> list[Any]:
    """Every write of the run's execution row since the store's calls were cleared."""
    found = []
    for op, actions in h.store.calls:
        if op != "write":
            continue
        for action in actions:
            sk = action.record["sk"] if isinstance(action, Put) else getattr(action, "sk", "")
            if str(sk).startswith("EXEC#"):
                found.append(action)
    return found


def state_run(h: WaitHarness, name: str, payload: dict[str, Any]) -> Run:
    """The run of execution `name` as its steps name it."""
    return step_run(h.event(name, payload, "LoadEvidence"))[0]


def test_a_waited_run_shows_running_while_the_model_works_and_succeeded_after(
    h: WaitHarness,
) -> None:
    name, payload = _released(h)
    seen: list[RunView] = []
    real = h.model.propose

    def slow(request: ModelRequest) -> ModelReply:
        [listed] = h.service.executions(REF)  # what a user listing the runs sees meanwhile
        seen.append(listed)
        return real(request)

    h.model.propose = slow  # type: ignore[method-assign]
    h.store.calls.clear()
    state = h.drive(name, payload)

    assert state["result"]["status"] == "succeeded"
    [during] = seen
    assert (during.status, during.item_ids, during.model) == ("running", ["i-01"], MODEL)
    assert during.ended_at is None
    [after] = h.service.executions(REF)
    assert (after.status, after.item_ids, after.model) == ("succeeded", ["i-01"], MODEL)
    assert after.applied == [{"key": "budget", "op": "remember"}]
    # The row was written once, by the end's transaction (from `waiting`), which also wrote
    # what LoadEvidence kept on the evidence row: the row tells it once that row expires.
    [end] = _exec_writes(h)
    assert isinstance(end, Update)
    assert end.condition.value == "waiting"
    row = ExecutionRepository(h.store, h.cipher).get(state_run(h, name, payload))
    assert row is not None
    assert (row.status, row.item_ids, row.model, row.position) == ("succeeded", ["i-01"], MODEL, 0)
    assert row.record["upto"] == h.upto


def test_a_failed_model_call_is_recorded_and_the_read_position_stays(h: WaitHarness) -> None:
    name, payload = _released(h)

    def failing(_request: ModelRequest) -> ModelReply:
        raise ModelFailure("bad_request", "the model refused", retryable=False)

    h.model.propose = failing  # type: ignore[method-assign]
    state = h.drive(name, payload)

    assert state["failure"]["recorded"] is True
    [failed] = h.service.executions(REF)
    assert failed.status == "failed"
    assert failed.error.message.startswith("CallModel: ")
    assert failed.item_ids == ["i-01"]  # the items it read, from its evidence row
    assert h.pool.head(REF)["position"] == 0  # nothing learned: the next run reads them again


def test_a_failure_recorded_while_the_run_applies_stops_its_apply(h: WaitHarness) -> None:
    name, payload = _released(h)
    state = dict(payload)
    state["evidence"] = h.service.load_evidence(h.event(name, state, "LoadEvidence"))
    state["model"] = h.service.call_model(h.event(name, state, "CallModel"))
    assert state["model"]["status"] == "answered"
    failing = dict(state, error={"Error": "States.Timeout", "Cause": "{}"})

    def record_failure() -> None:
        # Another copy of the execution timed out and recorded it, just before this copy's
        # apply commits (its row still `waiting`: the end's condition must see the failure).
        assert h.service.record_failure(h.event(name, failing, "RecordFailure"))["recorded"]

    h.store.at(_ends_the_run, record_failure)
    assert h.service.apply_learning(h.event(name, state, "ApplyLearning")) == {"status": "failed"}
    [failed] = h.service.executions(REF)
    assert (failed.status, failed.applied, failed.item_ids) == ("failed", [], ["i-01"])
    assert h.pool.head(REF)["position"] == 0


def _ends_the_run(op: str, what: Any) -> bool:
    return op == "write" and any(
        getattr(getattr(action, "condition", None), "name", None) == RUN_ENDS for action in what
    )


def test_a_repeated_loadevidence_after_the_run_ended_learns_nothing(h: WaitHarness) -> None:
    name, payload = _released(h)
    h.assert_learned_once()
    h.pool.add_turn(REF, "something new to learn")  # a repeat would find new evidence
    h.store.calls.clear()

    again = h.service.load_evidence(h.event(name, payload, "LoadEvidence"))
    assert again["status"] == "succeeded"
    assert [op for op, _what in h.store.calls] == ["get"]  # its row, read: nothing written

    h.drive(name, payload)  # the whole run played again
    assert len(h.model.calls) == 1
    assert [e.status for e in h.service.executions(REF)] == ["succeeded"]
    assert h.pool.head(REF)["position"] == h.upto


def test_a_run_started_again_once_its_evidence_expired_learns_nothing(h: WaitHarness) -> None:
    name, payload = _released(h)
    h.assert_learned_once()
    run = state_run(h, name, payload)
    del h.store.rows[(run.pk, run.evidence_sk)]  # past its ttl
    h.pool.add_turn(REF, "something new to learn")
    h.store.calls.clear()

    h.drive(name, payload)
    assert _exec_writes(h) == []
    assert not [w for op, w in h.store.calls if op == "write"]
    assert len(h.model.calls) == 1
    [done] = h.service.executions(REF)
    assert (done.status, done.item_ids) == ("succeeded", ["i-01"])


def test_a_retried_loadevidence_keeps_the_first_attempts_evidence_and_writes_no_row(
    h: WaitHarness,
) -> None:
    name, payload = _released(h)
    first = h.service.load_evidence(h.event(name, payload, "LoadEvidence"))
    h.pool.add_turn(REF, "said after the first attempt")
    h.store.calls.clear()
    retried = h.service.load_evidence(h.event(name, payload, "LoadEvidence", attempt=1))
    assert retried == first
    assert _exec_writes(h) == []
    h.assert_learned_once()


def test_a_wait_name_without_a_row_is_begun_by_loadevidence(h: WaitHarness) -> None:
    # A release found the link of a wait cut short before its row: LoadEvidence puts it.
    h.store.at(row_put, _crash)
    with pytest.raises(Unavailable):
        h.wait()
    [started] = h.release()
    assert started.started
    assert started.name == wait_name(REF, EVENT)
    payload = dict(h.orchestrator.started[started.name])
    h.driven.add(started.name)
    state = dict(
        payload, evidence=h.service.load_evidence(h.event(started.name, payload, "LoadEvidence"))
    )
    [running] = h.service.executions(REF)
    assert (running.status, running.item_ids) == ("running", ["i-01"])
    assert h.wait() == "exists"  # the retried wait's own row is refused: the run's is there
    state["model"] = h.service.call_model(h.event(started.name, state, "CallModel"))
    h.service.apply_learning(h.event(started.name, state, "ApplyLearning"))
    h.assert_learned_once()


def _crash() -> None:
    raise Unavailable("the function stopped here")
