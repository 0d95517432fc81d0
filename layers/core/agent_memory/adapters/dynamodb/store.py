"""The single table over DynamoDB: typed rows in, plain rows out, conflicts as domain errors."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from agent_memory.domain.errors import TooLarge, Unavailable, WriteConflict
from agent_memory.ports import (
    Absent,
    AbsentOrEquals,
    Action,
    Check,
    Condition,
    Delete,
    Equals,
    KeyRange,
    Page,
    Present,
    Put,
    Record,
    Update,
)

MAX_TRANSACTION_ACTIONS = 100
_TRANSIENT = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "LimitExceededException",
}
_INDEX_KEYS = {"gsi1": ("gsi1pk", "gsi1sk")}
_SMALLEST = 1e-130  # the smallest positive number DynamoDB keeps

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, float):
        # DynamoDB numbers stop at 1e-130: a smaller magnitude is kept as 0, not refused.
        return Decimal(repr(value)) if not 0 < abs(value) < _SMALLEST else Decimal(0)
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_dynamo(v) for v in value]
    return value


def _from_dynamo(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Binary):
        return bytes(value.value)
    if isinstance(value, dict):
        return {k: _from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_dynamo(v) for v in value]
    if isinstance(value, set):
        return sorted(_from_dynamo(v) for v in value)
    return value


def serialize(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(_to_dynamo(v)) for k, v in record.items() if v is not None}


def deserialize(item: Mapping[str, Any]) -> Record:
    return {k: _from_dynamo(_deserializer.deserialize(v)) for k, v in item.items()}


class _Expression:
    """Collects placeholder names and values for one request."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attribute
        return placeholder

    def value(self, value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = _serializer.serialize(_to_dynamo(value))
        return placeholder

    def condition(self, condition: Condition) -> str:
        match condition:
            case Absent():
                return f"attribute_not_exists({self.name('pk')})"
            case Present():
                return f"attribute_exists({self.name('pk')})"
            case Equals(attribute, value):
                return f"{self.name(attribute)} = {self.value(value)}"
            case AbsentOrEquals(attribute, value):
                pk = self.name("pk")
                return (
                    f"(attribute_not_exists({pk}) OR {self.name(attribute)} = {self.value(value)})"
                )
        raise TypeError(condition)  # pragma: no cover

    def attach(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.names:
            request["ExpressionAttributeNames"] = self.names
        if self.values:
            request["ExpressionAttributeValues"] = self.values
        return request


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


class DynamoStore:
    """`ports.Store` over one DynamoDB table (keys `pk`/`sk`, index `gsi1`)."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name

    # -- reads ---------------------------------------------------------------------------

    def get(self, pk: str, sk: str) -> Record | None:
        response = self._call(
            "get_item", TableName=self._table, Key=_key(pk, sk), ConsistentRead=True
        )
        item = response.get("Item")
        return deserialize(item) if item else None

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        records: list[Record] = []
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 100):
            request: dict[str, Any] = {
                self._table: {
                    "Keys": [_key(pk, sk) for pk, sk in unique[start : start + 100]],
                    "ConsistentRead": True,
                }
            }
            while request:
                response = self._call("batch_get_item", RequestItems=request)
                records.extend(deserialize(i) for i in response["Responses"].get(self._table, []))
                request = response.get("UnprocessedKeys") or {}
        return records

    def query(
        self,
        pk: str,
        key_range: KeyRange | None = None,
        *,
        limit: int | None = None,
        after: str | None = None,
        newest_first: bool = False,
        index: str | None = None,
    ) -> Page:
        pk_name, sk_name = _INDEX_KEYS[index] if index else ("pk", "sk")
        expr = _Expression()
        key_condition = f"{expr.name(pk_name)} = {expr.value(pk)}"
        if key_range is not None:
            if key_range.prefix is not None:
                key_condition += (
                    f" AND begins_with({expr.name(sk_name)}, {expr.value(key_range.prefix)})"
                )
            elif key_range.low is not None and key_range.high is not None:
                key_condition += (
                    f" AND {expr.name(sk_name)} BETWEEN {expr.value(key_range.low)}"
                    f" AND {expr.value(key_range.high)}"
                )
        request = expr.attach(
            {
                "TableName": self._table,
                "KeyConditionExpression": key_condition,
                "ScanIndexForward": not newest_first,
            }
        )
        if index:
            request["IndexName"] = index
        else:
            request["ConsistentRead"] = True
        if after:
            request["ExclusiveStartKey"] = self._decode_cursor(after, pk, index)
        records: list[Record] = []
        scanned = 0
        # Ask for one row more than wanted: it tells whether another page exists
        # without a second request that would come back empty.
        wanted = None if limit is None else limit + 1
        while True:
            if wanted is not None:
                request["Limit"] = wanted - len(records)
            response = self._call("query", **request)
            scanned += int(response.get("ScannedCount", 0))
            records.extend(deserialize(i) for i in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last or (wanted is not None and len(records) >= wanted):
                break
            request["ExclusiveStartKey"] = last
        if limit is not None and len(records) > limit:
            records = records[:limit]
            return Page(records, self._encode_cursor(records[-1], index), scanned)
        return Page(records, None, scanned)

    @staticmethod
    def _encode_cursor(record: Record, index: str | None) -> str:
        if not index:
            return str(record["sk"])
        pk_name, sk_name = _INDEX_KEYS[index]
        key = {k: record[k] for k in ("pk", "sk", pk_name, sk_name)}
        return base64.urlsafe_b64encode(json.dumps(key).encode()).decode()

    @staticmethod
    def _decode_cursor(cursor: str, pk: str, index: str | None) -> dict[str, Any]:
        if not index:
            return _key(pk, cursor)
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return {k: {"S": str(v)} for k, v in key.items()}

    # -- writes --------------------------------------------------------------------------

    def write(self, actions: Sequence[Action]) -> None:
        if not actions:
            return
        if len(actions) > MAX_TRANSACTION_ACTIONS:
            raise TooLarge(
                f"one change may write at most {MAX_TRANSACTION_ACTIONS} rows, not {len(actions)}"
            )
        if len(actions) == 1 and not isinstance(actions[0], Check):
            self._write_one(actions[0])
            return
        items = [self._transact_item(a) for a in actions]
        try:
            self._call(
                "transact_write_items",
                TransactItems=items,
                ClientRequestToken=uuid.uuid4().hex,
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise  # pragma: no cover - mapped by _call
            raise self._cancellation(error) from error

    @staticmethod
    def _cancellation(error: ClientError) -> Exception:
        reasons = error.response.get("CancellationReasons") or []
        codes = [r.get("Code", "None") for r in reasons]
        for position, code in enumerate(codes):
            if code == "ConditionalCheckFailed":
                return WriteConflict("the object changed since it was read", index=position)
        if "TransactionConflict" in codes or not codes:
            # Another writer's transaction touched the same rows: it won the race.
            return WriteConflict("a concurrent change won", index=None)
        if any(c in {"ThrottlingError", "ProvisionedThroughputExceeded"} for c in codes):
            return Unavailable("the store is throttling; retry shortly")
        if "ItemCollectionSizeLimitExceeded" in codes:
            return TooLarge("the pool is over its size limit")
        return Unavailable(f"the write was cancelled: {', '.join(codes)}")

    def _write_one(self, action: Action) -> None:
        request = self._single(action)
        method = {"Put": "put_item", "Update": "update_item", "Delete": "delete_item"}
        self._call(method[type(action).__name__], **request)

    def _single(self, action: Action) -> dict[str, Any]:
        expr = _Expression()
        request: dict[str, Any] = {"TableName": self._table}
        condition = action.condition
        match action:
            case Put(record):
                request["Item"] = serialize(record)
            case Update(pk, sk, set_, add):
                request["Key"] = _key(pk, sk)
                request["UpdateExpression"] = self._update_expression(expr, set_, add)
            case Delete(pk, sk):
                request["Key"] = _key(pk, sk)
            case Check(pk, sk):
                request["Key"] = _key(pk, sk)
        if condition is not None:
            request["ConditionExpression"] = expr.condition(condition)
        return expr.attach(request)

    def _transact_item(self, action: Action) -> dict[str, Any]:
        kind = {"Put": "Put", "Update": "Update", "Delete": "Delete", "Check": "ConditionCheck"}
        return {kind[type(action).__name__]: self._single(action)}

    @staticmethod
    def _update_expression(
        expr: _Expression, set_: Mapping[str, Any], add: Mapping[str, int]
    ) -> str:
        sets = [f"{expr.name(k)} = {expr.value(v)}" for k, v in set_.items() if v is not None]
        removes = [expr.name(k) for k, v in set_.items() if v is None]
        adds = [f"{expr.name(k)} {expr.value(v)}" for k, v in add.items()]
        parts = []
        if sets:
            parts.append("SET " + ", ".join(sets))
        if removes:
            parts.append("REMOVE " + ", ".join(removes))
        if adds:
            parts.append("ADD " + ", ".join(adds))
        return " ".join(parts)

    # -- errors --------------------------------------------------------------------------

    def _call(self, method: str, **request: Any) -> Any:
        try:
            return getattr(self._client, method)(**request)
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code == "ConditionalCheckFailedException":
                raise WriteConflict("the object changed since it was read", index=0) from error
            if code == "TransactionCanceledException":
                raise
            if code in _TRANSIENT:
                raise Unavailable("the store is busy; retry shortly") from error
            if code == "TransactionConflictException":
                raise WriteConflict("a concurrent change won") from error
            raise
        except BotoCoreError as error:
            raise Unavailable("the store could not be reached; retry shortly") from error
