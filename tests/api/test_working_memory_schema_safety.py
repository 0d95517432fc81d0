"""A working-memory schema does a bounded amount of work: the draft refuses a `$ref` that
leaves the schema, names nothing or loops, validation fetches nothing, and a catastrophic
`pattern` is a 400 at the field within a bounded time, never a hang."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.threads import World, services, titler, world

__all__ = ["services", "titler", "world"]  # the fixtures this module uses

SCHEMA_PATH = ["memory", "options", "workingMemory", "schema"]


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records every request it gets."""
    hits: list[str] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"type":"object"}')

        def log_message(self, *_: Any) -> None:
            return

    server = http.server.HTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/internal.json", hits
    server.shutdown()
    server.server_close()


def _patch(world: World, schema: dict[str, Any]) -> Any:
    body = {"memory": {"options": {"workingMemory": {"schema": schema}}}}
    return world.api.client.patch(
        f"/v1/agents/{world.agent}/draft", json=body, headers=world.owner.headers
    )


def test_a_remote_ref_is_refused_and_never_fetched(
    world: World, listener: tuple[str, list[str]]
) -> None:
    url, hits = listener
    nested = {"type": "object", "properties": {"a": {"$ref": url}}}
    for schema, path in (
        ({"$ref": url}, [*SCHEMA_PATH, "$ref"]),
        (nested, [*SCHEMA_PATH, "properties", "a", "$ref"]),
        ({"$id": url, "properties": {"a": {"$ref": "other.json"}}}, None),
    ):
        answer = _patch(world, schema)
        assert answer.status_code == 400, answer.text
        if path is not None:
            assert answer.json()["error"]["path"] == path
    assert hits == []


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/definitions/missing"},
        {
            "type": "object",
            "$defs": {"x": {"$ref": "#/$defs/x"}},
            "properties": {"a": {"$ref": "#/$defs/x"}},
        },
        {
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"items": {"$ref": "#/$defs/a"}}},
            "$ref": "#/$defs/a",
        },
        {"properties": {"a": {"$ref": "#"}}},
    ],
)
def test_a_ref_that_names_nothing_or_loops_is_refused(world: World, schema: Any) -> None:
    answer = _patch(world, schema)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["path"][:4] == SCHEMA_PATH


def test_a_local_ref_validates_without_fetching(world: World) -> None:
    schema = {
        "type": "object",
        "$defs": {"name": {"type": "string"}},
        "properties": {"name": {"$ref": "#/$defs/name"}},
    }
    world.activate({"workingMemory": {"schema": schema}})
    url = f"/v1/threads/{world.thread()}/working-memory"
    bad = world.api.client.put(url, json={"content": {"name": 1}}, headers=world.owner.headers)
    assert bad.status_code == 400
    assert bad.json()["error"]["path"] == ["content", "name"]
    good = world.api.client.put(url, json={"content": {"name": "Ana"}}, headers=world.owner.headers)
    assert good.status_code == 200


def _put_quickly(world: World, schema: dict[str, Any], content: dict[str, Any]) -> Any:
    world.activate({"workingMemory": {"schema": {"type": "object", **schema}}})
    url = f"/v1/threads/{world.thread()}/working-memory"
    started = time.monotonic()
    answer = world.api.client.put(url, json={"content": content}, headers=world.owner.headers)
    assert time.monotonic() - started < 1.5, "a PUT took seconds on the schema's pattern"
    return answer


def test_a_backtracking_pattern_answers_at_once(world: World) -> None:
    # Python's re needs about 6 s here: the same PUT stays fast.
    schema = {"properties": {"name": {"pattern": "(x+x+)+y"}}}
    answer = _put_quickly(world, schema, {"name": "x" * 27})
    assert answer.status_code == 400
    assert answer.json()["error"]["path"] == ["content", "name"]


@pytest.mark.parametrize(
    ("schema", "content", "path"),
    [
        ({"properties": {"name": {"pattern": "(x+x+)+y"}}}, {"name": "x" * 5000}, ["name"]),
        (
            {"patternProperties": {"(a|aa)+$": {"type": "string"}}},
            {"a" * 5000 + "!": "x"},
            ["a" * 5000 + "!"],
        ),
    ],
)
def test_a_pattern_past_the_time_bound_is_a_400_at_the_field(
    world: World, schema: dict[str, Any], content: dict[str, Any], path: list[str]
) -> None:
    answer = _put_quickly(world, schema, content)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["path"] == ["content", *path]
    assert "too long" in answer.json()["error"]["message"]


def test_an_ordinary_pattern_still_validates(world: World) -> None:
    schema = {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{4}$"}}}
    world.activate({"workingMemory": {"schema": schema}})
    url = f"/v1/threads/{world.thread()}/working-memory"
    put = world.api.client.put
    assert (
        put(url, json={"content": {"zip": "12a4"}}, headers=world.owner.headers).status_code == 400
    )
    assert (
        put(url, json={"content": {"zip": "1234"}}, headers=world.owner.headers).status_code == 200
    )
