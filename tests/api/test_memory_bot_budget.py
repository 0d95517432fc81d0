"""What the memory Bot's learning costs and when a spent budget's learning starts again
(seed 002, "The memory Bot"; API.md `GET .../memory/bot` `spentMicros`):

- the learning run's `learning_changes` call is charged to the Bot's period with its
  confirmed usage, priced by MODEL_PRICES (no usage: unknown, nothing added), once, even when
  a retried CallModel reuses the saved answer;
- a run skipped while the budget is spent is woken by the budget tick (template.yaml's
  BudgetTickFunction schedule, run in process by `make run` as here) once the next period
  begins, and not before.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.bootstrap import step_services
from agent_memory.ports import Usage
from tests.conftest import Api
from tests.support.bots import (
    MEMORY_MODEL,
    Script,
    World,
    fact_from_person,
    make_chat,
    patch_settings,
    settings_of,
    turn,
    world,
)
from tests.support.clock import MovableClock, clock
from tests.support.held_workflow import HeldWorkflow
from tests.support.memory_bot import (
    DAY_MS,
    Run,
    budget_tick,
    built,
    learning_calls,
)
from tests.support.workflow import InlineWorkflow

__all__ = ["clock", "world"]  # the fixtures this module uses


@pytest.fixture
def script() -> Script:
    found = Script()
    found.answers["learning_changes"] = fact_from_person
    found.usage = Usage(input_tokens=10, output_tokens=0)
    return found


@pytest.fixture
def services(settings: Any, adapters: Any, script: Script, clock: MovableClock) -> Any:
    found = built(settings, adapters, script, clock, InlineWorkflow())
    step_services.use(found)  # the budget tick's handler runs on these services
    yield found
    step_services.reset()


def test_a_spent_budget_wakes_its_learning_when_the_next_period_starts(
    world: World, script: Script, clock: MovableClock
) -> None:
    body = {"expected": 0, "budget": {"period": "day", "limitMicros": 10}}
    assert patch_settings(world, world.ana, body).status_code == 200
    chat = world.chat(world.ana)
    first = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    assert world.confide(world.ana, chat, first, "x").json()["calm"] is False  # spends it all
    world.complete(world.ana, chat, first)
    [skipped] = world.executions(world.ana)
    assert skipped["status"] == "skipped"
    assert "budget" in skipped["note"]
    assert learning_calls(script) == []
    tick = budget_tick()
    # The same day: the tick wakes nothing.
    assert tick({})["started"] == 0
    assert learning_calls(script) == []
    assert [e["status"] for e in world.executions(world.ana)] == ["skipped"]
    # The next day: the tick starts the deferred learning, which reads the evidence.
    clock.offset_ms += DAY_MS
    assert settings_of(world, world.ana).json()["spentMicros"] == 0
    assert tick({})["started"] == 1
    [learned] = learning_calls(script)
    assert "I take the 8:10 train." in learned.user
    woken = world.executions(world.ana)[0]
    assert (woken["status"], woken["reason"], woken["chatId"]) == (
        "succeeded",
        "budget",
        chat["id"],
    )
    assert [entry["content"] for entry in world.memory(world.ana)] == ["Ana takes the 8:10 train."]
    # The learning call is charged to the new day.
    assert settings_of(world, world.ana).json()["spentMicros"] == 10
    # Later ticks start it no more.
    assert tick({})["started"] == 0
    assert len(learning_calls(script)) == 1


def test_learning_is_charged_and_a_shared_bot_pays_for_every_organization(
    world: World, script: Script
) -> None:
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    world.confide(world.ana, chat, turn_id, "x")  # 10
    world.complete(world.ana, chat, turn_id)  # the learning call: 10 more
    assert world.executions(world.ana)[0]["status"] == "succeeded"
    assert settings_of(world, world.ana).json()["spentMicros"] == 20
    # A linked organization's chat uses its own botMemoryModel; its cost is the Bot's.
    linked = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/links",
        json={"organizationId": world.other, "grants": {world.olga.id: "read"}},
        headers=world.ana.headers,
    )
    assert linked.status_code == 201, linked.text
    answer = world.api.client.patch(
        f"/v1/organizations/{world.other}/settings",
        json={"botMemoryModel": MEMORY_MODEL},
        headers=world.api.admin,
    )
    assert answer.status_code == 200, answer.text
    theirs = make_chat(world.api, world.olga, world.bot["id"])
    turn_id = turn(world.api, world.olga, theirs["id"], "I cycle to work.")["turn"]["id"]
    script.usage = Usage(input_tokens=3, output_tokens=4)  # 7 per call
    world.confide(world.olga, theirs, turn_id, "y")
    world.complete(world.olga, theirs, turn_id)
    assert world.executions(world.olga)[0]["status"] == "succeeded"
    assert settings_of(world, world.ana).json()["spentMicros"] == 34
    # A provider that confirms no usage: counted as unknown, nothing added.
    script.usage = None
    turn_id = turn(world.api, world.ana, chat["id"], "And I cycle home.")["turn"]["id"]
    world.confide(world.ana, chat, turn_id, "z")
    world.complete(world.ana, chat, turn_id)
    assert world.executions(world.ana)[0]["status"] == "succeeded"
    assert settings_of(world, world.ana).json()["spentMicros"] == 34


def test_a_reused_saved_call_is_not_charged_again(
    settings: Any, adapters: Any, script: Script, clock: MovableClock
) -> None:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    workflow = HeldWorkflow()
    services = built(settings, adapters, script, clock, workflow)
    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
        world = World(Api(client), services, script)
        run = Run(services, world, workflow)
        first = run.call(0)
        assert run.spent() == 20
        # The step is retried (its answer was lost on the way back): the saved call is
        # reused, neither asked nor charged again.
        again = run.call(1)
        assert (again["reused"], again["call"]) == (True, first["call"])
        assert len(learning_calls(script)) == 1
        assert run.spent() == 20
        assert run.apply(again)["applied"] == 1
        assert [e["status"] for e in world.executions(world.ana)] == ["succeeded"]
