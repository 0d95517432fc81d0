"""What only the DynamoDB store adapter does: the writer token in the table, requests that
can be retried, and DynamoDB's errors as domain errors. The Store contract itself (reads,
conditions, transactions, lost answers) is tests/contracts/test_store_contract.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.config import Config
from botocore.stub import Stubber

from agent_memory.adapters.dynamodb.store import DynamoStore
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.ports.store import (
    WRITER_ATTRIBUTE,
    Absent,
    AtMost,
    Check,
    Delete,
    Present,
    Put,
    Update,
)
from tests.support.store import LostAnswers


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
        store.write([Put({"pk": "P", "sk": "A"}), Check("P", "B", Present(name="exists"))])
    assert (failure.value.index, failure.value.condition) == (1, "exists")


def test_a_concurrent_transaction_is_a_conflict(local_aws) -> None:
    store, stub = _stubbed(local_aws)
    stub.add_client_error(
        "transact_write_items",
        service_error_code="TransactionCanceledException",
        modeled_fields={"CancellationReasons": [{"Code": "TransactionConflict"}, {"Code": "None"}]},
    )
    with stub, pytest.raises(WriteConflict) as failure:
        store.write([Put({"pk": "P", "sk": "A"}), Check("P", "B", Present(name="exists"))])
    assert (failure.value.index, failure.value.condition) == (None, None)


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


# --- The writer token -------------------------------------------------------------------


def _sent(session: Any) -> list[dict[str, Any]]:
    """The JSON body of every DynamoDB request attempt made through `session`'s clients."""
    bodies: list[dict[str, Any]] = []
    session._session.register(
        "before-send.dynamodb", lambda request, **_: bodies.append(json.loads(request.body))
    )
    return bodies


def _raw(session: Any, table: str, pk: str, sk: str) -> dict[str, Any]:
    key = {"pk": {"S": pk}, "sk": {"S": sk}}
    return dict(session.client("dynamodb").get_item(TableName=table, Key=key)["Item"])


def test_every_row_a_write_makes_carries_that_writes_token(local_aws) -> None:
    session, local = local_aws
    sent = _sent(session)
    store = DynamoStore(session.client("dynamodb"), local.table_name)
    store.write([Put({"pk": "P", "sk": "A"})])
    store.write([Update("P", "B", add={"n": 1}), Put({"pk": "P", "sk": "C"}, Absent())])
    single, transaction = sent
    tokens = {sk: _raw(session, local.table_name, "P", sk)[WRITER_ATTRIBUTE]["S"] for sk in "ABC"}
    assert tokens["B"] == tokens["C"] == transaction["ClientRequestToken"]
    assert tokens["A"] != tokens["B"]
    assert single["Item"][WRITER_ATTRIBUTE] == {"S": tokens["A"]}
    # Each put or update refuses a row its own write made, and asks for the row on failure.
    for request in (single, *(next(iter(i.values())) for i in transaction["TransactItems"])):
        assert WRITER_ATTRIBUTE in request["ExpressionAttributeNames"].values()
        assert request["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"


def test_a_retried_transaction_sends_the_same_request_token(local_aws) -> None:
    """Real DynamoDB answers a retry with the same token without applying it again."""
    session, local = local_aws
    sent = _sent(session)
    client = session.client("dynamodb", config=Config(retries={"mode": "standard"}))
    lost = LostAnswers(client)
    store = DynamoStore(client, local.table_name)
    lost.lose_next()
    store.write([Put({"pk": "P", "sk": "A"}), Delete("P", "B")])
    first, retry = (body["ClientRequestToken"] for body in sent)
    assert first == retry


def test_a_delete_that_finds_no_row_on_its_first_attempt_is_a_conflict(local_aws) -> None:
    """Only a retried delete may take a missing row for its own earlier attempt."""
    session, local = local_aws
    store = DynamoStore(session.client("dynamodb"), local.table_name)
    with pytest.raises(WriteConflict) as failure:
        store.write([Delete("P", "A", Present(name="exists"))])
    assert failure.value.condition == "exists"
    with pytest.raises(WriteConflict):
        store.write([Delete("P", "A", Present()), Check("P", "B", Absent())])


def test_a_stubbed_single_write_conflict_names_its_condition(local_aws) -> None:
    store, stub = _stubbed(local_aws)
    stub.add_client_error(
        "update_item",
        service_error_code="ConditionalCheckFailedException",
        modeled_fields={"Item": {"pk": {"S": "P"}, "sk": {"S": "A"}, "spent": {"N": "11"}}},
    )
    with stub, pytest.raises(WriteConflict) as failure:
        store.write([Update("P", "A", add={"spent": 1}, condition=AtMost("spent", 9, name="b"))])
    assert (failure.value.index, failure.value.condition) == (0, "b")


# --- Under the fault injector (a read timeout after the table applied the write) ---------


@pytest.fixture
def injected(local_aws, monkeypatch: pytest.MonkeyPatch) -> tuple[DynamoStore, Any]:
    """(a DynamoStore with the service's retry policy, the fault injector under it)."""
    from types import SimpleNamespace

    import botocore.endpoint

    from tests.reliability.faults import FaultInjector

    session, local = local_aws
    faults = FaultInjector()
    faults.install(session._session)
    monkeypatch.setattr(botocore.endpoint, "time", SimpleNamespace(sleep=lambda _s: None))
    client = session.client("dynamodb", config=Config(retries={"mode": "standard"}))
    return DynamoStore(client, local.table_name), faults


@pytest.mark.parametrize(
    ("write", "after"),
    [
        (Put({"pk": "P", "sk": "A", "n": 2}, Absent()), {"pk": "P", "sk": "A", "n": 2}),
        (Update("P", "B", add={"n": 1}, condition=Present()), {"pk": "P", "sk": "B", "n": 2}),
        (Delete("P", "B", Present()), None),
    ],
    ids=["put", "update", "delete"],
)
def test_a_timed_out_attempt_that_was_applied_answers_success(
    injected: tuple[DynamoStore, Any], write: Any, after: Any
) -> None:
    from tests.reliability import faults as F

    store, faults = injected
    store.write([Put({"pk": "P", "sk": "B", "n": 1})])
    faults.reset()
    faults.arm(F.LOST_RESPONSE, call=0)
    store.write([write])
    assert len(faults.attempts) == 2
    key = (
        (write.record["pk"], write.record["sk"]) if isinstance(write, Put) else (write.pk, write.sk)
    )
    assert store.get(*key) == after


def test_a_throttled_first_attempt_does_not_excuse_a_delete_of_a_missing_row(
    injected: tuple[DynamoStore, Any],
) -> None:
    """A throttle is a refusal: the retry's failed condition is a real conflict."""
    from tests.reliability import faults as F

    store, faults = injected
    faults.arm(F.DDB_THROTTLED_ONCE, call=0)
    with pytest.raises(WriteConflict) as failure:
        store.write([Delete("P", "A", Present(name="exists"))])
    assert len(faults.attempts) == 2
    assert failure.value.condition == "exists"
