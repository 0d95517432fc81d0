"""The cost model sizes a sealed value as AWS stores it: moto's KMS wraps a data key in a
shorter blob than AWS KMS, and a write unit is billed per KB of the item (issue 19)."""

from __future__ import annotations

import boto3
from moto import mock_aws

from agent_memory.adapters.kms import KmsCipher
from bench.support import item_size


def test_a_sealed_value_is_sized_with_aws_kms_wrapped_data_key() -> None:
    with mock_aws():
        key = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["Arn"]
        sealed = KmsCipher(key).seal("words", scope={"org": "o", "pool": "p"}, row="r")
    plain = {"pk": {"S": "P"}, "text": {"B": b"x" * len(sealed)}}
    assert item_size({"pk": {"S": "P"}, "text": {"B": sealed}}) == item_size(plain) + 167 - 96
