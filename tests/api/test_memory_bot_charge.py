"""The memory Bot's learning call is charged in a plain write of its own, right after the
model answered and before the answer is saved: once per real call, never again for
a saved answer that is reused, never twice when saving the answer is retried in the step,
and once more for the second real call a step retried after a crash makes. Its apply tells
`memory.changed` and `execution.ended` in one event row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.persistence.events import partition
from agent_memory.ports import Action, Update
from tests.support.bots import Script, fact_from_person
from tests.support.memory_bot import (
    Run,
    Write,
    charged_script,
    held,
    learning_calls,
    saving_answer,
)

__all__ = ["charged_script", "held"]  # the fixtures this module uses


def test_a_failed_save_after_the_charge_is_retried_in_the_step_and_not_charged_twice(
    held: tuple[Run, list[Write]], script: Script
) -> None:
    run, faults = held
    failures = []

    def outage(actions: Sequence[Action]) -> None:
        if saving_answer(actions) and len(failures) < 2:
            failures.append(actions)
            raise Unavailable("the store is throttling; retry shortly")

    faults.append(outage)
    answered = run.call(0)
    assert len(failures) == 2  # the save was tried three times in the step
    assert answered["reused"] is False
    assert len(learning_calls(script)) == 1
    assert run.spent() == 20  # the confide's 10, the one learning call's 10
    assert run.apply(answered)["applied"] == 1


def test_a_save_whose_answer_was_lost_is_found_saved_and_not_charged_twice(
    held: tuple[Run, list[Write]], script: Script, adapters: Any
) -> None:
    run, faults = held
    lost = []

    def committed_then_lost(actions: Sequence[Action]) -> None:
        if saving_answer(actions) and not lost:
            lost.append(actions)
            faults.remove(committed_then_lost)
            adapters.store.write(actions)  # it committed; its answer never came back
            raise Unavailable("the connection was reset")

    faults.append(committed_then_lost)
    answered = run.call(0)
    assert lost
    assert len(learning_calls(script)) == 1
    assert run.spent() == 20
    assert run.apply(answered)["applied"] == 1


def test_a_crash_between_the_charge_and_the_save_charges_the_second_real_call_once(
    held: tuple[Run, list[Write]], script: Script
) -> None:
    run, faults = held

    def crash(actions: Sequence[Action]) -> None:
        if saving_answer(actions):
            faults.remove(crash)
            raise RuntimeError("the step's Lambda was stopped")

    faults.append(crash)
    with pytest.raises(RuntimeError):
        run.call(0)
    # The first real call was paid and is charged, though its answer was never saved.
    assert run.spent() == 20
    # The step's retry calls the model again: a second real call, charged once more.
    again = run.call(1)
    assert again["reused"] is False
    assert len(learning_calls(script)) == 2
    assert run.spent() == 30
    # A later retry (its answer lost on the way back) reuses the saved answer: free.
    reused = run.call(2)
    assert (reused["reused"], reused["call"]) == (True, again["call"])
    assert len(learning_calls(script)) == 2
    assert run.spent() == 30
    assert run.apply(reused)["applied"] == 1
    assert [e["status"] for e in run.world.executions(run.world.ana)] == ["succeeded"]


def test_an_invalid_answer_is_charged_once_and_its_retry_charged_again(
    held: tuple[Run, list[Write]], script: Script
) -> None:
    run, _faults = held
    script.answers["learning_changes"] = lambda request: "not json"
    with pytest.raises(InvalidModelOutput):
        run.call(0)
    assert run.spent() == 20  # paid, though unusable
    script.answers["learning_changes"] = fact_from_person
    answered = run.call(1)
    assert run.spent() == 30
    assert run.apply(answered)["applied"] == 1


def test_the_bot_apply_tells_both_events_in_one_row(
    held: tuple[Run, list[Write]], adapters: Any
) -> None:
    run, faults = held
    org = run.world.org
    answered = run.call(0)
    written: list[Sequence[Action]] = []
    faults.append(written.append)
    assert run.apply(answered)["applied"] == 1
    [commit] = [w for w in written if any(isinstance(a, Update) for a in w) and len(w) > 1]
    rows = [a for a in commit if getattr(a, "record", {}).get("type") == "event"]
    assert len(rows) == 1
    [row] = [
        r for r in adapters.store.query(partition(org)).records if r["sk"] == rows[0].record["sk"]
    ]
    assert row["eventType"] == "memory.changed"
    assert [m["eventType"] for m in row["more"]] == ["execution.ended"]
