"""A Bot whose learning runs are held until the test runs them, and whose memory Bot model
learns one fact from every person's item it is shown."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.domain.tasks.base import ModelRequest
from tests.support.bots import Script, scripted_services
from tests.support.clock import MovableClock
from tests.support.held_workflow import HeldWorkflow


def shown_items(request: ModelRequest) -> list[dict[str, Any]]:
    """The items a `learning_changes` request shows the model."""
    lines = [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]
    return [line for line in lines if "role" in line]


def fact_per_person_item(request: ModelRequest) -> str:
    """A fact for every person's item the request shows, each cited to its own item."""
    people = [i for i in shown_items(request) if i["role"] == "user"]
    facts = [
        {"op": "fact", "content": f"Noted: {p['content']}", "topics": [], "sources": [p["id"]]}
        for p in people
    ]
    return json.dumps({"changes": facts})


@pytest.fixture
def script() -> Script:
    found = Script()
    found.answers["learning_changes"] = fact_per_person_item
    return found


@pytest.fixture
def workflow() -> HeldWorkflow:
    return HeldWorkflow()


@pytest.fixture
def services(
    settings: Any, adapters: Any, script: Script, workflow: HeldWorkflow, clock: MovableClock
) -> Any:
    return scripted_services(settings, adapters, script, workflow, clock=clock)
