"""The single table in one SQLite file, for a service that runs on one machine.

The TTL's index is an expression index over the JSON record, so no derived column can fall
out of step; writes are serialized under a lock, so a lost race is a failed condition.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from agent_memory.adapters.sqlite_rows import decode_record, encode_record, range_terms
from agent_memory.domain.errors import Unavailable
from agent_memory.ports.store import (
    Action,
    Check,
    Delete,
    Page,
    Put,
    Query,
    Record,
    StoreAdapter,
    Update,
    action_key,
    check_conditions,
    check_transaction,
    page_of,
    updated,
)

SWEEP_BATCH = 500
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}

# Page cache of each connection, in KiB.
CACHE_KIB = 128

# The TTL attribute template.yaml declares (tests/integration/test_sqlite_store.py holds them
# equal): a row whose number of epoch seconds in it has passed is swept.
TTL_ATTRIBUTE = "ttl"
_TTL = f"json_extract(item, '$.\"{TTL_ATTRIBUTE}\"')"


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


class SqliteStore(StoreAdapter):
    """`ports.Store` in one SQLite file at `path` (created with its schema when new)."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_s: float = 5.0,
        sweep_every: int = 1000,
        now_s: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self._busy_timeout_s = busy_timeout_s
        self._sweep_every = sweep_every
        self._now_s = now_s
        self._local = _PerThread()
        self._open: weakref.WeakSet[_Connection] = weakref.WeakSet()
        self._write_lock = threading.Lock()
        self._writes = 0
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Owner-only: SQLite gives its WAL and shared-memory files the database's mode.
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600))
        self._create_schema()

    def _connection(self) -> sqlite3.Connection:
        held = self._local.held
        if held is None:
            connection = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout_s,
                isolation_level=None,  # transactions are begun and committed here
                check_same_thread=False,  # closed by whichever thread collects it
            )
            connection.execute("PRAGMA synchronous=FULL")
            # Negative means KiB; the OS caches the file, so each connection keeps little.
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
        with self._transaction() as tx:
            tx.execute(
                "CREATE TABLE IF NOT EXISTS items ("
                " pk TEXT NOT NULL, sk TEXT NOT NULL, item TEXT NOT NULL,"
                " PRIMARY KEY (pk, sk))"
            )
            tx.execute(f"CREATE INDEX IF NOT EXISTS ttl ON items ({_TTL}) WHERE {_TTL} IS NOT NULL")

    def get(self, pk: str, sk: str) -> Record | None:
        with self._mapped():
            return self._row(self._connection(), (pk, sk))

    def rows(self) -> Iterator[Record]:
        """Every row in key order, as one read (a deployment's move reads them all)."""
        with self._mapped():
            # One read transaction for the whole export, so the archive is one snapshot:
            # writers go on meanwhile, and the WAL checkpoints their rows once it ends.
            found = self._connection().execute("SELECT item FROM items ORDER BY pk, sk")
            yield from (decode_record(item) for (item,) in found)

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        connection = self._connection()
        with self._mapped():
            found = [self._row(connection, key) for key in dict.fromkeys(keys)]
        return [record for record in found if record is not None]

    def page(self, query: Query) -> Page:
        if query.limit is not None and query.limit < 1:
            raise ValueError("a query's limit must be at least 1")
        sql, params = self._select(query)
        if query.limit is not None:
            # One row more than wanted tells whether another page follows.
            sql += " LIMIT ?"
            params.append(query.limit + 1)
        with self._mapped():
            rows = self._connection().execute(sql, params).fetchall()
        return page_of([decode_record(item) for (item,) in rows], query.limit, len(rows))

    @staticmethod
    def _select(query: Query) -> tuple[str, list[Any]]:
        where, params = ["pk = ?"], [query.pk]
        for term, bound in range_terms(query.key_range):
            where.append(f"sk {term} ?")
            params.append(bound)
        if query.after is not None:
            where.append(f"sk {'<' if query.newest_first else '>'} ?")
            params.append(query.after)
        direction = " DESC" if query.newest_first else ""
        # Only fixed columns and comparison operators are spliced in.
        sql = f"SELECT item FROM items WHERE {' AND '.join(where)} ORDER BY sk{direction}"  # noqa: S608
        return sql, params

    def write(self, actions: Sequence[Action]) -> None:
        if not actions:
            return
        check_transaction(actions)
        keys = [action_key(a) for a in actions]
        # Puts are encoded before the lock is taken: the lock is held for SQL only.
        encoded = [encode_record(a.record) if isinstance(a, Put) else None for a in actions]
        with self._transaction() as tx:
            rows = [self._row(tx, key) for key in keys]
            check_conditions(actions, rows)
            for action, key, row, text in zip(actions, keys, rows, encoded, strict=True):
                self._apply(tx, action, key, row, text)
            self._writes += 1
            due = self._sweep_every > 0 and self._writes % self._sweep_every == 0
        if due:
            self._sweep_quietly()

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
            case Update():
                text = encode_record(updated(row, action))
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

    def sweep_expired(self, limit: int = SWEEP_BATCH) -> int:
        """Delete up to `limit` rows whose TTL (a number of epoch seconds) has passed."""
        with self._transaction() as tx:
            deleted = tx.execute(
                "DELETE FROM items WHERE rowid IN (SELECT rowid FROM items"  # noqa: S608
                f" WHERE {_TTL} IS NOT NULL AND {_TTL} < ?"
                f" AND json_type(item, '$.\"{TTL_ATTRIBUTE}\"')"
                " IN ('integer', 'real') LIMIT ?)",
                (self._now_s(), limit),
            ).rowcount
        return int(deleted)

    def _sweep_quietly(self) -> None:
        # The write that triggered it has committed: a busy table skips this sweep.
        with suppress(Unavailable):
            self.sweep_expired()
