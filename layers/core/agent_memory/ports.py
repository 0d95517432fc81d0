"""Ports: what services need from the outside world, as Protocols.

Adapters (DynamoDB, KMS, Step Functions, models) implement them; the in-memory fakes in
`adapters/in_memory.py` implement the same contracts for unit tests.

A `Record` is a plain dict of Python values (str, int, float, bool, None, bytes, list,
dict) with string keys `pk` and `sk`. It is a key-value row, not a DynamoDB item: the
adapter owns the translation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Record = dict[str, Any]


# --- Conditions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Absent:
    """The row must not exist."""


@dataclass(frozen=True)
class Present:
    """The row must exist."""


@dataclass(frozen=True)
class Equals:
    """The row must exist and `attribute` must equal `value`."""

    attribute: str
    value: Any


@dataclass(frozen=True)
class AbsentOrEquals:
    """The row is absent, or `attribute` equals `value` (first write of a counter)."""

    attribute: str
    value: Any


Condition = Absent | Present | Equals | AbsentOrEquals


# --- Write actions ----------------------------------------------------------------------


@dataclass(frozen=True)
class Put:
    record: Record
    condition: Condition | None = None


@dataclass(frozen=True)
class Update:
    """Set attributes (`None` removes one) and add to numeric attributes."""

    pk: str
    sk: str
    set: Mapping[str, Any] = field(default_factory=dict)
    add: Mapping[str, int] = field(default_factory=dict)
    condition: Condition | None = None


@dataclass(frozen=True)
class Delete:
    pk: str
    sk: str
    condition: Condition | None = None


@dataclass(frozen=True)
class Check:
    pk: str
    sk: str
    condition: Condition


Action = Put | Update | Delete | Check


@dataclass(frozen=True)
class Page:
    records: list[Record]
    # The last sort key read when more may follow; pass it back as `after`.
    next: str | None
    # Rows the store read to answer (includes rows a filter dropped): for benchmarks.
    scanned: int = 0


@dataclass(frozen=True)
class KeyRange:
    """Sort keys `low <= sk <= high`, or every sk that starts with `prefix`."""

    prefix: str | None = None
    low: str | None = None
    high: str | None = None


@runtime_checkable
class Store(Protocol):
    """The single table: rows addressed by (pk, sk), conditional writes, transactions."""

    def get(self, pk: str, sk: str) -> Record | None:
        """A strongly consistent read of one row."""
        ...

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        """Rows for the given keys (missing ones are left out, order not kept)."""
        ...

    def query(
        self,
        pk: str,
        key_range: KeyRange | None = None,
        *,
        limit: int | None = None,
        after: str | None = None,
        newest_first: bool = False,
        index: str | None = None,
    ) -> Page:
        """Rows of one partition in sort-key order (descending with `newest_first`).

        With `index`, `pk`/`key_range` address the index's keys (`gsi1pk`/`gsi1sk`) and
        `after` is the opaque cursor returned in `Page.next`.
        """
        ...

    def write(self, actions: Sequence[Action]) -> None:
        """Apply all actions or none. Raises `WriteConflict(index=...)` when a condition
        fails, `Unavailable` on transient failure (nothing written in either case)."""
        ...


class Cipher(Protocol):
    """Envelope encryption of content, bound to where it is stored.

    `scope` is the coarse encryption context (organization, pool, field): it partitions the
    data-key cache, so keep it coarse. `row` is sealed inside the payload and checked on
    open, so a ciphertext copied to another row fails to open.
    """

    def seal(self, plaintext: str, *, scope: Mapping[str, str], row: str) -> bytes: ...

    def open(self, blob: bytes, *, scope: Mapping[str, str], row: str) -> str: ...


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
