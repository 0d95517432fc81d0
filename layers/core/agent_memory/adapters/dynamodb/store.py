"""The single table over DynamoDB: typed rows in, plain rows out, conflicts as domain errors.

Every write is safe under the SDK's own retries (an attempt the table applied may be sent again):

- each `write()` keeps a fresh token on every row it puts or updates (`WRITER_ATTRIBUTE`)
  and asks that the row not carry it already: a retry of an applied write fails on its own
  token, which answers success, not a conflict.
- a transaction also sends the token as `ClientRequestToken`.
- a conditional delete (or a transaction of deletes and checks only) whose condition fails
  on a retry after a timeout or a 5xx, with the row gone, answers success.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agent_memory.adapters.dynamodb.items import Expression, deserialize, key, serialize
from agent_memory.domain.errors import TooLarge, Unavailable, WriteConflict
from agent_memory.ports.store import (
    WRITER_ATTRIBUTE,
    Action,
    Check,
    Delete,
    Page,
    Put,
    Query,
    Record,
    StoreAdapter,
    Update,
    check_transaction,
    conflict,
    page_of,
)

_TRANSIENT = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "LimitExceededException",
}


def _carries(item: Mapping[str, Any] | None, token: str) -> bool:
    """The old row returned with a failed condition was written by the write of `token`."""
    return item is not None and item.get(WRITER_ATTRIBUTE) == {"S": token}


class _Attempts(threading.local):
    """Per attempt of this thread's write: True for a 4xx (not applied), else False."""

    def __init__(self) -> None:
        self.refused: list[bool] = []


class DynamoStore(StoreAdapter):
    """`ports.Store` over one DynamoDB table (keys `pk`/`sk`)."""

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

    def get(self, pk: str, sk: str) -> Record | None:
        response = self._call(
            "get_item", TableName=self._table, Key=key(pk, sk), ConsistentRead=True
        )
        item = response.get("Item")
        return deserialize(item) if item else None

    def rows(self) -> Iterator[Record]:
        """Every row, a page of the table's scan at a time (a deployment's move)."""
        request: dict[str, Any] = {"TableName": self._table, "ConsistentRead": True}
        while True:
            response = self._call("scan", **request)
            yield from (deserialize(item) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        records: list[Record] = []
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 100):
            request: dict[str, Any] = {
                self._table: {
                    "Keys": [key(pk, sk) for pk, sk in unique[start : start + 100]],
                    "ConsistentRead": True,
                }
            }
            while request:
                response = self._call("batch_get_item", RequestItems=request)
                records.extend(deserialize(i) for i in response["Responses"].get(self._table, []))
                request = response.get("UnprocessedKeys") or {}
        return records

    def page(self, query: Query) -> Page:
        request = self._query_request(query)
        if query.after:
            request["ExclusiveStartKey"] = key(query.pk, query.after)
        # One row more than wanted tells whether another page exists.
        wanted = None if query.limit is None else query.limit + 1
        records, scanned = self._read(request, wanted)
        return page_of(records, query.limit, scanned)

    def _query_request(self, query: Query) -> dict[str, Any]:
        key_range = query.key_range
        expr = Expression()
        key_condition = f"{expr.name('pk')} = {expr.value(query.pk)}"
        if key_range is not None and key_range.prefix is not None:
            key_condition += f" AND begins_with({expr.name('sk')}, {expr.value(key_range.prefix)})"
        elif key_range is not None and key_range.low is not None and key_range.high is not None:
            key_condition += (
                f" AND {expr.name('sk')} BETWEEN {expr.value(key_range.low)}"
                f" AND {expr.value(key_range.high)}"
            )
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": key_condition,
            "ScanIndexForward": not query.newest_first,
            "ConsistentRead": True,
        }
        return expr.attach(request)

    def _read(self, request: dict[str, Any], wanted: int | None) -> tuple[list[Record], int]:
        """The query's rows, `wanted` at most (all without it), and how many it scanned."""
        records: list[Record] = []
        scanned = 0
        while True:
            if wanted is not None:
                request["Limit"] = wanted - len(records)
            response = self._call("query", **request)
            scanned += int(response.get("ScannedCount", 0))
            records.extend(deserialize(i) for i in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last or (wanted is not None and len(records) >= wanted):
                return records, scanned
            request["ExclusiveStartKey"] = last

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
            return conflict(actions[failed[0]], failed[0])
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
            raise conflict(action, 0) from error

    def _single(self, action: Action, token: str) -> dict[str, Any]:
        expr = Expression()
        request: dict[str, Any] = {"TableName": self._table}
        condition = expr.condition(action.condition) if action.condition is not None else None
        match action:
            case Put(record):
                request["Item"] = serialize(record) | {WRITER_ATTRIBUTE: {"S": token}}
            case Update(pk, sk, set_, add):
                request["Key"] = key(pk, sk)
                request["UpdateExpression"] = self._update_expression(
                    expr, {**set_, WRITER_ATTRIBUTE: token}, add
                )
            case Delete(pk, sk) | Check(pk, sk):
                request["Key"] = key(pk, sk)
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
        expr: Expression, set_: Mapping[str, Any], add: Mapping[str, int]
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
