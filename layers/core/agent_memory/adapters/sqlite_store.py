"""The single table in one SQLite file, for a service that runs on one machine.

- One row per (pk, sk); the record is kept as JSON that round-trips every value the port
  stores (str, int, float, bool, None inside lists and maps, bytes, list, dict: int and
  float stay apart, bytes stay bytes).
- The index (`gsi1`) and the TTL attribute are SQLite expression indexes over the stored
  record, declared by a `TableLayout` read from template.yaml's table: a changed template
  rebuilds them on the next open, and no derived column can fall out of step.
- Durable: WAL journal, `synchronous=FULL` (a commit is on disk before `write` returns),
  so an acknowledged write survives `kill -9` and power loss; a transaction interrupted at
  any point leaves nothing.
- Writes are serialized (`BEGIN IMMEDIATE` under a lock, conditions checked inside the
  transaction), so a lost race is a failed condition; a writer waits up to
  `busy_timeout_s` for another one (another thread or process) and only then answers
  `Unavailable`. Reads run beside writes on their own connection (one per thread).
- Nothing is cached above SQLite's page cache: a query reads only the rows it returns.
- Rows whose TTL attribute (epoch seconds) has passed are deleted in small batches every
  `sweep_every` writes, as DynamoDB deletes them some time after they expire; until then
  they read like any other row.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.ports.store import (
    Action,
    Check,
    Delete,
    KeyRange,
    Page,
    Put,
    Record,
    Update,
    action_key,
    check_transaction,
    condition_holds,
    value_kind,
    written,
)

SWEEP_BATCH = 500
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# JSON has no bytes, and a map could use any key: both are tagged with a key that starts
# with NUL, and a map that has such a key is itself kept as a tagged list of pairs.
_TAG = "\x00"
_BYTES = "\x00b"
_MAP = "\x00m"
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}

# Page cache of each connection, in KiB (docs/decisions.md, "make run keeps its data").
CACHE_KIB = 128


@dataclass(frozen=True)
class TableLayout:
    """The table's secondary indexes (name -> (partition, sort) attributes) and its TTL
    attribute: what template.yaml's `AWS::DynamoDB::Table` declares."""

    indexes: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    ttl_attribute: str | None = None

    @classmethod
    def from_template(cls, table_properties: Mapping[str, Any]) -> TableLayout:
        """The layout of a table resource's `Properties` (template.yaml, parsed)."""

        def keys(schema: Sequence[Mapping[str, str]]) -> tuple[str, str]:
            by_type = {k["KeyType"]: k["AttributeName"] for k in schema}
            return by_type["HASH"], by_type["RANGE"]

        if keys(table_properties["KeySchema"]) != ("pk", "sk"):
            raise ValueError("the single table's key must be (pk, sk)")
        indexes = {}
        for index in table_properties.get("GlobalSecondaryIndexes") or []:
            if index.get("Projection", {}).get("ProjectionType") != "ALL":
                raise ValueError(f"index {index['IndexName']} must project ALL attributes")
            indexes[str(index["IndexName"])] = keys(index["KeySchema"])
        ttl = table_properties.get("TimeToLiveSpecification") or {}
        return cls(indexes, str(ttl["AttributeName"]) if ttl.get("Enabled") else None)


# What template.yaml declares today (tests/integration/test_sqlite_store.py holds them equal).
DEFAULT_LAYOUT = TableLayout({"gsi1": ("gsi1pk", "gsi1sk")}, "ttl")


# --- Values -------------------------------------------------------------------------------


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a stored number must be finite")
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {_BYTES: base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a stored map's keys must be strings")
        if any(k.startswith(_TAG) for k in value):
            return {_MAP: [[k, _encode(v)] for k, v in value.items()]}
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, set | frozenset):
        return [_encode(v) for v in sorted(value)]  # as DynamoDB's sets read back
    raise TypeError(f"a store value cannot be a {type(value).__name__}")


def _decode_object(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        if _BYTES in obj:
            return base64.b64decode(obj[_BYTES])
        if _MAP in obj:
            return dict(obj[_MAP])
    return obj


def encode_record(record: Mapping[str, Any]) -> str:
    """The stored text of a record (attributes set to None are left out)."""
    # The record itself is never tagged, so the index expressions find its attributes.
    kept = {k: _encode(v) for k, v in record.items() if v is not None}
    return json.dumps(kept, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decode_record(text: str) -> Record:
    record: Record = json.loads(text, object_hook=_decode_object)
    return record


def _range_terms(key_range: KeyRange | None) -> list[tuple[str, str]]:
    """The sort key's bounds of a range: (comparison, bound) pairs."""
    if key_range is None:
        return []
    low, high, below = key_range.low, key_range.high, None
    if key_range.prefix is not None:
        low, high, below = key_range.prefix, None, _after_prefix(key_range.prefix)
    pairs = ((">=", low), ("<=", high), ("<", below))
    return [(term, bound) for term, bound in pairs if bound is not None]


def _after_prefix(prefix: str) -> str | None:
    """The least string greater than every string that starts with `prefix` (code-point
    order, which is SQLite's byte order of UTF-8); None when there is none."""
    while prefix:
        last = ord(prefix[-1])
        if last < 0x10FFFF:
            following = last + 1 if last + 1 != 0xD800 else 0xE000  # no surrogates in UTF-8
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None


def _attribute(name: str) -> str:
    """The SQL expression reading top-level attribute `name` of the stored record."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"attribute name {name!r} cannot be indexed")
    return f"json_extract(item, '$.\"{name}\"')"


# --- Connections --------------------------------------------------------------------------


class _Connection:
    """One thread's connection; closed when its thread ends or the store closes."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def close(self) -> None:
        self.connection.close()

    def __del__(self) -> None:
        self.close()


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.held: _Connection | None = None


class SqliteStore:
    """`ports.Store` in one SQLite file at `path` (created with its schema when new)."""

    def __init__(
        self,
        path: Path,
        *,
        layout: TableLayout = DEFAULT_LAYOUT,
        busy_timeout_s: float = 5.0,
        synchronous: str = "FULL",
        sweep_every: int = 1000,
        now_s: Callable[[], float] = time.time,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL", "EXTRA"):
            raise ValueError("synchronous must be FULL, EXTRA or NORMAL")
        self.path = Path(path)
        self._layout = layout
        self._busy_timeout_s = busy_timeout_s
        self._synchronous = synchronous
        self._sweep_every = sweep_every
        self._now_s = now_s
        self._local = _PerThread()
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._write_lock = threading.Lock()
        self._writes = 0
        self._indexes = {
            name: (_attribute(pk), _attribute(sk)) for name, (pk, sk) in layout.indexes.items()
        }
        self._ttl = _attribute(layout.ttl_attribute) if layout.ttl_attribute else None
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Owner-only: SQLite gives its WAL and shared-memory files the database's mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        self._create_schema()

    # -- connections ---------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        held = self._local.held
        if held is None:
            connection = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout_s,
                isolation_level=None,  # transactions are begun and committed here
                check_same_thread=False,  # closed by whichever thread collects it
            )
            connection.execute(f"PRAGMA synchronous={self._synchronous}")
            # Negative: KiB. A small page cache per connection (the OS caches the file):
            # SQLite's default 2 MiB per thread's connection grew the server's RSS in soaks.
            connection.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            held = self._local.held = _Connection(connection)
            self._open.add(held)
        return held.connection

    def close(self) -> None:
        """Close every connection (each thread's next call opens a new one)."""
        for held in list(self._open):
            held.close()
        self._local = _PerThread()

    @contextmanager
    def _mapped(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF in _BUSY:
                raise Unavailable("the store is busy; retry shortly") from error
            if error.sqlite_errorcode == sqlite3.SQLITE_FULL:
                raise Unavailable("the store's disk is full") from error
            raise

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: the lock, BEGIN IMMEDIATE, COMMIT or ROLLBACK."""
        if not self._write_lock.acquire(timeout=self._busy_timeout_s):
            raise Unavailable("the store is busy; retry shortly")
        try:
            connection = self._connection()
            with self._mapped():
                connection.execute("BEGIN IMMEDIATE")
                try:
                    yield connection
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
        finally:
            self._write_lock.release()

    def _create_schema(self) -> None:
        connection = self._connection()
        with self._mapped():
            mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise RuntimeError(f"{self.path}: SQLite could not use its WAL journal ({mode})")
        wanted: dict[str, str] = {}
        for name, (pk, sk) in self._indexes.items():
            digest = hashlib.sha256(f"{pk}|{sk}".encode()).hexdigest()[:8]
            wanted[f"index_{name}_{digest}"] = (
                f"({pk}, {sk}, pk, sk) WHERE {pk} IS NOT NULL AND {sk} IS NOT NULL"
            )
        if self._ttl is not None:
            digest = hashlib.sha256(self._ttl.encode()).hexdigest()[:8]
            wanted[f"ttl_{digest}"] = f"({self._ttl}) WHERE {self._ttl} IS NOT NULL"
        with self._transaction() as tx:
            tx.execute(
                "CREATE TABLE IF NOT EXISTS items ("
                " pk TEXT NOT NULL, sk TEXT NOT NULL, item TEXT NOT NULL,"
                " PRIMARY KEY (pk, sk))"
            )
            existing = {
                row[0]
                for row in tx.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'items'"
                    " AND (name LIKE 'index_%' OR name LIKE 'ttl_%')"
                )
            }
            for stale in existing - wanted.keys():
                tx.execute(f'DROP INDEX "{stale}"')
            for name, definition in wanted.items():
                # Built from the rows already there when the template adds an index.
                tx.execute(f'CREATE INDEX IF NOT EXISTS "{name}" ON items {definition}')

    # -- reads ---------------------------------------------------------------------------

    def get(self, pk: str, sk: str) -> Record | None:
        with self._mapped():
            row = (
                self._connection()
                .execute("SELECT item FROM items WHERE pk = ? AND sk = ?", (pk, sk))
                .fetchone()
            )
        return decode_record(row[0]) if row else None

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        connection = self._connection()
        records: list[Record] = []
        with self._mapped():
            for pk, sk in dict.fromkeys(keys):
                row = connection.execute(
                    "SELECT item FROM items WHERE pk = ? AND sk = ?", (pk, sk)
                ).fetchone()
                if row:
                    records.append(decode_record(row[0]))
        return records

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
        if limit is not None and limit < 1:
            raise ValueError("a query's limit must be at least 1")
        if index is not None:
            if index not in self._indexes:
                raise ValueError(f"the table has no index {index!r}")
            part, sort = self._indexes[index]
            where = [f"{part} IS NOT NULL", f"{sort} IS NOT NULL", f"{part} = ?"]
            order = [sort, "pk", "sk"]
        else:
            part, sort = "pk", "sk"
            where, order = ["pk = ?"], ["sk"]
        params: list[Any] = [pk]
        for term, bound in _range_terms(key_range):
            where.append(f"{sort} {term} ?")
            params.append(bound)
        if after is not None:
            beyond = "<" if newest_first else ">"
            if index is None:
                where.append(f"sk {beyond} ?")
                params.append(after)
            else:
                mark = json.loads(base64.urlsafe_b64decode(after))
                # The first term alone is what lets SQLite seek the index to the cursor.
                where.append(f"{sort} {beyond}= ? AND ({sort}, pk, sk) {beyond} (?, ?, ?)")
                params.extend([mark[0], *mark])
        direction = " DESC" if newest_first else ""
        # Only fixed columns and `_attribute` expressions (checked names) are spliced in.
        sql = (
            f"SELECT item, {', '.join(order)} FROM items WHERE {' AND '.join(where)}"  # noqa: S608
            f" ORDER BY {', '.join(column + direction for column in order)}"
        )
        if limit is not None:
            # One row more than wanted tells whether another page follows.
            sql += " LIMIT ?"
            params.append(limit + 1)
        records: list[Record] = []
        last: tuple[Any, ...] = ()
        scanned = 0
        with self._mapped():
            for item, *position in self._connection().execute(sql, params):
                scanned += 1
                if limit is not None and len(records) == limit:
                    cursor = (
                        base64.urlsafe_b64encode(json.dumps(list(last)).encode()).decode()
                        if index
                        else str(last[0])
                    )
                    return Page(records, cursor, scanned)
                records.append(decode_record(item))
                last = tuple(position)
        return Page(records, None, scanned)

    # -- writes --------------------------------------------------------------------------

    def write(self, actions: Sequence[Action]) -> None:
        if not actions:
            return
        check_transaction(actions)
        keys = [action_key(a) for a in actions]
        for action in actions:
            self._validate(action)
        # Puts are encoded before the lock is taken: the lock is held for SQL only.
        encoded = [encode_record(a.record) if isinstance(a, Put) else None for a in actions]
        with self._transaction() as tx:
            rows = [self._row(tx, key) for key in keys]
            for position, (action, row) in enumerate(zip(actions, rows, strict=True)):
                if not condition_holds(action.condition, row):
                    raise WriteConflict(
                        "the object changed since it was read",
                        index=position,
                        condition=action.condition.name if action.condition else None,
                    )
            for action, key, row, text in zip(actions, keys, rows, encoded, strict=True):
                self._apply(tx, action, key, row, text)
            self._writes += 1
            due = self._sweep_every > 0 and self._writes % self._sweep_every == 0
        if due:
            self._sweep_quietly()

    def _validate(self, action: Action) -> None:
        """What DynamoDB refuses before it looks at the table."""
        names = written(action)
        if isinstance(action, Update) and ({"pk", "sk"} & names.keys()):
            raise ValueError("an update may not change a row's pk or sk")
        for pk_name, sk_name in self._layout.indexes.values():
            for name in (pk_name, sk_name):
                if names.get(name) is not None and not isinstance(names[name], str):
                    raise ValueError(f"index key {name} must be a string")
        if isinstance(action, Update):
            for name, amount in action.add.items():
                if value_kind(amount) != "number":
                    raise ValueError(f"only a number can be added to {name}")

    @staticmethod
    def _row(tx: sqlite3.Connection, key: tuple[str, str]) -> Record | None:
        found = tx.execute("SELECT item FROM items WHERE pk = ? AND sk = ?", key).fetchone()
        return decode_record(found[0]) if found else None

    @staticmethod
    def _apply(
        tx: sqlite3.Connection,
        action: Action,
        key: tuple[str, str],
        row: Record | None,
        text: str | None,
    ) -> None:
        match action:
            case Put():
                pass
            case Update(pk, sk, set_, add):
                updated: Record = dict(row) if row is not None else {"pk": pk, "sk": sk}
                for name, value in set_.items():
                    if value is None:
                        updated.pop(name, None)
                    else:
                        updated[name] = value
                for name, amount in add.items():
                    if name in updated and value_kind(updated[name]) != "number":
                        raise ValueError(f"{name} is not a number: nothing can be added to it")
                    updated[name] = updated.get(name, 0) + amount
                text = encode_record(updated)
            case Delete():
                tx.execute("DELETE FROM items WHERE pk = ? AND sk = ?", key)
                return
            case Check():
                return
        tx.execute(
            "INSERT INTO items (pk, sk, item) VALUES (?, ?, ?)"
            " ON CONFLICT (pk, sk) DO UPDATE SET item = excluded.item",
            (*key, text),
        )

    # -- expiry --------------------------------------------------------------------------

    def sweep_expired(self, limit: int = SWEEP_BATCH) -> int:
        """Delete up to `limit` rows whose TTL (a number of epoch seconds) has passed."""
        if self._ttl is None:
            return 0
        ttl = self._ttl
        with self._transaction() as tx:
            deleted = tx.execute(
                "DELETE FROM items WHERE rowid IN (SELECT rowid FROM items"  # noqa: S608
                f" WHERE {ttl} IS NOT NULL AND {ttl} < ?"
                f" AND json_type(item, '$.\"{self._layout.ttl_attribute}\"')"
                " IN ('integer', 'real') LIMIT ?)",
                (self._now_s(), limit),
            ).rowcount
        return int(deleted)

    def _sweep_quietly(self) -> None:
        # The write that triggered it has committed: a busy table skips this sweep.
        with suppress(Unavailable):
            self.sweep_expired()
