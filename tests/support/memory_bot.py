"""The memory Bot's budget world: a clock that moves, a workflow that holds runs, the schedule's
budget tick."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.ports import Action, Put, Usage
from tests.conftest import Api
from tests.support.bots import (
    MEMORY_MODEL,
    Script,
    World,
    fact_from_person,
    scripted_services,
    settings_of,
    turn,
)
from tests.support.clock import MovableClock
from tests.support.held_workflow import HeldWorkflow
from tests.support.workflow import step_event

DAY_MS = 24 * 3600 * 1000


# One micro-USD per token in and out: a call of 10 input tokens costs 10.
PRICES = json.dumps({MEMORY_MODEL: [1_000_000, 1_000_000]})


def built(settings: Any, adapters: Any, script: Script, clock: MovableClock, workflow: Any) -> Any:
    priced = settings.model_copy(update={"model_prices": PRICES})
    return scripted_services(priced, adapters, script, workflow, clock=clock)


def learning_calls(script: Script) -> list[Any]:
    return [c for c in script.calls if c.task == "learning_changes"]


def budget_tick() -> Any:
    """The template's schedule, as `make run` runs it (infra/local/runner.py)."""
    from infra.local.runner import scheduled_ticks

    [(name, period_s, task)] = scheduled_ticks()
    assert (name, period_s) == ("BudgetTickFunction", 900.0)
    return task


class Run:
    """A held learning run of one confided, completed turn, its steps run by the test."""

    def __init__(self, services: Any, world: World, workflow: HeldWorkflow) -> None:
        chat = world.chat(world.ana)
        turn_id = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
        world.confide(world.ana, chat, turn_id, "x")  # 10
        world.complete(world.ana, chat, turn_id)
        [held] = workflow.started.values()
        self.name = held.name
        self.learning = services.learning
        self.world = world
        self.state: dict[str, Any] = held.state
        self.state["evidence"] = self.learning.load_evidence(
            step_event(self.name, self.state, "LoadEvidence")
        )

    def call(self, attempt: int) -> dict[str, Any]:
        event = step_event(self.name, self.state, "CallModel")
        event["context"]["attempt"] = attempt
        answered: dict[str, Any] = self.learning.call_model(event)
        return answered

    def apply(self, answered: dict[str, Any]) -> dict[str, Any]:
        self.state["model"] = answered
        applied: dict[str, Any] = self.learning.apply_learning(
            step_event(self.name, self.state, "ApplyLearning")
        )
        return applied

    def spent(self) -> int:
        return int(settings_of(self.world, self.world.ana).json()["spentMicros"])


@pytest.fixture
def held(
    settings: Any, adapters: Any, script: Script, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Run, list[Write]]]:
    """A run held before CallModel, and the faults its store's writes meet (each a function
    called before a write goes through; it may raise)."""
    from agent_memory.api.app import create_app

    workflow = HeldWorkflow()
    services = built(settings, adapters, script, MovableClock(), workflow)
    faults: list[Write] = []
    store = adapters.store
    real = store.write

    def write(actions: Sequence[Action]) -> None:
        for fault in list(faults):
            fault(actions)
        real(actions)

    monkeypatch.setattr(store, "write", write)
    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
        yield Run(services, World(Api(client), services, script), workflow), faults


def saving_answer(actions: Sequence[Action]) -> bool:
    """The write that saves a model answer on its own row."""
    return any(isinstance(a, Put) and a.record.get("status") == "answered" for a in actions)


Write = Callable[[Sequence[Action]], None]


@pytest.fixture(name="script")
def charged_script() -> Script:
    """The memory Bot's model, each call charged 10 micro-USD, learning a fact per person."""
    found = Script()
    found.answers["learning_changes"] = fact_from_person
    found.usage = Usage(input_tokens=10, output_tokens=0)
    return found
