"""A workflow that runs the learning steps at once, in the calling thread, as the state machine
would (without its retries)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.ports import Execution


@dataclass
class InlineWorkflow:
    """An Orchestrator that runs LoadEvidence -> CallModel -> ApplyLearning at once, any
    error -> RecordFailure, as the state machine does (without its retries)."""

    learning: Any = None
    started: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution:
        if name in self.started:
            return Execution(name=name, started=False)
        self.started[name] = dict(payload)
        state: dict[str, Any] = json.loads(json.dumps(payload))
        steps = [
            ("LoadEvidence", self.learning.load_evidence, "evidence"),
            ("CallModel", self.learning.call_model, "model"),
            ("ApplyLearning", self.learning.apply_learning, "result"),
        ]
        for step, run, path in steps:
            try:
                state[path] = run(step_event(name, state, step))
            except Exception as failure:
                cause = {"errorType": type(failure).__name__, "errorMessage": str(failure)}
                state["error"] = {"Error": type(failure).__name__, "Cause": json.dumps(cause)}
                self.learning.record_failure(step_event(name, state, "RecordFailure"))
                break
        return Execution(name=name, started=True)


def wired_services(
    settings: Any,
    adapters: Any,
    models: Mapping[str, Any] | None = None,
    workflow: Any = None,
    **swap: Any,
) -> Any:
    """The real services over `adapters`, their learning started through `workflow` (an
    InlineWorkflow when none is given), with the models named in `models` and any other
    adapter swapped in by keyword (a clock, counters)."""
    from agent_memory.bootstrap import build_services
    from tests.support.learning_doubles import Catalog

    flow = InlineWorkflow() if workflow is None else workflow
    if models is not None:
        swap["models"] = Catalog(dict(models))
    if swap or adapters.orchestrator is not flow:
        adapters = replace(adapters, orchestrator=flow, **swap)
    # Pools built at their first step fill in `adapters`: a caller's own object is kept.
    built = build_services(settings, adapters)
    flow.learning = built.learning
    return built


def step_event(name: str, state: dict[str, Any], step: str, attempt: int = 0) -> dict[str, Any]:
    """The task event the state machine sends `step` of execution `name`."""
    context = {"executionName": name, "executionId": name, "state": step, "attempt": attempt}
    return {"input": json.loads(json.dumps(state)), "context": context}
