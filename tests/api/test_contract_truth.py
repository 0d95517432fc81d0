"""What the server refuses, infra/openapi.json says (docs/adr/0018-schema-limits-are-400s.md,
docs/adr/0019-references-the-schema-cannot-check.md):

- a blank name or content (only characters `str.strip()` removes) is outside the schema's
  pattern, and a 400 naming the field;
- a list or a text past the schema's `maxItems` / `maxLength` is a 400 naming the field;
  413 `TooLarge` is for what no schema states: a text within its characters but over its
  bytes as UTF-8 (and a body over 1 MiB, tests/api/test_bodies.py);
- a thread is the caller's: created for them and reachable by them, or refused with a 403
  naming `resourceId` and nothing created.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from agent_memory.api.contracts.base import NOT_BLANK_PATTERN
from infra.gen_openapi import OPENAPI_PATH
from tests.conftest import Api, User
from tests.support.access import BODIES, build_world

DOCUMENT = json.loads(OPENAPI_PATH.read_text())
SCHEMAS = DOCUMENT["components"]["schemas"]
MAX_ITEM = 32 * 1024


def _error(answer: Any) -> tuple[int, str, list[str | int]]:
    error = answer.json()["error"]
    return answer.status_code, error["_tag"], error["path"]


def test_the_blank_pattern_is_exactly_what_strip_removes() -> None:
    blank = re.compile(NOT_BLANK_PATTERN)
    for point in range(sys.maxunicode + 1):
        character = chr(point)
        assert (blank.search(character) is None) == character.isspace(), hex(point)


def test_the_schema_states_non_blank_names_and_contents() -> None:
    for schema, field in (
        ("CreateChannel", "name"),
        ("CreateBot", "name"),
        ("CreateAgent", "name"),
        ("CreateAgentMemory", "content"),
        ("UpdateAgentMemory", "content"),
        ("BotSettingsPatch", "instructions"),
        ("RememberCommand", "content"),
        ("AgentRemember", "content"),
        ("RememberEntry", "content"),
    ):
        assert SCHEMAS[schema]["properties"][field]["pattern"] == NOT_BLANK_PATTERN, schema


def test_a_blank_name_or_content_is_a_400_naming_it(api: Api) -> None:
    user = api.user(api.org())
    for path, body, field in (
        ("/v1/channels", {"name": "\t"}, "name"),
        ("/v1/bots", {"name": " \u3000 "}, "name"),
        ("/v1/agents", {"name": "\n\u2028"}, "name"),
        ("/v1/agent_memories", {"category": "fact", "content": "\u00a0"}, "content"),
    ):
        answer = api.client.post(path, json=body, headers=user.headers)
        assert _error(answer) == (400, "ValidationError", [field]), (path, answer.text)
        assert answer.json()["error"]["message"] == "may not be blank"
    assert api.client.get("/v1/agent_memories", headers=user.headers).json()["data"] == []
    named = api.client.post("/v1/channels", json={"name": " Team "}, headers=user.headers)
    assert named.status_code == 201, named.text


def test_a_blank_remember_is_a_400_naming_its_content(api: Api) -> None:
    world = build_world(api)
    for path in (
        "/v1/sessions/{sessionId}/memory",
        "/v1/agents/{agentId}/memory",
        "/v1/bots/{botId}/memory",
    ):
        body = BODIES[("POST", path)](world)
        body["command"]["content"] = " \t "
        url = re.sub(r"\{(\w+)\}", lambda m: world.ids[m.group(1)], path)
        answer = api.client.post(url, json=body, headers=world.owner.headers)
        assert _error(answer) == (400, "ValidationError", ["command", "content"]), path


def _turn(api: Api, user: User) -> str:
    bot = api.client.post("/v1/bots", json={"name": "Helper"}, headers=user.headers).json()
    chat = api.client.post("/v1/chats", json={"botId": bot["bot"]["id"]}, headers=user.headers)
    chat_id = chat.json()["chat"]["id"]
    started = api.client.post(
        f"/v1/chats/{chat_id}/turns", json={"input": "Plan the trip."}, headers=user.headers
    )
    assert started.status_code == 201, started.text
    return f"/v1/chats/{chat_id}/turns/{started.json()['turn']['id']}"


def test_a_turn_past_the_schemas_bounds_is_a_400_and_past_its_bytes_a_413(api: Api) -> None:
    user = api.user(api.org())
    turn = _turn(api, user)
    chat = turn.split("/turns/")[0]
    said = {"role": "assistant", "content": "Sure."}
    for path, body, where in (
        (f"{turn}/complete", {"items": [said] * 65}, ["items"]),
        (f"{turn}/items", {"items": [said] * 65}, ["items"]),
        (
            f"{turn}/items",
            {"items": [{**said, "content": "x" * (MAX_ITEM + 1)}]},
            ["items", 0, "content"],
        ),
        (f"{chat}/turns", {"input": "x" * (MAX_ITEM + 1)}, ["input"]),
    ):
        answer = api.client.post(path, json=body, headers=user.headers)
        assert _error(answer) == (400, "ValidationError", where), (path, answer.text)
    # 16,385 two-byte characters: within the schema's 32,768, over 32 KB as UTF-8.
    wide = "é" * (MAX_ITEM // 2 + 1)
    for path, body, where in (
        (f"{turn}/items", {"items": [{**said, "content": wide}]}, ["items", 0, "content"]),
        (f"{chat}/turns", {"input": wide}, ["input"]),
    ):
        answer = api.client.post(path, json=body, headers=user.headers)
        assert _error(answer) == (413, "TooLarge", where), (path, answer.text)
    # Nothing of that was kept: the turn completes with its 64 items at most.
    done = api.client.post(f"{turn}/complete", json={"items": [said] * 64}, headers=user.headers)
    assert done.status_code == 200, done.text
    assert len(done.json()["itemIds"]) == 64


def test_the_schema_states_those_bounds() -> None:
    for schema in ("AddItems", "CompleteTurn", "PostTurn"):
        items = SCHEMAS[schema]["properties"]["items"]
        variants = items.get("anyOf", [items])
        bounded = next(v for v in variants if "maxItems" in v)
        assert (bounded["minItems"], bounded["maxItems"]) == (1, 64), schema
    for schema, field in (("ItemIn", "content"), ("TurnItem", "content"), ("StartTurn", "input")):
        assert SCHEMAS[schema]["properties"][field]["maxLength"] == MAX_ITEM, schema


def test_a_thread_is_the_callers_and_reachable_by_them(api: Api) -> None:
    org = api.org()
    ana, ben = api.user(org), api.user(org)
    agent = api.client.post("/v1/agents", json={"name": "helper"}, headers=ana.headers)
    agent_id = agent.json()["agent"]["id"]
    mine = api.client.post(
        "/v1/threads", json={"agentId": agent_id, "resourceId": ana.id}, headers=ana.headers
    )
    assert mine.status_code == 201, mine.text
    thread = mine.json()["thread"]
    assert thread["resourceId"] == ana.id
    read = api.client.get(f"/v1/threads/{thread['id']}", headers=ana.headers)
    assert read.status_code == 200, read.text
    for someone_else in (ben.id, "u_nobody"):
        refused = api.client.post(
            "/v1/threads",
            json={"agentId": agent_id, "resourceId": someone_else},
            headers=ana.headers,
        )
        assert _error(refused) == (403, "Forbidden", ["resourceId"])
    listed = api.client.get("/v1/threads", headers=ana.headers).json()["threads"]
    assert [t["id"] for t in listed] == [thread["id"]]
    assert api.client.get("/v1/threads", headers=ben.headers).json()["threads"] == []
