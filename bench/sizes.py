"""DynamoDB item sizes and the request units DynamoDB bills for them (its published rules)."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

from bench.timing import Emulator

READ_UNIT = 4096
WRITE_UNIT = 1024


_ESDK_V2 = b"\x02\x04\x78"  # message format 2, suite AES_256_GCM_HKDF_SHA512_COMMIT_KEY
# A sealed value is an Encryption SDK message whose header holds the data key as AWS KMS
# wrapped it. moto's GenerateDataKey answers a 96-byte CiphertextBlob for an AES_256 key;
# AWS KMS answers 167 bytes (the AWS CLI reference, `kms generate-data-key`, example 1:
# its CiphertextBlob decodes to 167 bytes; read 2026-12-02). Sizes are counted as in AWS.
_AWS_KMS_BLOB = 167


def _kms_blobs(message: bytes) -> list[int]:
    """Lengths of the KMS-wrapped data keys in an Encryption SDK message's header (format
    2: version, suite, 32-byte message id, the encryption context, the data keys)."""
    try:
        at = 35
        at += 2 + int.from_bytes(message[at : at + 2], "big")
        count = int.from_bytes(message[at : at + 2], "big")
        at += 2
        blobs = []
        for _ in range(count):
            fields = []
            for _part in range(3):
                length = int.from_bytes(message[at : at + 2], "big")
                fields.append(message[at + 2 : at + 2 + length])
                at += 2 + length
            if fields[0] == b"aws-kms":
                blobs.append(len(fields[2]))
        return blobs
    except (IndexError, ValueError):
        return []


def _binary_size(inner: bytes) -> int:
    """A binary value's size, a sealed one with AWS KMS's wrapped data keys (see above)."""
    size = len(inner)
    if inner[:3] == _ESDK_V2:
        size += sum(max(0, _AWS_KMS_BLOB - blob) for blob in _kms_blobs(inner))
    return size


def _value_size(value: Mapping[str, Any]) -> int:
    """Approximate stored size of one typed attribute value (DynamoDB's sizing rules)."""
    (kind, inner), *_ = value.items()
    if kind == "B":
        return _binary_size(bytes(inner))
    if kind == "S":
        return len(inner.encode() if isinstance(inner, str) else inner)
    if kind == "N":
        return len(str(inner)) // 2 + 2
    if kind in {"BOOL", "NULL"}:
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in inner)
    if kind in {"SS", "BS", "NS"}:
        return sum(len(str(v)) for v in inner)
    return 1


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes of an item in DynamoDB's low-level shape: attribute names plus values."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def request_units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


# A written item: (table, key in the low-level shape, times billed: 2 in a transaction,
# the size the request writes when the item is new: a Put's item, else 0).
Written = tuple[str, dict[str, Any], int, int]


def written_items(operation: str, body: Mapping[str, Any]) -> list[Written]:
    """The items a write request writes or deletes (a ConditionCheck writes none)."""
    table = str(body.get("TableName", ""))
    if operation == "PutItem":
        item = body.get("Item", {})
        return [(table, _key_of(item), 1, item_size(item))]
    if operation in {"UpdateItem", "DeleteItem"}:
        return [(table, dict(body.get("Key", {})), 1, 0)]
    if operation == "BatchWriteItem":
        found: list[Written] = []
        for name, rows in body.get("RequestItems", {}).items():
            for row in rows:
                if "PutRequest" in row:
                    item = row["PutRequest"]["Item"]
                    found.append((name, _key_of(item), 1, item_size(item)))
                else:
                    found.append((name, dict(row["DeleteRequest"]["Key"]), 1, 0))
        return found
    if operation == "TransactWriteItems":
        found = []
        for action in body.get("TransactItems", []):
            kind, inner = next(iter(action.items()))
            if kind == "Put":
                item = inner["Item"]
                found.append((str(inner["TableName"]), _key_of(item), 2, item_size(item)))
            elif kind in {"Update", "Delete"}:
                found.append((str(inner["TableName"]), dict(inner["Key"]), 2, 0))
        return found
    return []


def _key_of(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in ("pk", "sk") if k in item}


class ItemSizes:
    """Item sizes looked up in the embedded AWS with a client of its own (not counted, not
    hooked), for billing writes on the larger of the item before and after."""

    def __init__(self, region: str | None) -> None:
        self._region = region or "us-east-1"
        self._client: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def embedded() -> bool:
        """Whether moto's in-process mock is active (a lookup costs no real AWS call)."""
        import os

        return os.environ.get("AWS_ENDPOINT_URL") is None and _mock_active()

    def _get(self, table: str, key: dict[str, Any]) -> int:
        with Emulator.aside():  # the benchmark's own lookup: not the service's time
            return self._size(table, key)

    def _size(self, table: str, key: dict[str, Any]) -> int:
        with self._lock:
            if self._client is None:
                import boto3

                self._client = boto3.session.Session(region_name=self._region).client("dynamodb")
        try:
            item = self._client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        except Exception:
            return 0
        return item_size(item) if item else 0

    def size(self, table: str, key: dict[str, Any]) -> int:
        """An item's size now (0 when absent)."""
        return self._get(table, key)

    def before(self, written: list[Written]) -> list[int]:
        return [self._get(table, key) for table, key, _times, _new in written]

    def billed(self, written: list[Written], before: list[int]) -> float:
        """WRU of the items written: each on the larger of its size before and after."""
        units = 0.0
        for (table, key, times, new), old in zip(written, before, strict=True):
            after = self._get(table, key)
            units += times * request_units(max(old, after, 0 if after or old else new), WRITE_UNIT)
        return units


def _mock_active() -> bool:
    """moto's mock is patching botocore in this process (embedded_aws)."""
    try:
        from moto.core.models import botocore_stubber
    except ImportError:
        return False
    return bool(getattr(botocore_stubber, "enabled", False))


def json_copy(value: Any) -> Any:
    """A deep copy of request parameters (bytes stay bytes)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def write_units(operation: str, body: Mapping[str, Any]) -> float:
    """WRU of one request, estimated from what it writes (a transaction's twice)."""
    if operation == "PutItem":
        return request_units(item_size(body.get("Item", {})), WRITE_UNIT)
    if operation in {"UpdateItem", "DeleteItem"}:
        return request_units(_update_size(body), WRITE_UNIT)
    if operation == "BatchWriteItem":
        requests = [r for rows in body.get("RequestItems", {}).values() for r in rows]
        return sum(
            request_units(item_size(r["PutRequest"]["Item"]), WRITE_UNIT)
            if "PutRequest" in r
            else 1
            for r in requests
        )
    if operation == "TransactWriteItems":
        units = 0.0
        for action in body.get("TransactItems", []):
            if "Put" in action:
                units += 2 * request_units(item_size(action["Put"]["Item"]), WRITE_UNIT)
            elif "Update" in action or "Delete" in action:
                units += 2 * request_units(_update_size(next(iter(action.values()))), WRITE_UNIT)
        return units  # a ConditionCheck writes nothing: `checked_items` bills its read
    return 0.0


def checked_items(operation: str, body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The items a transaction's ConditionChecks read: each a transactional read, 2 RRU per
    4 KB of the item ("reads for condition checks, writes for mutations")."""
    if operation != "TransactWriteItems":
        return []
    return [
        (str(action["ConditionCheck"]["TableName"]), dict(action["ConditionCheck"]["Key"]))
        for action in body.get("TransactItems", [])
        if "ConditionCheck" in action
    ]


def _update_size(request: Mapping[str, Any]) -> int:
    values = request.get("ExpressionAttributeValues", {})
    return item_size(request.get("Key", {})) + sum(_value_size(v) for v in values.values())
