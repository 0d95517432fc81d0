"""The observer applies each message once (seed 003, "The observer"; ADR 0062): two runs
of one thread that read from the same position, the second's messages overlapping the
first's, leave every message in the observation log once, whichever commits first. The
runs' steps are run by the test in the order it chooses (`HeldWorkflow`), through the real
LearningService and the observer's pool on moto; everything else goes through HTTP."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from agent_memory.service.learning_runs import Retryable
from tests.support.held_observer import Held, held
from tests.support.observer import OBSERVER, turn

__all__ = ["held"]  # the fixture this module uses


def _two_turns(held: Held) -> tuple[Any, str, list[Any]]:
    """A thread whose two saved turns each started an observer run, both still held."""
    held.workflow.started.clear()
    observation = {"messageTokens": 1000, "bufferOnIdle": True}
    world = held.world({"observationalMemory": {"model": OBSERVER, "observation": observation}})
    thread = world.thread()
    for n in (1, 2):
        assert world.save(thread, *turn(n)).status_code == 200
    return world, thread, held.observer_runs()


def _logged(world: Any, thread: str) -> tuple[Counter[str], str]:
    """How often each turn's words stand in the thread's observation log, and the log."""
    log = world.get(f"/v1/threads/{thread}/observations").json()["log"]
    return Counter(re.findall(r"\b(question\d|answer\d)\b", log)), log


def _turns(*numbers: int) -> Counter[str]:
    return Counter(f"{w}{n}" for n in numbers for w in ("question", "answer"))


@pytest.mark.parametrize("first", ["shorter", "longer"])
def test_two_observer_runs_over_overlapping_messages_log_each_once(held: Held, first: str) -> None:
    workflow = held.workflow
    world, thread, (shorter, longer) = _two_turns(held)
    # Both read from the same position: the shorter run's messages are in the longer one's.
    for run in (shorter, longer):
        assert workflow.step(run, "LoadEvidence")["status"] == "running"
    for run in (shorter, longer):
        assert workflow.step(run, "CallModel")["status"] == "answered"
    for run in (shorter, longer) if first == "shorter" else (longer, shorter):
        workflow.step(run, "ApplyLearning")
    seen, log = _logged(world, thread)
    assert seen == _turns(1, 2), log
    # Nothing is lost either: the next turn's run observes only what is new.
    assert world.save(thread, *turn(3)).status_code == 200
    [third] = [r for r in held.observer_runs() if r not in (shorter, longer)]
    workflow.run(third.name)
    seen, log = _logged(world, thread)
    assert seen == _turns(1, 2, 3), log


def test_an_answer_overlapping_part_of_another_runs_chunk_is_not_applied(held: Held) -> None:
    workflow = held.workflow
    world, thread, (first, second) = _two_turns(held)
    for step in ("LoadEvidence", "CallModel"):
        for run in (first, second):
            workflow.step(run, step)
    workflow.step(first, "ApplyLearning")  # turn 1
    assert world.save(thread, *turn(3)).status_code == 200
    [third] = [r for r in held.observer_runs() if r not in (first, second)]
    for step in ("LoadEvidence", "CallModel"):
        workflow.step(third, step)  # turns 2 and 3
    workflow.step(second, "ApplyLearning")  # turns 1 and 2, in place of the first's chunk
    # The third's answer holds turn 2, logged already with turn 1: it cannot be applied.
    with pytest.raises(Retryable):
        workflow.step(third, "ApplyLearning")
    # Turn 3 stays unread: the next run observes it with turn 4.
    assert world.save(thread, *turn(4)).status_code == 200
    [fourth] = [r for r in held.observer_runs() if r not in (first, second, third)]
    workflow.run(fourth.name)
    seen, log = _logged(world, thread)
    assert seen == _turns(1, 2, 3, 4), log
