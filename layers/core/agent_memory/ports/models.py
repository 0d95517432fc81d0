"""The model ports: what a learning model is asked and answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

ModelErrorKind = Literal["timeout", "throttled", "unavailable", "invalid_output", "config"]


# --- Learning models ----------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceItem:
    """One unprocessed item of a conversation, as a learning model sees it."""

    id: str
    role: str  # user | assistant | tool | notice
    content: str
    app: str | None = None  # set on tool results that came from an App (outside data)
    session: str | None = None  # set when evidence spans sessions (agent memory)


@dataclass(frozen=True)
class KnownEntry:
    """An entry the pool already holds, so the model can reuse its key."""

    key: str
    content: str
    kind: str
    status: str


@dataclass(frozen=True)
class LearningRequest:
    """What a learning model is asked: propose changes to one pool from new evidence.

    `instructions` is the system prompt the domain wrote (rules included); `items` and
    `memory` are also given structured, for models that do not read prose (local/rules).
    """

    pool_kind: str  # "session" | "agent"
    instructions: str
    items: tuple[EvidenceItem, ...]
    memory: tuple[KnownEntry, ...]
    allowed_kinds: tuple[str, ...]
    person: str | None = None


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ModelReply:
    """The model's raw answer: JSON text in API.md's shape, parsed by the domain."""

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
    name: str

    def propose(self, request: LearningRequest) -> ModelReply: ...


class ModelCatalog(Protocol):
    def resolve(self, name: str | None) -> LearningModel | None:
        """The model behind `provider/model`, or None when this deployment has none
        (no name, or a known provider that is not configured here)."""
        ...
