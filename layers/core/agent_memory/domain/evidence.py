"""What a learning run shows a model: the unread items of a conversation and the entries the
pool already holds. Every keyed pool's task, its prompt and the local extractor read these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class EvidenceItem:
    """One unread item of a conversation, as a learning model sees it."""

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


class SaidItem(Protocol):
    """An item as the local extractor reads it: any conversation's, a chat's turn item too."""

    @property
    def id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def app(self) -> str | None: ...


class Statements(Protocol):
    """What the local extractor reads: items, the pool's entries, kinds and the person."""

    @property
    def items(self) -> Sequence[SaidItem]: ...
    @property
    def memory(self) -> Sequence[KnownEntry]: ...
    @property
    def allowed_kinds(self) -> Sequence[str]: ...
    @property
    def person(self) -> str | None: ...


class Evidence(Statements, Protocol):
    """A run's evidence as a keyed pool's task reads it."""

    @property
    def items(self) -> Sequence[EvidenceItem]: ...
