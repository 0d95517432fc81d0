"""The Store port: the single table as key-value rows, conditions, transactions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

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
