"""Text that cannot be encoded (lone UTF-16 surrogates, bytes that are not UTF-8) is a 400
`ValidationError` naming the field on every route, never a 500, and nothing is stored.

The cases are generated FROM infra/openapi.json: every string field of every request body
(found by walking its schema), every path parameter and every query parameter. A new route
or field is covered without touching this file; a route with a body needs a sample in the
access matrix's `BODIES` (tests/security/test_access_matrix.py) anyway.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.conftest import Api
from tests.support.access import BODIES, DOCUMENT, ROUTES, World, build_world

BAD = "bad \ud800"
# A lone surrogate in a URL: its UTF-8-like bytes (CESU-8), which are not UTF-8.
BAD_IN_URL = "%ED%A0%80"
Path = list[str | int]


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = DOCUMENT["components"]["schemas"][name]
    return schema


def string_fields(schema: dict[str, Any], path: Path | None = None) -> Iterator[Path]:
    """Every place of a body a string may go, as a path (lists by their first item)."""
    path = path or []
    schema = _resolve(schema)
    if schema.get("type") == "string" or not {"type", "anyOf", "oneOf", "$ref"} & set(schema):
        yield path  # a string, or any JSON value (seed 004's metadata)
        return
    for variant in schema.get("anyOf", []) + schema.get("oneOf", []):
        yield from string_fields(variant, path)
    for name, field in schema.get("properties", {}).items():
        yield from string_fields(field, [*path, name])
    if schema.get("type") == "array" and "items" in schema:
        yield from string_fields(schema["items"], [*path, 0])


def put(body: Any, path: Path, value: Any) -> Any:
    """`body` with `value` at `path`, building the containers the path goes through."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = list(body) if isinstance(body, list) and body else [None]
        items[0] = put(items[0], rest, value)
        return items
    members = dict(body) if isinstance(body, dict) else {}
    members[head] = put(members.get(head), rest, value)
    return members


def _body_schema(method: str, path: str) -> dict[str, Any] | None:
    operation = DOCUMENT["paths"][path][method.lower()]
    content = operation.get("requestBody", {}).get("content", {})
    return content.get("application/json", {}).get("schema")


def _unique(paths: Iterator[Path]) -> list[Path]:
    seen: list[Path] = []
    for found in paths:
        if found not in seen:
            seen.append(found)
    return seen


BODY_CASES = [
    (method, path, fields)
    for method, path in ROUTES
    if (schema := _body_schema(method, path)) is not None
    and (fields := _unique(string_fields(schema)))
]
PATH_CASES = [(m, p, n) for m, p in ROUTES for n in re.findall(r"\{(\w+)\}", p)]
QUERY_CASES = [
    (method, path, parameter["name"])
    for method, path in ROUTES
    for parameter in DOCUMENT["paths"][path][method.lower()].get("parameters", [])
    if parameter["in"] == "query"
]


def _headers(world: World, path: str) -> dict[str, str]:
    admin = path.startswith(("/v1/admin/", "/v1/organizations/"))
    return world.api.admin if admin else world.owner.headers


def _url(world: World, path: str, **replaced: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: replaced.get(m.group(1), world.ids[m.group(1)]), path)


def _rows(local_aws: tuple[Any, Any], settings: Any) -> int:
    session, _local = local_aws
    client = session.client("dynamodb")
    return int(client.scan(TableName=settings.table_name, Select="COUNT")["Count"])


def _send(api: Api, method: str, url: str, body: Any, headers: dict[str, str]) -> Any:
    # ensure_ascii: the surrogate goes as the JSON escape a client would write (`\ud800`).
    data = json.dumps(body).encode() if body is not None else None
    headers = headers | ({"content-type": "application/json"} if data is not None else {})
    return api.client.request(method, url, content=data, headers=headers)


def _refused(answer: Any, where: Path, case: str = "") -> None:
    assert answer.status_code == 400, f"{case}: {answer.status_code} {answer.text}"
    error = answer.json()["error"]
    assert error["_tag"] == "ValidationError", case
    assert error["path"] == where, case
    assert "cannot be encoded" in error["message"], case


def test_the_cases_cover_the_document() -> None:
    routes = {(method, path) for method, path, _ in BODY_CASES}
    assert ("POST", "/v1/sessions/{sessionId}/turns") in routes
    assert ("POST", "/v1/agent_memories") in routes
    turn = next(f for m, p, f in BODY_CASES if p == "/v1/sessions/{sessionId}/turns")
    assert ["items", 0, "content"] in turn
    memory = next(f for m, p, f in BODY_CASES if (m, p) == ("POST", "/v1/agent_memories"))
    assert ["metadata"] in memory
    assert ["entity", "name"] in memory
    assert len(PATH_CASES) >= 20
    assert len(QUERY_CASES) >= 5


def test_every_string_field_of_every_body_refuses_bad_text(
    api: Api, local_aws: tuple[Any, Any], settings: Any
) -> None:
    world = build_world(api)
    for method, path, fields in BODY_CASES:
        url, headers = _url(world, path), _headers(world, path)
        sample = BODIES[(method, path)](world)
        for field in fields:
            before = _rows(local_aws, settings)
            answer = _send(api, method, url, put(sample, field, BAD), headers)
            _refused(answer, field, f"{method} {path} {field}")
            assert _rows(local_aws, settings) == before, f"{method} {path} {field} stored a row"


def test_every_path_parameter_refuses_bad_text(api: Api) -> None:
    world = build_world(api)
    for method, path, name in PATH_CASES:
        sample = BODIES.get((method, path))
        body = sample(world) if sample is not None else None
        url = _url(world, path, **{name: BAD_IN_URL})
        answer = _send(api, method, url, body, _headers(world, path))
        _refused(answer, [name], f"{method} {path}")


def test_every_query_parameter_refuses_bad_text(api: Api) -> None:
    world = build_world(api)
    for method, path, name in QUERY_CASES:
        url = f"{_url(world, path)}?{name}={BAD_IN_URL}"
        answer = _send(api, method, url, None, _headers(world, path))
        _refused(answer, [name], f"{method} {path} ?{name}")


# --- the examples of bad text ---------------------------------------------------------------


def test_a_turn_with_a_lone_surrogate_is_refused_and_the_session_is_unchanged(api: Api) -> None:
    world = build_world(api)
    url = f"/v1/sessions/{world.ids['sessionId']}/turns"
    before = world.session_view()
    raw = (
        b'{"items": [{"role": "user", "content": "ok"},'
        b' {"role": "user", "content": "bad \\ud800"}]}'
    )
    answer = api.client.post(
        url, content=raw, headers=world.owner.headers | {"content-type": "application/json"}
    )
    _refused(answer, ["items", 1, "content"])
    assert world.session_view() == before


def test_agent_memories_metadata_with_a_lone_surrogate_in_a_value_or_a_key(api: Api) -> None:
    world = build_world(api)
    headers = world.owner.headers | {"content-type": "application/json"}
    listed = api.client.get("/v1/agent_memories", headers=world.owner.headers).json()["data"]
    for raw, where in (
        (
            b'{"category": "fact", "content": "ok", "metadata": {"note": "\\udfff"}}',
            ["metadata", "note"],
        ),
        (
            b'{"category": "fact", "content": "ok", "metadata": {"\\udfff": 1}}',
            ["metadata", "\\udfff"],
        ),
        (
            b'{"category": "fact", "content": "ok", "metadata": ["a", ["\\udfff"]]}',
            ["metadata", 1, 0],
        ),
    ):
        _refused(api.client.post("/v1/agent_memories", content=raw, headers=headers), where)
    memory = f"/v1/agent_memories/{world.ids['memoryId']}"
    patch = b'{"content": "half \\ud83d"}'
    _refused(api.client.patch(memory, content=patch, headers=headers), ["content"])
    assert api.client.get(memory, headers=world.owner.headers).json()["content"] == (
        "Orders 40 pallets a month."
    )
    after = api.client.get("/v1/agent_memories", headers=world.owner.headers).json()["data"]
    assert after == listed


def test_a_body_that_is_not_utf8_names_its_field(api: Api) -> None:
    world = build_world(api)
    raw = b'{"name": "caf\xe9"}'  # Latin-1, not UTF-8
    answer = api.client.post(
        "/v1/agents",
        content=raw,
        headers=world.owner.headers | {"content-type": "application/json"},
    )
    _refused(answer, ["name"])


def test_text_that_encodes_is_kept_as_sent(api: Api) -> None:
    """A surrogate PAIR is one character (an emoji), and a backslash-u written as text is text."""
    world = build_world(api)
    raw = b'{"items": [{"role": "user", "content": "ok \\ud83d\\ude00 and \\\\ud800"}]}'
    url = f"/v1/sessions/{world.ids['sessionId']}/turns"
    answer = api.client.post(
        url, content=raw, headers=world.owner.headers | {"content-type": "application/json"}
    )
    assert answer.status_code == 200, answer.text
    created = api.client.post(
        "/v1/agent_memories",
        json={"category": "fact", "content": "likes \U0001f600", "metadata": {"\u00e9": "\\ud800"}},
        headers=world.owner.headers,
    )
    assert created.status_code == 201, created.text
    assert created.json()["content"] == "likes \U0001f600"
    assert created.json()["metadata"] == {"\u00e9": "\\ud800"}


def test_an_unknown_route_with_bad_text_is_still_a_404(api: Api) -> None:
    world = build_world(api)
    answer = api.client.get(f"/v1/nothing/{BAD_IN_URL}", headers=world.owner.headers)
    assert answer.status_code == 404
