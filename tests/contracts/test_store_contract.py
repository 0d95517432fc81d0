"""The Store port's contract: reads, ranges and pages, every condition, transactions,
named conflicts, and writes that stay right when the SDK retries them.

To run it against another set of adapters, add one entry to `STORES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.domain.errors import TooLarge, WriteConflict
from agent_memory.ports.store import (
    WRITER_ATTRIBUTE,
    Absent,
    AbsentOrEquals,
    AbsentOrLessThan,
    Action,
    AtMost,
    Check,
    Condition,
    Delete,
    Equals,
    KeyRange,
    LessThan,
    Present,
    Put,
    Store,
    Update,
)
from tests.support.store import LostAnswers


@dataclass
class StoreRig:
    """A store under test; `lost` when the adapter's client retries and can lose answers."""

    store: Store
    lost: LostAnswers | None = None


def _in_memory(request: pytest.FixtureRequest) -> StoreRig:
    from tests.support.in_memory import InMemoryStore

    return StoreRig(InMemoryStore())


def _dynamodb(request: pytest.FixtureRequest) -> StoreRig:
    from botocore.config import Config

    from agent_memory.adapters.dynamodb.store import DynamoStore

    session, local = request.getfixturevalue("local_aws")
    # The service's retry policy (bootstrap.py): standard mode, 1 + 3 attempts.
    retries = Config(retries={"mode": "standard", "max_attempts": 3})
    client = session.client("dynamodb", config=retries)
    return StoreRig(DynamoStore(client, local.table_name), LostAnswers(client))


def _sqlite(request: pytest.FixtureRequest) -> StoreRig:
    from agent_memory.adapters.sqlite_store import SqliteStore

    store = SqliteStore(request.getfixturevalue("tmp_path") / "table.sqlite3")
    request.addfinalizer(store.close)
    return StoreRig(store)


STORES: dict[str, Callable[[pytest.FixtureRequest], StoreRig]] = {
    "in_memory": _in_memory,
    "dynamodb": _dynamodb,
    "sqlite": _sqlite,
}


@pytest.fixture(params=list(STORES))
def rig(request: pytest.FixtureRequest) -> StoreRig:
    return STORES[request.param](request)


@pytest.fixture
def store(rig: StoreRig) -> Store:
    return rig.store


def _lost(rig: StoreRig) -> LostAnswers:
    if rig.lost is None:
        pytest.skip("this adapter's client does not retry: no answer to lose")
    return rig.lost


# --- Rows and reads -----------------------------------------------------------------------


def test_round_trip_keeps_types(store: Store) -> None:
    row = {
        "pk": "P",
        "sk": "A",
        "n": 3,
        "f": 0.25,
        "b": True,
        "blob": b"\x00\x01",
        "list": [1, "x"],
        "map": {"k": None, "v": [2]},
        "text": "Zürich 東京 🌍",
        "none": None,
    }
    store.write([Put(row)])
    assert store.get("P", "A") == {
        "pk": "P",
        "sk": "A",
        "n": 3,
        "f": 0.25,
        "b": True,
        "blob": b"\x00\x01",
        "list": [1, "x"],
        "map": {"k": None, "v": [2]},
        "text": "Zürich 東京 🌍",
    }
    assert store.get("P", "missing") is None


def test_update_sets_removes_and_adds(store: Store) -> None:
    store.write([Put({"pk": "P", "sk": "A", "x": "y", "count": 1})])
    store.write([Update("P", "A", set={"x": None, "z": [1]}, add={"count": 2, "new": 5})])
    assert store.get("P", "A") == {"pk": "P", "sk": "A", "z": [1], "count": 3, "new": 5}
    # An update of a missing row creates it.
    store.write([Update("P", "B", add={"count": 1})])
    assert store.get("P", "B") == {"pk": "P", "sk": "B", "count": 1}


def test_get_many_skips_missing_and_repeated_keys(store: Store) -> None:
    for i in range(3):
        store.write([Put({"pk": "P", "sk": f"S{i}", "i": i})])
    found = store.get_many([("P", "S0"), ("P", "S2"), ("P", "nope"), ("P", "S0")])
    assert sorted(r["i"] for r in found) == [0, 2]
    assert store.get_many([]) == []


def test_get_many_reads_more_than_one_batch(store: Store) -> None:
    store.write([Put({"pk": "P", "sk": f"S{i:03d}", "i": i}) for i in range(100)])
    store.write([Put({"pk": "P", "sk": f"S{i:03d}", "i": i}) for i in range(100, 150)])
    found = store.get_many([("P", f"S{i:03d}") for i in range(150)])
    assert sorted(r["i"] for r in found) == list(range(150))


def test_query_ranges_order_and_pages(store: Store) -> None:
    rows = [{"pk": "P", "sk": f"MEM#{i:03d}", "i": i} for i in range(25)]
    rows += [{"pk": "P", "sk": "META"}, {"pk": "P", "sk": "ITEM#001"}, {"pk": "P", "sk": "Z"}]
    rows += [{"pk": "Q", "sk": "MEM#000"}]
    for row in rows:
        store.write([Put(row)])

    everything = store.query("P")
    assert [r["sk"] for r in everything.records] == sorted(str(r["sk"]) for r in rows[:-1])
    assert everything.next is None

    # Both bounds are inclusive.
    pool = store.query("P", KeyRange(low="MEM#", high="META"))
    assert [r["sk"] for r in pool.records] == [f"MEM#{i:03d}" for i in range(25)] + ["META"]

    seen, after = [], None
    while True:
        page = store.query("P", KeyRange(prefix="MEM#"), limit=10, after=after, newest_first=True)
        assert len(page.records) <= 10
        seen += [r["i"] for r in page.records]
        if page.next is None:
            break
        after = page.next
    assert seen == list(range(24, -1, -1))

    forward = store.query("P", KeyRange(prefix="MEM#"), limit=3, after="MEM#010")
    assert [r["i"] for r in forward.records] == [11, 12, 13]

    # A page that ends exactly at the last row says there is no more.
    exact = store.query("P", KeyRange(prefix="MEM#"), limit=25)
    assert len(exact.records) == 25
    assert exact.next is None
    assert store.query("P", KeyRange(prefix="NOPE")).records == []


def test_records_never_show_the_writer_token(store: Store) -> None:
    store.write([Put({"pk": "P", "sk": "A", "text": "1"}, Absent())])
    store.write([Update("P", "B", set={"text": "2"})])
    store.write([Put({"pk": "P", "sk": "C"}), Update("P", "D", add={"n": 1})])
    found = [
        store.get("P", "A"),
        *store.get_many([("P", "B"), ("P", "C")]),
        *store.query("P").records,
    ]
    assert len(found) == 7
    assert all(record is not None and WRITER_ATTRIBUTE not in record for record in found)


def test_a_record_may_not_use_the_writer_attribute(store: Store) -> None:
    with pytest.raises(ValueError, match=WRITER_ATTRIBUTE):
        store.write([Put({"pk": "P", "sk": "A", WRITER_ATTRIBUTE: "mine"})])
    with pytest.raises(ValueError, match=WRITER_ATTRIBUTE):
        store.write([Update("P", "A", set={WRITER_ATTRIBUTE: "mine"})])
    assert store.get("P", "A") is None


def test_an_update_may_not_move_a_row_nor_add_anything_but_a_number(store: Store) -> None:
    with pytest.raises(ValueError, match="pk or sk"):
        store.write([Put({"pk": "P", "sk": "C"}), Update("P", "A", set={"sk": "Z"})])
    with pytest.raises(ValueError, match="only a number"):
        store.write([Update("P", "A", add={"n": "1"})])  # type: ignore[dict-item]
    assert store.query("P").records == []


# --- Conditions ---------------------------------------------------------------------------

ABSENT = None
NO_ATTRIBUTE: dict[str, Any] = {}

# (condition, the row's attributes before the write or ABSENT, whether the condition holds)
CONDITIONS: list[tuple[Condition, dict[str, Any] | None, bool]] = [
    (Absent(), ABSENT, True),
    (Absent(), {"n": 5}, False),
    (Present(), ABSENT, False),
    (Present(), NO_ATTRIBUTE, True),
    (Equals("n", 5), {"n": 5}, True),
    (Equals("n", 5), {"n": 4}, False),
    (Equals("n", 5), NO_ATTRIBUTE, False),
    (Equals("n", 5), ABSENT, False),
    (Equals("status", "running"), {"status": "running"}, True),
    (AbsentOrEquals("n", 0), ABSENT, True),
    (AbsentOrEquals("n", 5), {"n": 5}, True),
    (AbsentOrEquals("n", 5), {"n": 4}, False),
    (AbsentOrEquals("n", 5), NO_ATTRIBUTE, False),
    (LessThan("n", 5), {"n": 4}, True),
    (LessThan("n", 5), {"n": 5}, False),
    (LessThan("n", 5), NO_ATTRIBUTE, False),
    (LessThan("n", 5), ABSENT, False),
    (LessThan("until", "2026-01-02"), {"until": "2026-01-01T23:59:59Z"}, True),
    (LessThan("until", "2026-01-02"), {"until": "2026-01-02"}, False),
    (AtMost("n", 5), {"n": 5}, True),
    (AtMost("n", 5), {"n": 6}, False),
    (AtMost("spent", 1.5), {"spent": 1.25}, True),
    (AtMost("n", 5), ABSENT, False),
    (AbsentOrLessThan("until", 100), ABSENT, True),
    (AbsentOrLessThan("until", 100), {"until": 99}, True),
    (AbsentOrLessThan("until", 100), {"until": 100}, False),
    (AbsentOrLessThan("until", 100), NO_ATTRIBUTE, False),
    (LessThan("blob", b"\x02"), {"blob": b"\x01"}, True),
]


def _case_id(case: tuple[Condition, dict[str, Any] | None, bool]) -> str:
    condition, row, holds = case
    state = "absent" if row is None else ",".join(f"{k}={v}" for k, v in row.items()) or "row"
    return f"{condition!r}-on-{state}-{'holds' if holds else 'fails'}"


def _writes(condition: Condition, pk: str = "P") -> dict[str, list[Action]]:
    """Each kind of write of row (pk, A) under `condition` (a check writes row (pk, B))."""
    return {
        "put": [Put({"pk": pk, "sk": "A", "written": 1}, condition)],
        "update": [Update(pk, "A", set={"written": 1}, condition=condition)],
        "delete": [Delete(pk, "A", condition)],
        "check": [Check(pk, "A", condition), Put({"pk": pk, "sk": "B", "written": 1})],
    }


KINDS = ("put", "update", "delete", "check")


@pytest.mark.parametrize("case", CONDITIONS, ids=[_case_id(c) for c in CONDITIONS])
def test_every_condition_on_every_kind_of_write(
    store: Store, case: tuple[Condition, dict[str, Any] | None, bool]
) -> None:
    condition, attributes, holds = case
    for kind in KINDS:  # one partition each: one table set-up for the four
        before = None if attributes is None else {"pk": kind, "sk": "A", **attributes}
        if before is not None:
            store.write([Put(before)])
        actions = _writes(condition, kind)[kind]
        if not holds:
            with pytest.raises(WriteConflict) as failure:
                store.write(actions)
            assert failure.value.index == 0, kind
            assert store.get(kind, "A") == before, kind
            assert store.get(kind, "B") is None, kind
            continue
        store.write(actions)
        after = store.get(kind, "A")
        if kind == "put":
            assert after == {"pk": kind, "sk": "A", "written": 1}
        elif kind == "update":
            assert after == {**(before or {"pk": kind, "sk": "A"}), "written": 1}
        elif kind == "delete":
            assert after is None
        else:
            assert after == before
            assert store.get(kind, "B") == {"pk": kind, "sk": "B", "written": 1}


def test_conditions_take_their_value_positionally_and_a_name_by_keyword() -> None:
    assert Equals("revision", 3) == Equals("revision", 3, name=None)
    assert AbsentOrEquals("position", 0).name is None
    assert AtMost("spent", 10, name="budget").name == "budget"
    assert Absent(name="new") != Absent()
    with pytest.raises(TypeError):
        Equals("revision", 3, "a name")  # type: ignore[misc]


# --- Conflicts ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS[:3])
def test_a_single_write_names_its_failed_condition(store: Store, kind: str) -> None:
    store.write([Put({"pk": "P", "sk": "A", "spent": 12})])
    budget = AtMost("spent", 10, name="budget")
    actions = _writes(budget)[kind]
    with pytest.raises(WriteConflict) as failure:
        store.write(actions)
    assert (failure.value.index, failure.value.condition) == (0, "budget")
    unnamed = _writes(AtMost("spent", 10))[kind]
    with pytest.raises(WriteConflict) as failure:
        store.write(unnamed)
    assert (failure.value.index, failure.value.condition) == (0, None)
    assert store.get("P", "A") == {"pk": "P", "sk": "A", "spent": 12}


def test_a_failed_transaction_writes_nothing_and_names_the_failed_condition(
    store: Store,
) -> None:
    store.write([Put({"pk": "P", "sk": "META", "revision": 5})])
    with pytest.raises(WriteConflict) as failure:
        store.write(
            [
                Put({"pk": "P", "sk": "MEM#a", "content": "new"}, Absent(name="new-entry")),
                Update(
                    "P",
                    "META",
                    set={"revision": 6},
                    condition=Equals("revision", 4, name="revision"),
                ),
                Check("P", "LEASE", AbsentOrLessThan("until", 100, name="lease")),
            ]
        )
    assert (failure.value.index, failure.value.condition) == (1, "revision")
    assert store.get("P", "MEM#a") is None
    assert store.get("P", "META") == {"pk": "P", "sk": "META", "revision": 5}


def test_the_first_failed_condition_of_a_transaction_is_named(store: Store) -> None:
    store.write([Put({"pk": "P", "sk": "A", "n": 1}), Put({"pk": "P", "sk": "B", "n": 1})])
    with pytest.raises(WriteConflict) as failure:
        store.write(
            [
                Put({"pk": "P", "sk": "C"}),
                Check("P", "A", Equals("n", 2, name="first")),
                Update("P", "B", add={"n": 1}, condition=Absent(name="second")),
            ]
        )
    assert (failure.value.index, failure.value.condition) == (1, "first")
    assert store.get("P", "C") is None
    assert store.get("P", "B") == {"pk": "P", "sk": "B", "n": 1}


def test_a_transaction_applies_every_action_when_every_condition_holds(store: Store) -> None:
    store.write([Put({"pk": "P", "sk": "META", "revision": 5}), Put({"pk": "P", "sk": "OLD"})])
    store.write(
        [
            Check("P", "META", Equals("revision", 5)),
            Put({"pk": "P", "sk": "MEM#a", "content": "new"}, Absent()),
            Update("P", "BUDGET", add={"spent": 3}, condition=AbsentOrLessThan("spent", 8)),
            Delete("P", "OLD", Present()),
        ]
    )
    assert store.get("P", "MEM#a") == {"pk": "P", "sk": "MEM#a", "content": "new"}
    assert store.get("P", "BUDGET") == {"pk": "P", "sk": "BUDGET", "spent": 3}
    assert store.get("P", "OLD") is None


def test_one_transaction_touches_a_row_once(store: Store) -> None:
    # DynamoDB refuses two actions on one item in a transaction; every adapter does.
    with pytest.raises(ValueError, match="once"):
        store.write([Check("P", "META", Present()), Update("P", "META", set={"x": 1})])
    assert store.get("P", "META") is None


def test_transactions_over_one_hundred_actions_are_refused(store: Store) -> None:
    with pytest.raises(TooLarge):
        store.write([Put({"pk": "P", "sk": f"R{i:03d}"}) for i in range(101)])
    assert store.query("P").records == []
    store.write([Put({"pk": "P", "sk": f"R{i:03d}"}) for i in range(100)])
    assert len(store.query("P").records) == 100


# --- Retries: a lost answer after a commit ------------------------------------------------

META = {"pk": "P", "sk": "META", "rev": 1}

# name: (rows before, the write, rows after it applied once)
LOST_AFTER_COMMIT: dict[str, tuple[list[dict[str, Any]], list[Action], dict[str, Any]]] = {
    "put": (
        [],
        [Put({"pk": "P", "sk": "A", "n": 1}, Absent(name="new"))],
        {"A": {"pk": "P", "sk": "A", "n": 1}},
    ),
    "update": (
        [META],
        [Update("P", "META", set={"rev": 2}, add={"count": 1}, condition=Equals("rev", 1))],
        {"META": {"pk": "P", "sk": "META", "rev": 2, "count": 1}},
    ),
    "unconditional-update": (
        [META],
        [Update("P", "META", add={"count": 1})],
        {"META": {"pk": "P", "sk": "META", "rev": 1, "count": 1}},
    ),
    "delete": ([META], [Delete("P", "META", Equals("rev", 1, name="rev"))], {"META": None}),
    "transaction": (
        [META],
        [
            Update("P", "META", set={"rev": 2}, condition=Equals("rev", 1, name="rev")),
            Put({"pk": "P", "sk": "ITEM#1", "text": "hi"}, Absent(name="new-item")),
            Update("P", "BUDGET", add={"spent": 3}, condition=AbsentOrLessThan("spent", 8)),
        ],
        {
            "META": {"pk": "P", "sk": "META", "rev": 2},
            "ITEM#1": {"pk": "P", "sk": "ITEM#1", "text": "hi"},
            "BUDGET": {"pk": "P", "sk": "BUDGET", "spent": 3},
        },
    ),
    "transaction-of-deletes": (
        [META, {"pk": "P", "sk": "OLD"}],
        [Delete("P", "META", Equals("rev", 1)), Delete("P", "OLD", Present())],
        {"META": None, "OLD": None},
    ),
}


@pytest.mark.parametrize("name", list(LOST_AFTER_COMMIT))
def test_a_write_whose_answer_was_lost_after_it_committed_answers_success(
    rig: StoreRig, name: str
) -> None:
    lost = _lost(rig)
    before, write, after = LOST_AFTER_COMMIT[name]
    for row in before:
        rig.store.write([Put(row)])
    lost.attempts.clear()
    lost.lose_next()
    rig.store.write(write)  # no WriteConflict: the retry met the write's own commit
    assert len(lost.attempts) == 2, "the SDK did not retry: nothing was proven"
    for sk, row in after.items():
        assert rig.store.get("P", sk) == row  # applied once


@pytest.mark.parametrize("kind", KINDS)
def test_a_retried_write_that_meets_another_writers_row_is_still_a_conflict(
    rig: StoreRig, kind: str
) -> None:
    lost = _lost(rig)
    rig.store.write([Put({"pk": "P", "sk": "A", "rev": 2})])
    actions = _writes(Equals("rev", 1, name="rev"))[kind]
    lost.attempts.clear()
    lost.lose_next(also_failures=True)
    with pytest.raises(WriteConflict) as failure:
        rig.store.write(actions)
    assert len(lost.attempts) == 2
    assert (failure.value.index, failure.value.condition) == (0, "rev")
    assert rig.store.get("P", "A") == {"pk": "P", "sk": "A", "rev": 2}
