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
    """Starts durable learning workflows.

    `start` runs the workflow once under `name`; a repeated start of a used name runs
    nothing and answers `started=False` (or `True` for an identical input while the first
    run is open); a busy or unreachable service raises Unavailable and uses nothing up.
    """

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution: ...
