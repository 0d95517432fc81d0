"""The observer applies each message once (seed 003, "The observer"; ADR 0062): two runs
of one thread that read from the same position, the second's messages overlapping the
first's, leave every message in the observation log once, whichever commits first. The
runs' steps are run by the test in the order it chooses (`HeldWorkflow`), through the real
LearningService and the observer's pool on moto; everything else goes through HTTP."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.conftest import Api
from tests.support.held_workflow import HeldWorkflow
from tests.support.observer import OBSERVER, Script, turn
from tests.support.threads import World, agent_of


@pytest.fixture(scope="module")
def held() -> Iterator[tuple[Api, HeldWorkflow, Script]]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters
    from agent_memory.persistence.limits import ProcessCounters
    from tests.support.aws import embedded_settings
    from tests.support.in_memory import FixedClock
    from tests.support.learning_doubles import Catalog, ScriptedModel
    from tests.support.workflow import wired_services

    with embedded_settings() as (session, _local, settings):
        script = Script()
        workflow = HeldWorkflow()
        adapters = replace(
            aws_adapters(settings, session),
            counters=ProcessCounters(),
            orchestrator=workflow,
            models=Catalog({OBSERVER: ScriptedModel(name=OBSERVER, script=script)}),
            clock=FixedClock(int(time.time() * 1000)),
        )
        services = wired_services(settings, adapters, workflow=workflow)
        with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
            yield Api(client), workflow, script


def _world(api: Api, observation: dict[str, Any]) -> World:
    org = api.org()
    owner, member = api.user(org), api.user(org)
    world = World(api, owner, member, agent_of(api, owner, [member.id]))
    world.activate({"observationalMemory": {"model": OBSERVER, "observation": observation}})
    return world


@pytest.mark.parametrize("first", ["shorter", "longer"])
def test_two_observer_runs_over_overlapping_messages_log_each_once(
    held: tuple[Api, HeldWorkflow, Script], first: str
) -> None:
    api, workflow, _script = held
    workflow.started.clear()
    world = _world(api, {"messageTokens": 1000, "bufferOnIdle": True})
    thread = world.thread()
    for n in (1, 2):
        assert world.save(thread, *turn(n)).status_code == 200
    shorter, longer = [r for r in workflow.started.values() if "thread-observe" in r.name]
    # Both read from the same position: the shorter run's messages are in the longer one's.
    for run in (shorter, longer):
        assert workflow.step(run, "LoadEvidence")["status"] == "running"
    for run in (shorter, longer):
        assert workflow.step(run, "CallModel")["status"] == "answered"
    for run in (shorter, longer) if first == "shorter" else (longer, shorter):
        workflow.step(run, "ApplyLearning")
    log = world.get(f"/v1/threads/{thread}/observations").json()["log"]
    seen = Counter(re.findall(r"\b(question\d|answer\d)\b", log))
    assert seen == Counter(["question1", "answer1", "question2", "answer2"]), log
    # Nothing is lost either: the next turn's run observes only what is new.
    assert world.save(thread, *turn(3)).status_code == 200
    [third] = [
        r
        for r in workflow.started.values()
        if "thread-observe" in r.name and r not in (shorter, longer)
    ]
    workflow.run(third.name)
    log = world.get(f"/v1/threads/{thread}/observations").json()["log"]
    assert Counter(re.findall(r"\b(question\d|answer\d)\b", log)) == Counter(
        ["question1", "answer1", "question2", "answer2", "question3", "answer3"]
    ), log
