"""What a learning run shows a model: the unread items of a conversation and the entries the
pool already holds. Every keyed pool's task, its prompt and the local extractor read these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar


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


# The items' type: a run's `EvidenceItem`s, or any conversation's items for the extractor.
I_co = TypeVar("I_co", bound=SaidItem, covariant=True)


class Statements(Protocol[I_co]):
    """What a keyed pool's learning reads: items, the pool's entries, kinds and the person
    (a run's evidence, the model's request, or a chat's turn for the local extractor)."""

    @property
    def items(self) -> Sequence[I_co]: ...
    @property
    def memory(self) -> Sequence[KnownEntry]: ...
    @property
    def allowed_kinds(self) -> Sequence[str]: ...
    @property
    def person(self) -> str | None: ...
