"""One user's working memory, kept by the observer, keeps every thread's update (seed 003,
"Working memory": one record per user, shared by every conversation): observer runs of
several threads that read the same notes each add their fact, whichever commits first; a
run that loses the race decides again on the notes as they are. The runs' steps are run by
the test (`HeldWorkflow`) through the real LearningService and the observer on moto, its
model `local/rules` (it adds the user's statements about themselves to the notes)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agent_memory.service.learning_runs import Retryable
from tests.support.held_observer import Held, held
from tests.support.held_workflow import HeldRun
from tests.support.threads import World, assistant, user

__all__ = ["held"]  # the fixture this module uses

FACTS = [
    "I live in Oslo.",
    "I work as a baker.",
    "I love jazz music.",
    "My cats are Tom and Kit.",
    "I prefer green tea.",
    "I am learning Japanese.",
]
OPTIONS = {
    "workingMemory": {"enabled": True, "scope": "resource"},
    "observationalMemory": {
        "observation": {"bufferOnIdle": True, "manageWorkingMemory": True},
    },
}


def _threads_that_read_the_same_notes(held: Held) -> tuple[World, list[str]]:
    held.workflow.started.clear()
    world = held.world(OPTIONS)
    threads = [world.thread() for _ in FACTS]
    for thread, fact in zip(threads, FACTS, strict=True):
        assert world.save(thread, user(fact), assistant("Noted.")).status_code == 200
    runs = held.observer_runs()
    assert len(runs) == len(FACTS)
    # Every run reads the notes before any writes them.
    for step in ("LoadEvidence", "CallModel"):
        for run in runs:
            assert held.workflow.step(run, step)["status"] in {"running", "answered"}
    return world, threads


def _apply(held: Held, run: HeldRun) -> dict[str, Any]:
    """ApplyLearning as the state machine runs it: a Retryable step is tried again (its
    Retry allows 3 more attempts)."""
    for _attempt in range(3):
        try:
            return held.workflow.step(run, "ApplyLearning")
        except Retryable:
            continue
    return held.workflow.step(run, "ApplyLearning")


def test_observer_runs_applied_one_after_another_keep_every_fact(held: Held) -> None:
    world, threads = _threads_that_read_the_same_notes(held)
    for run in held.observer_runs():
        assert held.workflow.step(run, "ApplyLearning")["status"] == "succeeded"
    notes = world.get(f"/v1/threads/{threads[0]}/working-memory").json()["content"]
    assert [f for f in FACTS if f not in notes] == [], notes


def test_concurrent_observer_runs_keep_every_fact(held: Held) -> None:
    world, threads = _threads_that_read_the_same_notes(held)
    runs = held.observer_runs()
    with ThreadPoolExecutor(len(runs)) as pool:
        ended = list(pool.map(lambda r: _apply(held, r), runs))
    assert [e["status"] for e in ended] == ["succeeded"] * len(runs), ended
    notes = world.get(f"/v1/threads/{threads[0]}/working-memory").json()["content"]
    assert [f for f in FACTS if f not in notes] == [], notes
