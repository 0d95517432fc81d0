"""Clock, ids and the Orchestrator (durable workflows)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class Ids(Protocol):
    def new(self, prefix: str) -> str: ...


@dataclass(frozen=True)
class Execution:
    """What a start did: `started` is False when an execution with this name existed."""

    name: str
    started: bool


class Orchestrator(Protocol):
    """Starts durable learning workflows (Step Functions in AWS and locally).

    The contract (tests/contracts/test_orchestrator_contract.py): `start` runs the workflow
    once under `name`, with `payload` as its input; a repeated start of a used name runs
    nothing and answers `started=False` (Step Functions itself answers success, and the
    adapter `started=True`, for an identical input while the first run is still open: still
    no second run); a busy or unreachable service raises Unavailable and uses nothing up.
    Waiting is not the orchestrator's: a waiting execution is a row, started through
    `start` when its event happens (LearningService.wait/release), whatever the workflow
    type behind this port.
    """

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution: ...
