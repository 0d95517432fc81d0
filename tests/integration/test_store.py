"""The DynamoDB store adapter on the embedded AWS: conditions, transactions, pagination."""

from __future__ import annotations

import pytest
from botocore.stub import Stubber

from agent_memory.adapters.dynamodb import DynamoStore
from agent_memory.adapters.in_memory import InMemoryStore
from agent_memory.domain.errors import TooLarge, Unavailable, WriteConflict
from agent_memory.ports import (
    Absent,
    AbsentOrEquals,
    Check,
    Delete,
    Equals,
    KeyRange,
    Present,
    Put,
    Update,
)


@pytest.fixture(params=["dynamodb", "in_memory"])
def store(request: pytest.FixtureRequest, local_aws):
    """The same contract holds for the real adapter and the unit-test fake."""
    if request.param == "in_memory":
        return InMemoryStore()
    session, local = local_aws
    return DynamoStore(session.client("dynamodb"), local.table_name)


def test_round_trip_keeps_types(store) -> None:
    row = {
        "pk": "P",
        "sk": "A",
        "n": 3,
        "f": 0.25,
        "b": True,
        "blob": b"\x00\x01",
        "list": [1, "x"],
        "map": {"k": None, "v": [2]},
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
    }
    assert store.get("P", "missing") is None


def test_conditional_put_and_update(store) -> None:
    store.write([Put({"pk": "P", "sk": "META", "rev": 1}, Absent())])
    with pytest.raises(WriteConflict):
        store.write([Put({"pk": "P", "sk": "META", "rev": 9}, Absent())])
    store.write([Update("P", "META", set={"rev": 2, "x": "y"}, condition=Equals("rev", 1))])
    with pytest.raises(WriteConflict):
        store.write([Update("P", "META", set={"rev": 3}, condition=Equals("rev", 1))])
    store.write([Update("P", "META", set={"x": None}, add={"count": 2})])
    assert store.get("P", "META") == {"pk": "P", "sk": "META", "rev": 2, "count": 2}
    store.write([Update("Q", "META", set={"rev": 1}, condition=AbsentOrEquals("rev", 0))])
    store.write([Update("Q", "META", set={"rev": 2}, condition=AbsentOrEquals("rev", 1))])
    with pytest.raises(WriteConflict):
        store.write([Delete("Q", "META", Equals("rev", 1))])


def test_a_failed_transaction_writes_nothing_and_names_the_failing_action(store) -> None:
    store.write([Put({"pk": "P", "sk": "META", "revision": 5})])
    with pytest.raises(WriteConflict) as failure:
        store.write(
            [
                Put({"pk": "P", "sk": "MEM#a", "content": "new"}),
                Update("P", "META", set={"revision": 6}, condition=Equals("revision", 4)),
            ]
        )
    assert failure.value.index == 1
    assert store.get("P", "MEM#a") is None
    assert store.get("P", "META")["revision"] == 5

    store.write(
        [
            Check("P", "META", Equals("revision", 5)),
            Put({"pk": "P", "sk": "MEM#a", "content": "new"}, Absent()),
            Update("P", "OTHER", set={"revision": 6}, condition=Absent()),
        ]
    )
    assert store.get("P", "OTHER")["revision"] == 6


def test_one_transaction_touches_a_row_once(store) -> None:
    # DynamoDB refuses two actions on one item in a transaction; the fake must too.
    with pytest.raises(Exception, match=r"one item|once"):
        store.write([Check("P", "META", Present()), Update("P", "META", set={"x": 1})])


def test_transactions_over_one_hundred_actions_are_refused(store) -> None:
    with pytest.raises(TooLarge):
        store.write([Put({"pk": "P", "sk": f"R{i:03d}"}) for i in range(101)])
    assert store.query("P").records == []


def test_query_ranges_order_and_pages(store) -> None:
    rows = [{"pk": "P", "sk": f"MEM#{i:03d}", "i": i} for i in range(25)]
    rows += [{"pk": "P", "sk": "META"}, {"pk": "P", "sk": "ITEM#001"}, {"pk": "P", "sk": "Z"}]
    for row in rows:
        store.write([Put(row)])

    pool = store.query("P", KeyRange(low="MEM#", high="META"))
    assert [r["sk"] for r in pool.records] == [f"MEM#{i:03d}" for i in range(25)] + ["META"]

    seen, after = [], None
    while True:
        page = store.query("P", KeyRange(prefix="MEM#"), limit=10, after=after, newest_first=True)
        seen += [r["i"] for r in page.records]
        if page.next is None:
            break
        after = page.next
    assert seen == list(range(24, -1, -1))

    # A page that ends exactly at the last row says there is no more.
    exact = store.query("P", KeyRange(prefix="MEM#"), limit=25)
    assert len(exact.records) == 25
    assert exact.next is None


def test_index_pages(store) -> None:
    for i in range(7):
        store.write(
            [Put({"pk": f"R{i}", "sk": "X", "gsi1pk": "ORG", "gsi1sk": f"{i % 3}#{i}", "i": i})]
        )
    order, after = [], None
    while True:
        page = store.query("ORG", index="gsi1", limit=3, after=after, newest_first=True)
        order += [r["i"] for r in page.records]
        if page.next is None:
            break
        after = page.next
    assert order == [5, 2, 4, 1, 6, 3, 0]


def test_get_many_skips_missing_rows(store) -> None:
    for i in range(3):
        store.write([Put({"pk": "P", "sk": f"S{i}", "i": i})])
    found = store.get_many([("P", "S0"), ("P", "S2"), ("P", "nope"), ("P", "S0")])
    assert sorted(r["i"] for r in found) == [0, 2]


def _stubbed(local_aws) -> tuple[DynamoStore, Stubber]:
    session, local = local_aws
    client = session.client("dynamodb")
    return DynamoStore(client, local.table_name), Stubber(client)


def test_a_cancelled_transaction_maps_conditions_to_conflicts(local_aws) -> None:
    store, stub = _stubbed(local_aws)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        response_meta={},
        modeled_fields={
            "CancellationReasons": [{"Code": "None"}, {"Code": "ConditionalCheckFailed"}]
        },
    )
    with stub, pytest.raises(WriteConflict) as failure:
        store.write([Put({"pk": "P", "sk": "A"}), Check("P", "B", Present())])
    assert failure.value.index == 1


def test_a_concurrent_transaction_is_a_conflict(local_aws) -> None:
    store, stub = _stubbed(local_aws)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}]},
    )
    with stub, pytest.raises(WriteConflict):
        store.write([Put({"pk": "P", "sk": "A"}), Check("P", "B", Present())])


@pytest.mark.parametrize(
    ("method", "code"),
    [
        ("put_item", "ProvisionedThroughputExceededException"),
        ("put_item", "ThrottlingException"),
        ("get_item", "InternalServerError"),
    ],
)
def test_throttling_and_outages_are_unavailable(local_aws, method: str, code: str) -> None:
    store, stub = _stubbed(local_aws)
    stub.add_client_error(method, service_error_code=code)
    call = (
        (lambda: store.get("P", "A"))
        if method == "get_item"
        else (lambda: store.write([Put({"pk": "P", "sk": "A"})]))
    )
    with stub, pytest.raises(Unavailable):
        call()


def test_throttled_transaction_is_unavailable(local_aws) -> None:
    store, stub = _stubbed(local_aws)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [{"Code": "ThrottlingError"}, {"Code": "None"}]},
    )
    with stub, pytest.raises(Unavailable):
        store.write([Put({"pk": "P", "sk": "A"}), Put({"pk": "P", "sk": "B"})])
