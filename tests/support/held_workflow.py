"""An Orchestrator that only keeps what it was asked to start, so a test runs each
execution's steps itself, in the order it chooses (two runs interleaved step by step)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.ports import Execution

STEPS = (
    ("LoadEvidence", "load_evidence", "evidence"),
    ("CallModel", "call_model", "model"),
    ("ApplyLearning", "apply_learning", "result"),
)


@dataclass
class HeldRun:
    """One held execution: its name and the state its steps have built so far."""

    name: str
    state: dict[str, Any]

    def event(self, step: str) -> dict[str, Any]:
        context = {"executionName": self.name, "executionId": self.name, "state": step}
        return {"input": json.loads(json.dumps(self.state)), "context": context | {"attempt": 0}}


@dataclass
class HeldWorkflow:
    """`ports.Orchestrator` that starts nothing: `step` runs one step of a held run with the
    real LearningService, as the state machine would (its result at the step's path)."""

    learning: Any = None
    started: dict[str, HeldRun] = field(default_factory=dict)

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution:
        if name in self.started:
            return Execution(name=name, started=False)
        self.started[name] = HeldRun(name, json.loads(json.dumps(dict(payload))))
        return Execution(name=name, started=True)

    def step(self, run: HeldRun, step: str) -> dict[str, Any]:
        method, path = next((m, p) for s, m, p in STEPS if s == step)
        result: dict[str, Any] = getattr(self.learning, method)(run.event(step))
        run.state[path] = result
        return result

    def run(self, name: str) -> None:
        """Every step of the held run `name`, in order."""
        for step, _method, _path in STEPS:
            self.step(self.started[name], step)
