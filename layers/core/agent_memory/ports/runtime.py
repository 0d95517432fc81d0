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
    """A started workflow run."""

    name: str
    started: bool  # False when an execution with this name already existed


class Orchestrator(Protocol):
    """Starts durable learning workflows (Step Functions in AWS and locally)."""

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution: ...
