"""The Store port: the single table as key-value rows, conditions, transactions."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_memory.domain.errors import TooLarge, WriteConflict

Record = dict[str, Any]


# Conditions hold on the row before the write; a failed one raises
# `WriteConflict(condition=name)`. Comparisons follow DynamoDB: values of different kinds,
# a missing row or attribute fail. `AbsentOr...` also pass on a row not yet written.


@dataclass(frozen=True)
class _Named:
    name: str | None = field(default=None, kw_only=True)


class Absent(_Named):
    """The row must not exist."""


class Present(_Named):
    """The row must exist."""


@dataclass(frozen=True)
class _Compared:
    attribute: str
    value: Any
    name: str | None = field(default=None, kw_only=True)


class Equals(_Compared):
    """The row must exist and `attribute` must equal `value`."""


class LessThan(_Compared):
    """The row must exist and `attribute < value` (a lease that expired before `value`)."""


class AtMost(_Compared):
    """The row must exist and `attribute <= value` (a budget with room for one more)."""


class AbsentOrEquals(_Compared):
    """The row is absent, or `attribute` equals `value` (first write of a counter)."""


class AbsentOrLessThan(_Compared):
    """The row is absent, or `attribute < value` (take a lease never taken or expired)."""


def count_is(attribute: str, count: int, *, name: str) -> AbsentOrEquals | Equals:
    """A counter (a version, a sequence) still at `count`; a row never written counts 0."""
    if count == 0:
        return AbsentOrEquals(attribute, 0, name=name)
    return Equals(attribute, count, name=name)


Condition = Absent | Present | Equals | LessThan | AtMost | AbsentOrEquals | AbsentOrLessThan

# The DynamoDB adapter's write token, to recognise its own retried write; never returned.
WRITER_ATTRIBUTE = "_writer"


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


def value_kind(value: Any) -> str:
    """The DynamoDB type a Python value is stored as (conditions compare within one)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    return type(value).__name__


def _equal(a: Any, b: Any) -> bool:
    """Scalars of one kind (conditions compare versions, counters, statuses and ids)."""
    return value_kind(a) == value_kind(b) and bool(a == b)


def _compare(row: Record | None, attribute: str, value: Any, holds: Callable[[int], bool]) -> bool:
    """`holds(sign of row[attribute] - value)`, for numbers, strings or bytes of one kind."""
    if row is None or attribute not in row:
        return False
    have = row[attribute]
    if value_kind(have) != value_kind(value) or value_kind(value) not in ("number", "str", "bytes"):
        return False
    return holds((have > value) - (have < value))


def condition_holds(condition: Condition | None, row: Record | None) -> bool:
    """Whether `condition` holds on `row` (None: absent), as DynamoDB decides it."""
    match condition:
        case None:
            return True
        case Absent():
            return row is None
        case Present():
            return row is not None
        case AbsentOrEquals() | AbsentOrLessThan() if row is None:
            return True
        case Equals(attribute, value) | AbsentOrEquals(attribute, value):
            return row is not None and attribute in row and _equal(row[attribute], value)
        case LessThan(attribute, value) | AbsentOrLessThan(attribute, value):
            return _compare(row, attribute, value, lambda sign: sign < 0)
        case AtMost(attribute, value):
            return _compare(row, attribute, value, lambda sign: sign <= 0)
    raise TypeError(condition)  # pragma: no cover


def check_conditions(actions: Sequence[Action], rows: Sequence[Record | None]) -> None:
    """`WriteConflict` at the first action whose condition fails on its row (None: absent)."""
    for position, (action, row) in enumerate(zip(actions, rows, strict=True)):
        if not condition_holds(action.condition, row):
            raise conflict(action, position)


def conflict(action: Action, position: int) -> WriteConflict:
    name = action.condition.name if action.condition is not None else None
    return WriteConflict("the object changed since it was read", index=position, condition=name)


# DynamoDB's limit, kept by every adapter.
MAX_TRANSACTION_ACTIONS = 100


def check_transaction(actions: Sequence[Action]) -> None:
    """What every store refuses before it looks at a row."""
    if len(actions) > MAX_TRANSACTION_ACTIONS:
        raise TooLarge(
            f"one change may write at most {MAX_TRANSACTION_ACTIONS} rows, not {len(actions)}"
        )
    keys = [action_key(a) for a in actions]
    if len(set(keys)) != len(keys):
        raise ValueError("a transaction may touch each row only once")
    if any(WRITER_ATTRIBUTE in written(a) for a in actions):
        raise ValueError(f"{WRITER_ATTRIBUTE} is reserved for the store")
    for update in (a for a in actions if isinstance(a, Update)):
        if {"pk", "sk"} & written(update).keys():
            raise ValueError("an update may not change a row's pk or sk")
        for name, amount in update.add.items():
            if value_kind(amount) != "number":
                raise ValueError(f"only a number can be added to {name}")


def action_key(action: Action) -> tuple[str, str]:
    if isinstance(action, Put):
        pk, sk = action.record.get("pk"), action.record.get("sk")
        if not isinstance(pk, str) or not isinstance(sk, str):
            raise ValueError("a record's pk and sk must be strings")
        return (pk, sk)
    return (action.pk, action.sk)


def written(action: Action) -> Mapping[str, Any]:
    if isinstance(action, Put):
        return action.record
    if isinstance(action, Update):
        return {**action.set, **action.add}
    return {}


@dataclass(frozen=True)
class Page:
    records: list[Record]
    # The last sort key read when more may follow; pass it back as `after`.
    next: str | None
    # Rows read to answer, filtered ones included: for benchmarks.
    scanned: int = 0


@dataclass(frozen=True)
class KeyRange:
    """Sort keys `low <= sk <= high`, or every sk that starts with `prefix`."""

    prefix: str | None = None
    low: str | None = None
    high: str | None = None


@dataclass(frozen=True)
class Query:
    pk: str
    key_range: KeyRange | None = None
    limit: int | None = None
    after: str | None = None
    newest_first: bool = False


def page_of(records: list[Record], limit: int | None, scanned: int) -> Page:
    """`records` were read with one more than `limit`, which tells that a page follows."""
    if limit is None or len(records) <= limit:
        return Page(records, None, scanned)
    return Page(records[:limit], str(records[limit - 1]["sk"]), scanned)


def updated(row: Record | None, update: Update) -> Record:
    """The row after `update` (a missing row starts as its key alone)."""
    result: Record = dict(row) if row is not None else {"pk": update.pk, "sk": update.sk}
    for name, value in update.set.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    for name, amount in update.add.items():
        if name in result and value_kind(result[name]) != "number":
            raise ValueError(f"{name} is not a number: nothing can be added to it")
        result[name] = result.get(name, 0) + amount
    return result


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
    ) -> Page:
        """Rows of one partition in sort-key order, from after the sort key `after`."""
        ...

    def write(self, actions: Sequence[Action]) -> None:
        """Apply all actions or none.

        Raises `WriteConflict(index, condition)` of the first failing condition (both None
        when a concurrent transaction won), `Unavailable` on transient failure, `TooLarge`
        over 100 actions, `ValueError` when two actions touch one row or a record uses
        `WRITER_ATTRIBUTE`. A retried write whose answer was lost answers success.
        """
        ...


class StoreAdapter(ABC):
    """The base of the store adapters: `query` hands its arguments to `page`."""

    def query(
        self,
        pk: str,
        key_range: KeyRange | None = None,
        *,
        limit: int | None = None,
        after: str | None = None,
        newest_first: bool = False,
    ) -> Page:
        return self.page(Query(pk, key_range, limit, after, newest_first))

    @abstractmethod
    def page(self, query: Query) -> Page: ...


def partition_rows(
    store: Store,
    pk: str,
    key_range: KeyRange | None = None,
    *,
    page: int = MAX_TRANSACTION_ACTIONS,
) -> Iterator[Record]:
    """Every row of a partition (in `key_range`), read `page` rows at a time, only as far
    as the caller iterates."""
    after: str | None = None
    while True:
        found = store.query(pk, key_range, limit=page, after=after)
        yield from found.records
        if found.next is None:
            return
        after = found.next


def write_in_batches(
    store: Store, actions: Sequence[Action], *, size: int = MAX_TRANSACTION_ACTIONS
) -> None:
    """`actions` in transactions of at most `size`, in order (each batch all or nothing)."""
    for start in range(0, len(actions), size):
        store.write(actions[start : start + size])
