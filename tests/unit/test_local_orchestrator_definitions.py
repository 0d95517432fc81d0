"""The local workflow runner refuses at its start a definition it cannot run as Step
Functions does, and a Task resource that no callable runs."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.asl import DefinitionError
from agent_memory.adapters.local_orchestrator import LocalOrchestrator
from tests.support.in_memory import InMemoryStore

ROOT = Path(__file__).resolve().parents[2]
LEARNING = json.loads((ROOT / "infra/statemachines/learning.asl.json").read_text())
STEPS = ("LoadEvidence", "CallModel", "ApplyLearning", "RecordFailure")


def _tasks() -> dict[str, Callable[[dict[str, Any]], Any]]:
    return {f"${{{step}FunctionArn}}": lambda event: None for step in STEPS}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["States"]["LoadEvidence"].update(Type="Parallel"), "'Parallel' states"),
        (
            lambda d: d["States"]["NeedsModel"]["Choices"][0].update(BooleanEquals=True),
            "BooleanEquals",
        ),
        (lambda d: d["States"]["CallModel"].update(InputPath="$.x"), "InputPath"),
        (lambda d: d.update(QueryLanguage="JSONata"), "JSONPath"),
        (lambda d: d["States"]["CallModel"].update(Next="Nowhere"), "Nowhere"),
        (lambda d: d["States"]["Done"].update(Type="Wait"), "'Wait' states"),
    ],
)
def test_a_definition_it_cannot_run_is_refused_at_start(
    change: Callable[[dict[str, Any]], None], message: str
) -> None:
    definition = copy.deepcopy(LEARNING)
    change(definition)
    with pytest.raises(DefinitionError, match=message):
        LocalOrchestrator(InMemoryStore(), definition, _tasks())


def test_every_task_resource_needs_a_task() -> None:
    tasks = _tasks()
    del tasks["${RecordFailureFunctionArn}"]
    with pytest.raises(DefinitionError, match="RecordFailureFunctionArn"):
        LocalOrchestrator(InMemoryStore(), LEARNING, tasks)
