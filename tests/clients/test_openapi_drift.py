"""The Python client against infra/openapi.json: a route, field or required flag that differs
fails here, so the client cannot drift from the service it calls."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_memory_client import AsyncClient, Client
from agent_memory_client import routes as r

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = json.loads((ROOT / "infra" / "openapi.json").read_text())
OPERATIONS = {
    (method.upper(), path)
    for path, item in OPENAPI["paths"].items()
    for method in item
    if method in {"get", "post", "put", "patch", "delete"}
}


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = OPENAPI["components"]["schemas"][schema["$ref"].split("/")[-1]]
    return schema


def _variants(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a value may be (nulls, arrays and maps looked through)."""
    schema = _resolve(schema)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [v for part in schema[key] for v in _variants(part)]
    if schema.get("type") == "array" and "items" in schema:
        return _variants(schema["items"])
    extra = schema.get("additionalProperties")
    if schema.get("type") == "object" and isinstance(extra, dict) and "properties" not in schema:
        return _variants(extra)
    return [schema] if schema.get("type") == "object" or "properties" in schema else []


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, dict):
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    return []


def _tag(model: type[BaseModel]) -> Any:
    field = model.model_fields.get("tag")
    return field.default if field is not None else None


def _compare(model: type[BaseModel], schema: dict[str, Any], where: str) -> list[str]:
    schema = _resolve(schema)
    properties: dict[str, Any] = schema.get("properties", {})
    if not properties:
        return []  # the schema states no fields: nothing to hold the client to
    fields = {(f.alias or name): f for name, f in model.model_fields.items()}
    problems = []
    if set(fields) != set(properties):
        problems.append(
            f"{where} ({model.__name__}): client has {sorted(set(fields) - set(properties))} "
            f"extra, lacks {sorted(set(properties) - set(fields))}"
        )
    required = set(schema.get("required", []))
    # A command's `_tag` has a default but is always sent (models.Body).
    model_required = {a for a, f in fields.items() if f.is_required() or a == "_tag"}
    if required != model_required:
        problems.append(
            f"{where} ({model.__name__}): required {sorted(required)} in the schema, "
            f"{sorted(model_required)} in the client"
        )
    for alias, field in fields.items():
        if alias not in properties:
            continue
        inner = _models(field.annotation)
        variants = [v for v in _variants(properties[alias]) if v.get("properties")]
        if not inner or not variants:
            continue
        if len(inner) == 1 and len(variants) == 1:
            problems += _compare(inner[0], variants[0], f"{where}.{alias}")
            continue
        by_tag = {v["properties"].get("_tag", {}).get("const"): v for v in variants}
        for sub in inner:
            if _tag(sub) in by_tag:
                problems += _compare(sub, by_tag[_tag(sub)], f"{where}.{alias}[{_tag(sub)}]")
            elif len(variants) == 1:
                problems += _compare(sub, variants[0], f"{where}.{alias}")
            else:
                problems.append(f"{where}.{alias}: no schema variant for {sub.__name__}")
    return problems


def _operation(route: r.Route[Any] | r.EmptyRoute) -> dict[str, Any]:
    return OPENAPI["paths"][route.path][route.method.lower()]


def test_the_client_calls_every_operation_and_only_those() -> None:
    called = {(route.method, route.path) for route in r.ROUTES}
    assert sorted(OPERATIONS - called) == [], "operations the client does not call"
    assert sorted(called - OPERATIONS) == [], "client routes the service does not document"


@pytest.mark.parametrize("route", r.ROUTES, ids=lambda route: f"{route.method} {route.path}")
def test_each_route_matches_its_schema(route: r.Route[Any] | r.EmptyRoute) -> None:
    operation = _operation(route)
    assert str(route.status) in operation["responses"], f"answers {list(operation['responses'])}"
    problems: list[str] = []
    body_schema = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if route.body is None:
        assert body_schema is None or not operation["requestBody"].get("required"), (
            "the service requires a body the client does not send"
        )
    else:
        assert body_schema is not None, "the client sends a body the service does not take"
        problems += _compare(route.body, body_schema["schema"], "body")
    if isinstance(route, r.Route):
        answer = operation["responses"][str(route.status)]["content"]["application/json"]
        problems += _compare(route.answer, answer["schema"], "answer")
    assert problems == []


def test_sync_and_async_clients_have_the_same_surface() -> None:
    def surface(cls: type) -> set[str]:
        return {n for n in vars(cls) if not n.startswith("_")} - {"aclose", "close"}

    assert surface(Client) == surface(AsyncClient)
    assert len(surface(Client)) >= len(r.ROUTES)
