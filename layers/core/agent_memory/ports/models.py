"""The model port: what any model provider is asked (a task's request) and answers.

A provider sends `request.system` and `request.user`, asks for `request.schema` named
`request.task`, and gives up after `request.deadline_s`; `local/rules` answers
`request.local_answer()`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from agent_memory.domain.tasks.base import ModelRequest

ModelErrorKind = Literal["timeout", "throttled", "unavailable", "invalid_output", "config"]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ModelReply:
    """The model's raw answer: JSON text in the task's shape, parsed by the domain."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0


class ModelFailure(Exception):
    """A model call failed. `retryable` tells whether the same call may succeed later."""

    def __init__(self, kind: ModelErrorKind, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


class LearningModel(Protocol):
    """One `provider/model`: answers any task's request, or raises `ModelFailure`
    (`timeout` once `request.deadline_s` has passed)."""

    name: str

    def propose(self, request: ModelRequest) -> ModelReply: ...


class ModelCatalog(Protocol):
    def resolve(self, name: str | None) -> LearningModel | None:
        """None when this deployment has no such model (or no name is given)."""

    def providers(self) -> tuple[str, ...]:
        """The providers this deployment can run, in `PROVIDERS` order; never a key."""
