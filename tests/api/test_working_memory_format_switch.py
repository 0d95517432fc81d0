"""Working memory after the active version switches its format (ADR 0097): notes that do
not read as the new format are empty, never a 500, and the next write replaces them."""

from __future__ import annotations

from tests.support.threads import World, services, titler, world

__all__ = ["services", "titler", "world"]  # the fixtures this module uses

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


def _markdown_then_schema(world: World, **observer: object) -> str:
    world.activate({"workingMemory": True})
    thread = world.thread()
    put = world.api.client.put(
        f"/v1/threads/{thread}/working-memory",
        json={"content": "# User\n- Name: Ana"},
        headers=world.owner.headers,
    )
    assert put.status_code == 200
    world.activate({"workingMemory": {"schema": SCHEMA}, **observer})
    return thread


def test_markdown_notes_read_as_empty_under_a_schema_and_a_json_put_replaces_them(
    world: World,
) -> None:
    thread = _markdown_then_schema(world)
    url = f"/v1/threads/{thread}/working-memory"
    assert world.get(url).json() == {"scope": "resource", "format": "json", "content": None}
    context = world.context(thread)
    assert context.status_code == 200
    assert context.json()["workingMemory"] is None
    put = world.api.client.put(url, json={"content": {"name": "Ana"}}, headers=world.owner.headers)
    assert put.status_code == 200
    assert world.get(url).json()["content"] == {"name": "Ana"}


def test_the_export_streams_whole_after_the_switch(world: World) -> None:
    _markdown_then_schema(world)
    export = world.api.client.get("/v1/me/export", headers=world.owner.headers)
    assert export.status_code == 200
    assert export.text.endswith("\n")


def test_json_notes_show_as_text_when_the_version_goes_back_to_markdown(world: World) -> None:
    world.activate({"workingMemory": {"schema": SCHEMA}})
    thread = world.thread()
    url = f"/v1/threads/{thread}/working-memory"
    world.api.client.put(url, json={"content": {"name": "Ana"}}, headers=world.owner.headers)
    world.activate({"workingMemory": True})
    assert world.get(url).json()["content"] == '{"name":"Ana"}'


def test_an_observer_managed_schema_still_reads_and_gives_context(world: World) -> None:
    observer = {"observationalMemory": {"observation": {"manageWorkingMemory": True}}}
    thread = _markdown_then_schema(world, **observer)
    assert world.get(f"/v1/threads/{thread}/working-memory").json()["content"] is None
    assert world.context(thread).status_code == 200
