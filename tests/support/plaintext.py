"""Every text stored anywhere, to check that content is never in it in the clear."""

from __future__ import annotations

import base64
from typing import Any


def all_text(value: Any) -> str:
    """Every string in a raw DynamoDB item, binary values decoded as UTF-8 and base64."""
    if isinstance(value, dict):
        return " ".join(all_text(v) for v in value.values())
    if isinstance(value, list):
        return " ".join(all_text(v) for v in value)
    if isinstance(value, bytes | bytearray):
        raw = bytes(value)
        return raw.decode("utf-8", "replace") + " " + base64.b64encode(raw).decode()
    return str(value)


def scan_rows(local_aws: Any) -> list[Any]:
    session, local = local_aws
    dynamodb = session.client("dynamodb")
    items: list[Any] = []
    scan: dict[str, Any] = {"TableName": local.table_name}
    while True:
        page = dynamodb.scan(**scan)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]
