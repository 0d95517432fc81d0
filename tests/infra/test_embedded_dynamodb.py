"""The embedded DynamoDB (infra/local/aws.py) answers a Query as moto does, at the cost of
the partition it reads: the suite's shared apps hold thousands of rows, and a query that
walked them all made each request slower than the last."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from moto.dynamodb.models.dynamo_type import DynamoType

from infra.local.aws import create_table, embedded_aws


@pytest.fixture(scope="module")
def table() -> Iterator[tuple[Any, str]]:
    with embedded_aws() as session:
        client = session.client("dynamodb")
        name = create_table(session)
        for pk, count in (("small", 3), ("large", 400)):
            for n in range(count):
                item = {"pk": {"S": pk}, "sk": {"S": f"S#{n:04d}"}, "n": {"N": str(n)}}
                client.put_item(TableName=name, Item=item)
        yield client, name


def _query(client: Any, name: str, **extra: Any) -> list[dict[str, Any]]:
    return client.query(
        TableName=name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "small"}},
        **extra,
    )["Items"]


def test_a_query_compares_only_its_partitions_rows(
    table: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, name = table
    compared = 0
    equal = DynamoType.__eq__
    mine = threading.get_ident()  # the embedded moto answers in the calling thread

    def counting(self: DynamoType, other: Any) -> bool:
        nonlocal compared
        compared += threading.get_ident() == mine
        return equal(self, other)

    monkeypatch.setattr(DynamoType, "__eq__", counting)
    assert [item["sk"]["S"] for item in _query(client, name)] == ["S#0000", "S#0001", "S#0002"]
    assert compared < 50  # the other partition's 400 rows are never looked at


def test_its_order_pages_and_counts_are_moto_s(table: tuple[Any, str]) -> None:
    client, name = table
    backwards = _query(client, name, ScanIndexForward=False, Limit=2)
    assert [item["sk"]["S"] for item in backwards] == ["S#0002", "S#0001"]
    answer = client.query(
        TableName=name,
        KeyConditionExpression="pk = :pk AND sk > :after",
        ExpressionAttributeValues={":pk": {"S": "large"}, ":after": {"S": "S#0397"}},
        Limit=1,
    )
    assert answer["Count"] == 1
    assert answer["LastEvaluatedKey"] == {"pk": {"S": "large"}, "sk": {"S": "S#0398"}}
