"""Concurrent learning does not apply the same evidence twice (seed 002, "How the Bot
learns"): two runs of one chat that read from the same position, the second's evidence
overlapping the first's, learn each item once, whichever commits first. The runs' steps are
run by the test in the order it chooses (`HeldWorkflow`), through the real LearningService,
the bot pool and DynamoDB on moto; everything else goes through HTTP."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agent_memory.domain.learning_notes import OPEN_TURN_AHEAD
from tests.support.bots import World, turn, world
from tests.support.clock import clock
from tests.support.held_bot import script, services, workflow
from tests.support.held_workflow import HeldWorkflow

__all__ = ["clock", "script", "services", "workflow", "world"]  # the fixtures this module uses


def _sources(world: World) -> Counter[str]:
    return Counter(s["item"] for e in world.memory(world.ana) for s in e["sources"])


def _confided_turn(world: World, chat: dict[str, Any], text: str) -> None:
    turn_id = turn(world.api, world.ana, chat["id"], text)["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "I am unsure.").status_code == 200
    world.complete(world.ana, chat, turn_id)


@pytest.mark.parametrize("first", ["shorter", "longer"])
def test_two_runs_over_overlapping_evidence_learn_each_item_once(
    world: World, workflow: HeldWorkflow, first: str
) -> None:
    chat = world.chat(world.ana)
    _confided_turn(world, chat, "My train leaves at 8:10.")
    _confided_turn(world, chat, "My bike is red.")
    shorter, longer = workflow.started.values()
    # Both read from the same position: the shorter run's item is in the longer one's too.
    for run in (shorter, longer):
        assert workflow.step(run, "LoadEvidence")["status"] == "running"
    for run in (shorter, longer):
        assert workflow.step(run, "CallModel")["status"] == "answered"
    order = (shorter, longer) if first == "shorter" else (longer, shorter)
    for run in order:
        workflow.step(run, "ApplyLearning")
    counted = _sources(world)
    assert sorted(counted.values()) == [1, 1], counted
    statuses = Counter(e["status"] for e in world.executions(world.ana))
    assert statuses["succeeded"] >= 1
    # Nothing is lost: a later run learns what no run applied, once.
    _confided_turn(world, chat, "My desk is by the window.")
    [third] = [r for r in workflow.started.values() if r not in (shorter, longer)]
    for step in ("LoadEvidence", "CallModel", "ApplyLearning"):
        workflow.step(third, step)
    assert sorted(_sources(world).values()) == [1, 1, 1], _sources(world)


def test_an_answer_is_never_applied_to_items_its_model_did_not_see(
    world: World, workflow: HeldWorkflow
) -> None:
    chat = world.chat(world.ana)
    # The first turn stays open a while: its item is passed over by the runs after it.
    first = turn(world.api, world.ana, chat["id"], "My train leaves at 8:10.")["turn"]["id"]
    assert world.confide(world.ana, chat, first, "I am unsure.").status_code == 200
    _confided_turn(world, chat, "My bike is red.")
    [second] = workflow.started.values()
    for step in ("LoadEvidence", "CallModel"):
        workflow.step(second, step)  # its model saw the bike, not the train
    _confided_turn(world, chat, "My desk is by the window.")
    [third] = [r for r in workflow.started.values() if r is not second]
    for step in ("LoadEvidence", "CallModel", "ApplyLearning"):
        workflow.step(third, step)  # learns the bike and the desk first
    world.complete(world.ana, chat, first)  # the train is readable now
    workflow.step(second, "ApplyLearning")
    [train] = [r for r in workflow.started.values() if r not in (second, third)]
    for step in ("LoadEvidence", "CallModel", "ApplyLearning"):
        workflow.step(train, step)
    # The train's item was learned by a run whose model saw it, once; the others once too.
    counted = _sources(world)
    assert sorted(counted.values()) == [1, 1, 1], counted
    said = {i["id"] for i in world.get(world.ana, f"/v1/chats/{chat['id']}/items").json()["items"]}
    assert set(counted) == said


def test_a_run_whose_items_a_later_run_read_says_what_it_waits_for(
    world: World, workflow: HeldWorkflow
) -> None:
    chat = world.chat(world.ana)
    turn(world.api, world.ana, chat["id"], "My train leaves at 8:10.")  # stays open
    _confided_turn(world, chat, "My bike is red.")
    _confided_turn(world, chat, "My desk is by the window.")
    bike, desk = workflow.started.values()
    for step in ("LoadEvidence", "CallModel", "ApplyLearning"):
        workflow.step(desk, step)  # reads the bike and the desk, holds the open train
    workflow.step(bike, "LoadEvidence")
    [run] = [r for r in world.executions(world.ana) if r["id"] == bike.name]
    assert (run["status"], run["note"]) == ("skipped", OPEN_TURN_AHEAD)
    assert sorted(_sources(world).values()) == [1, 1]
