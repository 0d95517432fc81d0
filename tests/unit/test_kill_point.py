"""`MEMORY_KILL_AT` (infra/local/crash.py): what a setting names, and that a task whose
boundary is not the kill point runs as before (the kill itself: tests/reliability)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.local.crash import parse, with_kill_point


def test_a_setting_names_a_boundary_and_how_often_it_is_reached_first() -> None:
    assert parse("ApplyLearning.done:2") == ("ApplyLearning.done", 2)
    assert parse("CallModel:1") == ("CallModel", 1)
    for wrong in ("ApplyLearning", "ApplyLearning:0", ":3", "CallModel:x", "CallModel:-1"):
        with pytest.raises(ValueError, match="MEMORY_KILL_AT"):
            parse(wrong)


def test_tasks_run_as_before_until_the_kill_point_is_reached() -> None:
    seen: list[Any] = []

    def task(event: dict[str, Any]) -> str:
        seen.append(event["context"]["state"])
        return "done"

    assert with_kill_point({"arn": task}, None) == {"arn": task}
    wrapped = with_kill_point({"arn": task}, "ApplyLearning:1")["arn"]
    # Other boundaries, and the kill point's n-th time not reached: nothing happens.
    for state in ("LoadEvidence", "CallModel"):
        assert wrapped({"context": {"state": state}}) == "done"
    assert seen == ["LoadEvidence", "CallModel"]
