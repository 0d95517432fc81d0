"""Rows as DynamoDB items: plain values to typed attributes and back, and the expressions
(placeholders, conditions) one request carries."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

from agent_memory.ports.store import (
    WRITER_ATTRIBUTE,
    Absent,
    AbsentOrEquals,
    AbsentOrLessThan,
    AtMost,
    Condition,
    Equals,
    LessThan,
    Present,
    Record,
)

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
}


class Expression:
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
            case AbsentOrEquals() | AbsentOrLessThan():
                compare = self._compare(condition.attribute, condition, condition.value)
                return f"(attribute_not_exists({self.name('pk')}) OR {compare})"
            case Equals() | LessThan() | AtMost():
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


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}
