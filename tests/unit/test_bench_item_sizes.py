"""The cost model sizes a sealed value as AWS stores it: moto's KMS wraps a data key in a
shorter blob than AWS KMS, and a write unit is billed per KB of the item."""

from __future__ import annotations

import boto3
from moto import mock_aws

from agent_memory.adapters.kms import KmsCipher
from bench.sizes import item_size


def test_a_sealed_value_is_sized_with_aws_kms_wrapped_data_key() -> None:
    with mock_aws():
        key = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["Arn"]
        sealed = KmsCipher(key).seal("words", scope={"org": "o", "pool": "p"}, row="r")
    plain = {"pk": {"S": "P"}, "text": {"B": b"x" * len(sealed)}}
    assert item_size({"pk": {"S": "P"}, "text": {"B": sealed}}) == item_size(plain) + 167 - 96


def test_a_condition_check_is_billed_as_a_transactional_read_not_a_write() -> None:
    from botocore.session import Session

    from bench.counting import AwsCalls

    with mock_aws():
        session = Session()
        session.set_config_variable("region", "us-east-1")
        calls = AwsCalls().install(session)
        db = session.create_client("dynamodb", region_name="us-east-1")
        db.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        db.put_item(TableName="t", Item={"pk": {"S": "head"}})
        calls.reset()
        db.transact_write_items(
            TransactItems=[
                {
                    "ConditionCheck": {
                        "TableName": "t",
                        "Key": {"pk": {"S": "head"}},
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "new"}}}},
            ]
        )
        shot = calls.snapshot()
    assert (shot["wru_estimate"], shot["rru_estimate"]) == (2.0, 2.0)
