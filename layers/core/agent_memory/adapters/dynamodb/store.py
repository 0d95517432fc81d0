"""The single table over DynamoDB: typed rows in, plain rows out, conflicts as domain errors.

Every write is safe under the SDK's own retries (standard mode retries a timeout or a 5xx,
so an attempt the table applied may be sent again):

- each `write()` draws a token and keeps it on every row it puts or updates
  (`WRITER_ATTRIBUTE`, hidden from returned records); each put or update also asks that
  the row not carry that token already, and for the old row when a condition fails
  (`ReturnValuesOnConditionCheckFailure`). A retry of an applied write fails on its own
  token: that answers success, not a conflict.
- a transaction also sends the token as `ClientRequestToken`: DynamoDB answers a retry
  within 10 minutes without applying it again (moto does not, the row token covers it).
- a conditional delete leaves no row to carry a token: when its condition fails on a
  retry after an attempt that may have been applied (a timeout or a 5xx, not a 4xx such as
  a throttle) and the row is gone, it answers success. The row is gone as asked; what this
  can hide is another writer deleting it between that attempt and the retry. The same
  holds for a transaction of deletes and checks only.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from agent_memory.domain.errors import TooLarge, Unavailable, WriteConflict
from agent_memory.ports.store import (
    WRITER_ATTRIBUTE,
    Absent,
    AbsentOrAtMost,
    AbsentOrEquals,
    AbsentOrLessThan,
    Action,
    AtLeast,
    AtMost,
    Check,
    Condition,
    Delete,
    Equals,
    GreaterThan,
    KeyRange,
    LessThan,
    Page,
    Present,
    Put,
    Record,
    Update,
    check_transaction,
)

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
    """A plain record; the writer token stays in the table."""
    return {
        k: _from_dynamo(_deserializer.deserialize(v))
        for k, v in item.items()
        if k != WRITER_ATTRIBUTE
    }


_OPERATORS: dict[type, str] = {
    Equals: "=",
    AbsentOrEquals: "=",
    LessThan: "<",
    AbsentOrLessThan: "<",
    AtMost: "<=",
    AbsentOrAtMost: "<=",
    GreaterThan: ">",
    AtLeast: ">=",
}


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
            case AbsentOrEquals() | AbsentOrLessThan() | AbsentOrAtMost():
                compare = self._compare(condition.attribute, condition, condition.value)
                return f"(attribute_not_exists({self.name('pk')}) OR {compare})"
            case Equals() | LessThan() | AtMost() | GreaterThan() | AtLeast():
                return self._compare(condition.attribute, condition, condition.value)
        raise TypeError(condition)  # pragma: no cover

    def _compare(self, attribute: str, condition: Condition, value: Any) -> str:
        return f"{self.name(attribute)} {_OPERATORS[type(condition)]} {self.value(value)}"

    def attach(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.names:
            request["ExpressionAttributeNames"] = self.names
        if self.values:
            request["ExpressionAttributeValues"] = self.values
        return request


def _key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _carries(item: Mapping[str, Any] | None, token: str) -> bool:
    """The old row returned with a failed condition was written by the write of `token`."""
    return item is not None and item.get(WRITER_ATTRIBUTE) == {"S": token}


class _Attempts(threading.local):
    """How each attempt of this thread's current write was answered, in order: True for a
    4xx (the table refused it: not applied), False for a timeout, a lost connection or a
    5xx (it may have been applied)."""

    def __init__(self) -> None:
        self.refused: list[bool] = []


def _name(action: Action) -> str | None:
    return action.condition.name if action.condition is not None else None


class DynamoStore:
    """`ports.Store` over one DynamoDB table (keys `pk`/`sk`, index `gsi1`)."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._client = client
        self._table = table_name
        self._attempts = _Attempts()
        client.meta.events.register(
            "needs-retry.dynamodb", self._record_attempt, unique_id=f"agent-memory-{id(self)}"
        )

    def _record_attempt(self, response: Any = None, **_: Any) -> None:
        # Called by botocore after every attempt, before it decides whether to retry.
        refused = response is not None and 400 <= response[0].status_code < 500
        self._attempts.refused.append(refused)

    def _maybe_applied(self) -> bool:
        """An attempt before the last one of this write may have been applied."""
        return not all(self._attempts.refused[:-1])

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
        check_transaction(actions)
        token = uuid.uuid4().hex
        self._attempts.refused = []
        if len(actions) == 1 and not isinstance(actions[0], Check):
            self._write_one(actions[0], token)
            return
        items = [self._transact_item(a, token) for a in actions]
        try:
            self._call("transact_write_items", TransactItems=items, ClientRequestToken=token)
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise  # pragma: no cover - mapped by _call
            failure = self._cancellation(error, actions, token)
            if failure is not None:
                raise failure from error

    def _cancellation(
        self, error: ClientError, actions: Sequence[Action], token: str
    ) -> Exception | None:
        """The domain error for a cancelled transaction; None when it had committed."""
        reasons = error.response.get("CancellationReasons") or []
        if any(_carries(r.get("Item"), token) for r in reasons):
            return None  # an earlier attempt committed; this retry met its own rows
        codes = [r.get("Code", "None") for r in reasons]
        failed = [p for p, code in enumerate(codes) if code == "ConditionalCheckFailed"]
        others = [c for c in codes if c not in ("None", "ConditionalCheckFailed")]
        if (
            failed
            and not others
            and self._maybe_applied()
            and not any(isinstance(a, Put | Update) for a in actions)
            and all(isinstance(actions[p], Delete) and not reasons[p].get("Item") for p in failed)
        ):
            return None  # deletes and checks only: the rows are gone, as asked
        if failed:
            position = failed[0]
            return WriteConflict(
                "the object changed since it was read",
                index=position,
                condition=_name(actions[position]) if position < len(actions) else None,
            )
        if "TransactionConflict" in codes or not codes:
            # Another writer's transaction touched the same rows: it won the race.
            return WriteConflict("a concurrent change won", index=None)
        if any(c in {"ThrottlingError", "ProvisionedThroughputExceeded"} for c in codes):
            return Unavailable("the store is throttling; retry shortly")
        if "ItemCollectionSizeLimitExceeded" in codes:
            return TooLarge("the pool is over its size limit")
        return Unavailable(f"the write was cancelled: {', '.join(codes)}")

    def _write_one(self, action: Action, token: str) -> None:
        request = self._single(action, token)
        method = {"Put": "put_item", "Update": "update_item", "Delete": "delete_item"}
        try:
            self._call(method[type(action).__name__], **request)
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise  # pragma: no cover - mapped by _call
            old = error.response.get("Item")
            if _carries(old, token):
                return  # an earlier attempt applied it; this retry met its own row
            if isinstance(action, Delete) and not old and self._maybe_applied():
                return  # the row is gone, as asked
            raise WriteConflict(
                "the object changed since it was read", index=0, condition=_name(action)
            ) from error

    def _single(self, action: Action, token: str) -> dict[str, Any]:
        expr = _Expression()
        request: dict[str, Any] = {"TableName": self._table}
        condition = expr.condition(action.condition) if action.condition is not None else None
        match action:
            case Put(record):
                request["Item"] = serialize(record) | {WRITER_ATTRIBUTE: {"S": token}}
            case Update(pk, sk, set_, add):
                request["Key"] = _key(pk, sk)
                request["UpdateExpression"] = self._update_expression(
                    expr, {**set_, WRITER_ATTRIBUTE: token}, add
                )
            case Delete(pk, sk) | Check(pk, sk):
                request["Key"] = _key(pk, sk)
        if isinstance(action, Put | Update):
            # Not a row this very write already made: its retry must not apply it twice.
            writer = expr.name(WRITER_ATTRIBUTE)
            guard = f"(attribute_not_exists({writer}) OR {writer} <> {expr.value(token)})"
            # Conditions are AND operands already (a disjunction comes parenthesized).
            condition = guard if condition is None else f"{condition} AND {guard}"
        if condition is not None:
            request["ConditionExpression"] = condition
            request["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return expr.attach(request)

    def _transact_item(self, action: Action, token: str) -> dict[str, Any]:
        kind = {"Put": "Put", "Update": "Update", "Delete": "Delete", "Check": "ConditionCheck"}
        return {kind[type(action).__name__]: self._single(action, token)}

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
            if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                raise  # the writer decides: a conflict, or its own earlier attempt
            if code in _TRANSIENT:
                raise Unavailable("the store is busy; retry shortly") from error
            if code == "TransactionConflictException":
                raise WriteConflict("a concurrent change won") from error
            raise
        except BotoCoreError as error:
            raise Unavailable("the store could not be reached; retry shortly") from error
