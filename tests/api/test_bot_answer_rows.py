"""The memory Bot's learning answer on a row of its own, through the real service
and table: saved in one plain Put beside its call, and an answer that lands after its
chat was erased is never applied and does not outlive the run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agent_memory.persistence.keys import learn_pk
from agent_memory.ports import Action
from agent_memory.service.learning_runs import ExecutionLost
from tests.support.bots import Script
from tests.support.memory_bot import Run, Write, charged_script, held, saving_answer

__all__ = ["charged_script", "held"]  # the fixtures this module uses


def _run_rows(adapters: Any, run: Run) -> list[dict[str, Any]]:
    pool = run.state["pool"]
    rows = adapters.store.query(learn_pk(pool["kind"], pool["poolId"])).records
    return [r for r in rows if run.name in str(r["sk"])]


def test_the_answer_row_sits_beside_its_call_and_the_call_stays_as_saved(
    held: tuple[Run, list[Write]], adapters: Any
) -> None:
    run, _faults = held
    answered = run.call(0)

    rows = {r["type"]: r for r in _run_rows(adapters, run)}
    call, reply = rows["model-call"], rows["model-reply"]
    assert answered["call"] == reply["sk"] == f"{call['sk']}#reply"
    assert (call["status"], reply["status"]) == ("started", "answered")
    assert "reply" not in call
    assert reply["usage"] == {"input": 10, "output": 0}
    assert run.apply(answered)["applied"] == 1


def test_an_answer_landing_after_its_chat_was_erased_is_never_applied_nor_kept(
    held: tuple[Run, list[Write]], script: Script, adapters: Any
) -> None:
    run, faults = held
    api = run.world.api
    erase = f"/v1/organizations/{run.world.org}/users/{run.world.ana.id}/erase"

    def erase_first(actions: Sequence[Action]) -> None:
        if saving_answer(actions):
            faults.remove(erase_first)
            assert api.client.post(erase, json={}, headers=api.admin).status_code == 200

    faults.append(erase_first)
    answered = run.call(0)  # the Put is not conditional on the (erased) call row
    left = {r["type"] for r in _run_rows(adapters, run)}
    # The claim was on the call row: erasure took it with the call.
    assert left == {"model-reply"}

    with pytest.raises(ExecutionLost):
        run.apply(answered)

    assert _run_rows(adapters, run) == []
