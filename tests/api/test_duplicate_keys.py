"""A key that appears twice in one JSON object is a 400 `ValidationError` naming it, on every
route and at any depth, and nothing is stored: JSON parsers disagree on which of the two wins,
so the service takes neither (docs/adr/0017-duplicated-keys-and-slow-requests.md).

The routes come FROM infra/openapi.json (every operation with a JSON body), with the access
matrix's sample bodies, so a new route is covered without touching this file.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import Api
from tests.support.access import BODIES, DOCUMENT, ROUTES, World, build_world

JSON = {"content-type": "application/json"}
BODY_ROUTES = [
    (method, path)
    for method, path in ROUTES
    if "application/json"
    in DOCUMENT["paths"][path][method.lower()].get("requestBody", {}).get("content", {})
]


def _twice(sample: dict[str, Any]) -> tuple[bytes, str]:
    """`sample` as JSON text whose first key is written twice (or a made-up key when it has
    none), and that key."""
    if not sample:
        return b'{"note": 1, "note": 1}', "note"
    key = next(iter(sample))
    text = json.dumps(sample)
    return f"{{{json.dumps(key)}: {json.dumps(sample[key])}, {text[1:]}".encode(), key


def _url(world: World, path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: world.ids[m.group(1)], path)


def _headers(world: World, path: str) -> dict[str, str]:
    admin = path.startswith(("/v1/admin/", "/v1/organizations/"))
    return (world.api.admin if admin else world.owner.headers) | JSON


def _rows(local_aws: tuple[Any, Any], settings: Any) -> int:
    session, _local = local_aws
    client = session.client("dynamodb")
    return int(client.scan(TableName=settings.table_name, Select="COUNT")["Count"])


def _refused(answer: Any, where: list[str | int], case: str = "") -> None:
    assert answer.status_code == 400, f"{case}: {answer.status_code} {answer.text}"
    error = answer.json()["error"]
    assert error["_tag"] == "ValidationError", case
    assert error["path"] == where, case
    assert f"{where[-1]!r} appears more than once" in error["message"], case


def test_every_route_with_a_body_refuses_a_duplicated_key(
    api: Api, local_aws: tuple[Any, Any], settings: Any
) -> None:
    assert len(BODY_ROUTES) >= 30
    world = build_world(api)
    for method, path in BODY_ROUTES:
        sample = BODIES[(method, path)](world)
        raw, key = _twice(sample if isinstance(sample, dict) else {})
        before = _rows(local_aws, settings)
        answer = api.client.request(
            method, _url(world, path), content=raw, headers=_headers(world, path)
        )
        _refused(answer, [key], f"{method} {path}")
        assert _rows(local_aws, settings) == before, f"{method} {path} stored a row"


def test_a_memory_whose_category_is_sent_twice_is_refused_not_the_last_one_kept(
    api: Api,
) -> None:
    user = api.user(api.org())
    raw = b'{"category": "admin", "category": "fact", "content": "Orders 40 pallets."}'
    answer = api.client.post("/v1/agent_memories", content=raw, headers=user.headers | JSON)
    _refused(answer, ["category"])
    assert api.client.get("/v1/agent_memories", headers=user.headers).json()["data"] == []


def test_a_key_twice_deep_in_a_list_is_named_by_its_path(api: Api) -> None:
    world = build_world(api)
    url = f"/v1/threads/{world.ids['threadId']}/messages"
    raw = (
        b'{"messages": [{"role": "user", "content": "hi"},'
        b' {"role": "assistant", "content": "hello", "role": "system"}]}'
    )
    answer = api.client.post(url, content=raw, headers=world.owner.headers | JSON)
    _refused(answer, ["messages", 1, "role"])
    saved = api.client.get(url, headers=world.owner.headers).json()["messages"]
    assert saved == []


def test_a_key_twice_inside_opaque_metadata_is_refused_too(api: Api) -> None:
    user = api.user(api.org())
    raw = b'{"category": "fact", "content": "ok", "metadata": {"a": {"b": 1, "b": 2}}}'
    answer = api.client.post("/v1/agent_memories", content=raw, headers=user.headers | JSON)
    _refused(answer, ["metadata", "a", "b"])


def test_the_same_key_written_with_an_escape_is_the_same_key(api: Api) -> None:
    user = api.user(api.org())
    raw = b'{"category": "fact", "content": "one", "\\u0063ontent": "two"}'
    answer = api.client.post("/v1/agent_memories", content=raw, headers=user.headers | JSON)
    _refused(answer, ["content"])


def test_one_key_in_several_objects_is_no_duplicate(api: Api) -> None:
    world = build_world(api)
    url = f"/v1/threads/{world.ids['threadId']}/messages"
    raw = (
        b'{"messages": [{"role": "user", "content": "hi"},'
        b' {"role": "assistant", "content": "hello"}]}'
    )
    answer = api.client.post(url, content=raw, headers=world.owner.headers | JSON)
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["messageIds"]) == 2


def test_numbers_json_cannot_carry_are_refused_where_they_stand(api: Api) -> None:
    """NaN, Infinity and a number past a float's range are not JSON; stored, they would read
    back as null. Each is a 400 naming its place, and nothing is kept."""
    world = build_world(api)
    url = f"/v1/threads/{world.ids['threadId']}/messages"
    for number in (b"NaN", b"Infinity", b"-Infinity", b"1e999"):
        raw = b'{"messages": [{"role": "user", "content": "hi", "item": {"x": [1, %s]}}]}' % number
        answer = api.client.post(url, content=raw, headers=world.owner.headers | JSON)
        assert answer.status_code == 400, (number, answer.text)
        error = answer.json()["error"]
        assert (error["_tag"], error["path"]) == (
            "ValidationError",
            ["messages", 0, "item", "x", 1],
        )
        assert "finite" in error["message"]
    assert api.client.get(url, headers=world.owner.headers).json()["messages"] == []
    # A large finite number and an exponent within range are JSON, and kept as sent.
    raw = b'{"messages": [{"role": "user", "content": "hi", "item": {"x": 1.5e300}}]}'
    answer = api.client.post(url, content=raw, headers=world.owner.headers | JSON)
    assert answer.status_code == 200, answer.text
