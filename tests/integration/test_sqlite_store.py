"""What only the SQLite store does: the file outlives the process (also `kill -9`), the
TTL attribute is template.yaml's, writers wait for each other instead of failing, expired
rows go lazily, a query reads no more than it returns, and an export reads one snapshot while
writes go on. The Store contract itself is tests/contracts/test_store_contract.py."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

from agent_memory.adapters.sqlite_store import TTL_ATTRIBUTE, SqliteStore
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.ports.store import Equals, KeyRange, Put, Update

ROOT = Path(__file__).resolve().parents[2]
_ENVIRONMENT = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers' / 'core'}{os.pathsep}{ROOT}"}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "table.sqlite3"


def _open(path: Path, **options) -> SqliteStore:
    return SqliteStore(path, **options)


# --- Schema ---------------------------------------------------------------------------


def test_the_keys_and_ttl_are_the_ones_template_yaml_deploys() -> None:
    from infra.cfn_yaml import load_template

    resources = load_template(ROOT / "template.yaml")["Resources"]
    [table] = [r for r in resources.values() if r["Type"] == "AWS::DynamoDB::Table"]
    properties = table["Properties"]
    by_type = {k["KeyType"]: k["AttributeName"] for k in properties["KeySchema"]}
    assert (by_type["HASH"], by_type["RANGE"]) == ("pk", "sk")
    assert properties["TimeToLiveSpecification"] == {
        "AttributeName": TTL_ATTRIBUTE,
        "Enabled": True,
    }


def test_the_file_is_a_wal_database_synced_on_every_commit(path: Path) -> None:
    store = _open(path)
    store.write([Put({"pk": "P", "sk": "A"})])
    connection = store._connection()
    assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert connection.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL


def test_the_files_are_owner_only_whatever_the_umask(path: Path) -> None:
    previous = os.umask(0)
    try:
        store = _open(path)
        store.write([Put({"pk": "P", "sk": "A"})])
    finally:
        os.umask(previous)
    files = sorted(path.parent.iterdir())
    assert [f.name for f in files] == [path.name, f"{path.name}-shm", f"{path.name}-wal"]
    assert {f.stat().st_mode & 0o777 for f in files} == {0o600}


# --- Values and refusals --------------------------------------------------------------


def test_values_come_back_exactly_as_written_after_a_restart(path: Path) -> None:
    record = {
        "pk": "P",
        "sk": "A",
        "whole_float": 1.0,
        "int": 10**30,
        "tiny": 5e-324,
        "bytes": b"\xff\x00",
        "nested": [{"b": b"\x01", "n": None, "f": 2.0}, [True, False, None]],
        # Maps whose keys look like the file's own tags stay maps.
        "tagged_lookalike": {"\x00b": "not bytes", "\x00m": [["a", 1]]},
        "empty": {"list": [], "map": {}, "text": ""},
        "tuple": (1, "two"),
    }
    _open(path).write([Put(record)])
    reopened = _open(path).get("P", "A")
    assert reopened == {**record, "tuple": [1, "two"]}
    assert reopened is not None
    assert isinstance(reopened["whole_float"], float)
    assert isinstance(reopened["nested"][0]["f"], float)
    assert isinstance(reopened["bytes"], bytes)


@pytest.mark.parametrize(
    "record",
    [
        {"pk": "P", "sk": 1},
        {"pk": "P", "sk": "A", "n": float("nan")},
        {"pk": "P", "sk": "A", "when": object()},
    ],
    ids=["number-sort-key", "nan", "object"],
)
def test_a_record_dynamodb_would_refuse_is_refused_and_nothing_is_written(
    path: Path, record: dict
) -> None:
    store = _open(path)
    with pytest.raises((ValueError, TypeError)):
        store.write([Put({"pk": "P", "sk": "B"}), Put(record)])
    assert store.query("P").records == []


def test_a_failing_update_inside_a_transaction_rolls_back_everything(path: Path) -> None:
    store = _open(path)
    store.write([Put({"pk": "P", "sk": "A", "name": "text"})])
    with pytest.raises(ValueError, match="not a number"):
        store.write([Put({"pk": "P", "sk": "B"}), Update("P", "A", add={"name": 1})])
    with pytest.raises(ValueError, match="pk or sk"):
        store.write([Put({"pk": "P", "sk": "C"}), Update("P", "A", set={"sk": "Z"})])
    assert [r["sk"] for r in store.query("P").records] == ["A"]


# --- Durability across processes ------------------------------------------------------

_CHILD = """
import os, signal, sys
from pathlib import Path
from agent_memory.adapters.sqlite_store import SqliteStore
from agent_memory.ports.store import Put, Update

path, start, kill_inside = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
store = SqliteStore(path)
if kill_inside >= 0:
    applied = []
    original = SqliteStore._apply

    def apply(tx, action, key, row, text):
        original(tx, action, key, row, text)
        applied.append(key)
        if len(applied) == kill_inside:
            os.kill(os.getpid(), signal.SIGKILL)  # two of three actions applied

    SqliteStore._apply = staticmethod(apply)
i = start
while True:
    store.write([
        Put({"pk": "T", "sk": f"A#{i:06d}", "i": i}),
        Put({"pk": "T", "sk": f"B#{i:06d}", "i": i, "blob": os.urandom(64)}),
        Update("T", "COUNT", add={"n": 1}),
    ])
    print(i, flush=True)  # acknowledged: write() returned
    i += 1
"""


def _run_child(path: Path, start: int, *, acks: int, kill_inside: int = -1) -> list[int]:
    """Start a writer, SIGKILL it after `acks` acknowledged transactions (or let it kill
    itself inside one), and return the numbers it acknowledged."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), str(start), str(kill_inside)],
        stdout=subprocess.PIPE,
        text=True,
        env=_ENVIRONMENT,
    )
    assert child.stdout is not None
    acknowledged: list[int] = []
    for line in child.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) == acks:
            child.send_signal(signal.SIGKILL)  # while it is writing the next ones
            break
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return acknowledged


def _whole_transactions(path: Path) -> set[int]:
    store = _open(path)
    rows = store.query("T").records
    a = {r["i"] for r in rows if r["sk"].startswith("A#")}
    b = {r["i"] for r in rows if r["sk"].startswith("B#")}
    count = store.get("T", "COUNT")
    assert a == b, "a transaction was half written"
    assert (count or {}).get("n", 0) == len(a), "the counter disagrees with the rows"
    store.close()
    return a


def test_every_acknowledged_write_survives_kill_9_and_none_is_half_written(path: Path) -> None:
    start = 0
    for acks in (40, 1, 25):  # three crashes of one file, each while writing
        acknowledged = _run_child(path, start, acks=acks)
        survived = _whole_transactions(path)
        assert set(acknowledged) <= survived
        # What committed beyond the last acknowledgement is whole too, and without gaps.
        assert survived == set(range(max(survived) + 1))
        start = max(survived) + 1


def test_a_transaction_killed_halfway_leaves_nothing(path: Path) -> None:
    # The child kills itself after 2 of the 3 actions of its 4th transaction.
    acknowledged = _run_child(path, 0, acks=10**6, kill_inside=3 * 3 + 2)
    assert acknowledged == [0, 1, 2]
    assert _whole_transactions(path) == {0, 1, 2}


# --- Concurrency ----------------------------------------------------------------------


def test_twenty_writers_on_one_row_each_win_or_conflict_never_fail(path: Path) -> None:
    # Two stores on one file: threads of one wait on its lock, the two on SQLite's.
    stores = [_open(path), _open(path)]
    store = stores[0]
    store.write([Put({"pk": "P", "sk": "ROW", "rev": 0, "adds": 0})])
    start = threading.Barrier(20)
    outcomes: list[str] = []

    def writer(store: SqliteStore) -> None:
        start.wait()
        for _ in range(5):
            rev = (store.get("P", "ROW") or {})["rev"]
            try:
                store.write(
                    [Update("P", "ROW", set={"rev": rev + 1}, condition=Equals("rev", rev))]
                )
                outcomes.append("won")
            except WriteConflict:
                outcomes.append("conflict")
            except Exception as error:  # Unavailable, "database is locked", ...
                outcomes.append(repr(error))
            store.write([Update("P", "ROW", add={"adds": 1})])

    threads = [threading.Thread(target=writer, args=(stores[i % 2],)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(outcomes) <= {"won", "conflict"}, outcomes
    row = store.get("P", "ROW")
    assert row == {"pk": "P", "sk": "ROW", "rev": outcomes.count("won"), "adds": 100}


def test_a_writer_waits_for_another_process_then_writes(path: Path) -> None:
    store = _open(path, busy_timeout_s=5.0)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_THE_LOCK, str(path), "0.3"],
        stdout=subprocess.PIPE,
        env=_ENVIRONMENT,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == b"locked\n"
    store.write([Put({"pk": "P", "sk": "A"})])  # waited for its commit, did not fail
    assert holder.wait(timeout=10) == 0
    assert store.get("P", "A") == {"pk": "P", "sk": "A"}
    assert store.get("P", "HELD") == {"pk": "P", "sk": "HELD"}


_HOLD_THE_LOCK = """
import sqlite3, sys, time
from agent_memory.adapters.sqlite_store import encode_record
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
connection.execute(
    "INSERT INTO items (pk, sk, item) VALUES ('P', 'HELD', ?)",
    (encode_record({"pk": "P", "sk": "HELD"}),),
)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("COMMIT")
"""


def test_a_lock_held_past_the_timeout_is_unavailable_and_reads_go_on(path: Path) -> None:
    store = _open(path, busy_timeout_s=0.2)
    store.write([Put({"pk": "P", "sk": "A", "n": 1})])
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(Unavailable):
            store.write([Put({"pk": "P", "sk": "B"})])
        assert store.get("P", "A") == {"pk": "P", "sk": "A", "n": 1}
    finally:
        other.execute("ROLLBACK")
    assert store.get("P", "B") is None
    store.write([Put({"pk": "P", "sk": "B"})])


# --- Expiry ---------------------------------------------------------------------------


def test_expired_rows_read_as_usual_until_a_sweep_drops_them(path: Path) -> None:
    now = [1_000.0]
    store = _open(path, sweep_every=4, now_s=lambda: now[0])
    store.write(
        [
            Put({"pk": "P", "sk": "OLD", "ttl": 999}),
            Put({"pk": "P", "sk": "LATER", "ttl": 5_000}),
            Put({"pk": "P", "sk": "TEXT-TTL", "ttl": "999"}),  # not a number: never expires
            Put({"pk": "P", "sk": "BOOL-TTL", "ttl": True}),
            Put({"pk": "P", "sk": "KEEP"}),
        ]
    )
    assert len(store.query("P").records) == 5  # expired, not yet deleted: still readable
    first = store.query("P", limit=2)
    for i in range(3):  # the 4th write sweeps
        store.write([Put({"pk": "Q", "sk": f"{i}"})])
    rest = store.query("P", limit=10, after=first.next)
    assert [r["sk"] for r in first.records + rest.records] == [
        "BOOL-TTL",
        "KEEP",
        "LATER",
        "TEXT-TTL",
    ]
    now[0] = 6_000.0
    assert store.sweep_expired() == 1
    assert store.get("P", "LATER") is None


# --- Bounded reads --------------------------------------------------------------------


def test_a_query_reads_only_what_it_returns(path: Path) -> None:
    store = _open(path)
    for start in range(0, 5_000, 100):
        store.write(
            [
                Put({"pk": "P", "sk": f"S{i:05d}", "text": "x" * 500})
                for i in range(start, start + 100)
            ]
        )
    page = store.query("P", KeyRange(prefix="S"), limit=10, newest_first=True)
    assert (len(page.records), page.scanned) == (10, 11)  # one more tells a page follows
    assert page.records[0]["sk"] == "S04999"

    # Paging through 2.5 MB of rows never holds more than a page or two of them.
    tracemalloc.start()
    after, seen = None, 0
    while True:
        page = store.query("P", limit=100, after=after)
        seen += len(page.records)
        if page.next is None:
            break
        after = page.next
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seen == 5_000
    assert peak < 1_000_000, f"{peak} bytes held while paging 2.5 MB"


# --- A deployment's export ------------------------------------------------------------


def test_an_export_reads_one_snapshot_while_the_server_writes_on(path: Path) -> None:
    exporting = _open(path)
    exporting.write([Put({"pk": "A", "sk": "1", "n": 1}), Put({"pk": "B", "sk": "1", "n": 1})])
    server = _open(path, busy_timeout_s=0.2)  # another connection, as the serving process
    rows = exporting.rows()
    first = next(rows)

    # Not kept waiting by the export (a wait would be Unavailable after 0.2 s).
    server.write([Put({"pk": "B", "sk": "1", "n": 2}), Put({"pk": "C", "sk": "1", "n": 2})])
    wal = server._connection()
    _busy, frames, checkpointed = wal.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert checkpointed < frames  # the server's writes wait in the WAL for the export to end

    assert [first, *rows] == [{"pk": "A", "sk": "1", "n": 1}, {"pk": "B", "sk": "1", "n": 1}]
    _busy, frames, checkpointed = wal.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert checkpointed == frames
    assert [row["n"] for row in exporting.rows()] == [1, 2, 2]
