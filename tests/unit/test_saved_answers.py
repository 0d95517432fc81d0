"""A model call's answer is saved on a small row of its own, `CALL#<name>#<step>#<attempt>#reply`
(a plain Put of a small row; updating the call row, which holds the sealed request, would
bill its whole size)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.keys import call_sk, learn_pk
from agent_memory.persistence.model_calls import CALL_OPEN
from agent_memory.ports import Absent, Action, Delete, Put, Update
from agent_memory.service.learning_runs import ExecutionLost, step_run
from tests.support.learning import BUDGET, REF, Harness, h
from tests.support.learning_doubles import recorded_writes, remember_reply, written_key

__all__ = ["h"]  # the fixture this module uses

PK = learn_pk("session", "s-1")


def _loaded(h: Harness) -> tuple[str, dict[str, Any]]:
    name, payload = h.turn(BUDGET)
    state = dict(payload)
    state["evidence"] = h.service.load_evidence(h.event(name, state, "LoadEvidence"))
    return name, state


_key = written_key


def _writes(h: Harness, monkeypatch: pytest.MonkeyPatch) -> list[list[Action]]:
    return recorded_writes(h.store, monkeypatch)


def test_the_answer_is_one_small_put_beside_its_call_row(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, state = _loaded(h)
    writes = _writes(h, monkeypatch)
    state["model"] = h.service.call_model(h.event(name, state, "CallModel"))

    call = call_sk(name, "CallModel", 0)
    assert state["model"]["call"] == f"{call}#reply"
    [saved] = [w for w in writes if any(_key(a) == f"{call}#reply" for a in w)]
    [put] = saved
    assert isinstance(put, Put)
    assert isinstance(put.condition, Absent)
    assert set(put.record) == {
        "pk",
        "sk",
        "type",
        "status",
        "endedAt",
        "reply",
        "usage",
        "latencyMs",
        "ttl",
    }
    # The call row is never rewritten: it keeps its request and `started`.
    assert not [a for w in writes for a in w if isinstance(a, Update) and _key(a) == call]
    row = h.store.get(PK, call)
    assert row is not None
    assert row["status"] == "started"
    assert "request" in row
    assert "reply" not in row
    applied = h.service.apply_learning(h.event(name, state, "ApplyLearning"))
    assert applied == {"status": "succeeded", "applied": 1, "rejected": 0}


def test_a_second_save_of_one_attempts_answer_is_refused(h: Harness) -> None:
    name, state = _loaded(h)
    run = step_run(h.event(name, state, "CallModel"))[0]
    runs = ExecutionRepository(h.store, h.cipher)
    sk = runs.call_started(run, "CallModel", 0, "m", "{}", 1)
    runs.call_answered(run, sk, "first", {}, 1.0, 2)
    with pytest.raises(WriteConflict) as refused:
        runs.call_answered(run, sk, "second", {}, 1.0, 3)
    assert refused.value.condition == CALL_OPEN
    assert runs.with_reply(run, f"{sk}#reply")[1] == "first"


def test_a_save_whose_commit_was_lost_is_found_and_the_model_called_once(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, state = _loaded(h)
    real = h.store.write
    lost: list[Sequence[Action]] = []

    def committed_then_lost(actions: Sequence[Action]) -> None:
        real(actions)
        if not lost and any(_key(a).endswith("#reply") for a in actions):
            lost.append(actions)
            raise Unavailable("the connection was reset")

    monkeypatch.setattr(h.store, "write", committed_then_lost)
    state["model"] = h.service.call_model(h.event(name, state, "CallModel"))

    assert lost
    assert state["model"]["reused"] is False
    assert len(h.model.calls) == 1
    applied = h.service.apply_learning(h.event(name, state, "ApplyLearning"))
    assert applied["applied"] == 1


def test_an_answer_saved_after_its_run_was_erased_is_never_used_and_deleted(
    h: Harness,
) -> None:
    """The pool is erased while the model works: the answer still lands (a Put is not
    conditional on the call row), but nothing applies it, and ApplyLearning, finding the run
    gone, deletes what its call left."""
    name, state = _loaded(h)

    def erased_meanwhile(request: Any) -> str:
        h.store.write([Delete(PK, str(r["sk"])) for r in h.store.query(PK).records])
        return remember_reply("budget", "The budget is 1500 EUR.", "i-01")

    h.model.script = erased_meanwhile
    state["model"] = h.service.call_model(h.event(name, state, "CallModel"))
    assert [r["sk"] for r in h.store.query(PK).records] == [state["model"]["call"]]

    with pytest.raises(ExecutionLost, match="row is missing"):
        h.service.apply_learning(h.event(name, state, "ApplyLearning"))

    assert h.store.query(PK).records == []
    assert h.pool.head(REF)["position"] == 0
    assert h.pool.changes(REF) == []
