"""Every route of the OpenAPI document with a body that reaches it, and a world of callers
(owner, stranger, outsider, operator ...) to call them as."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from infra.gen_openapi import OPENAPI_PATH
from tests.conftest import Api, User

DOCUMENT = json.loads(OPENAPI_PATH.read_text())


ROUTES = sorted(
    (method.upper(), path)
    for path, operations in DOCUMENT["paths"].items()
    for method in operations
    if path != "/healthz"
)


@dataclass
class World:
    """One organization's objects, created by their owner, plus the other callers."""

    api: Api
    org: str
    owner: User
    stranger: User
    outsider: User
    revoked: User
    ids: dict[str, str] = field(default_factory=dict)
    # Each organization's service key, and one of this organization revoked.
    keys: dict[str, str] = field(default_factory=dict)
    revoked_key: str = ""

    def acting(self, person: User) -> dict[str, str]:
        """The headers of `person` reached through their organization's service key."""
        return {"Authorization": f"Bearer {self.keys[person.org_id]}", "Act-As": person.id}

    def session_view(self) -> dict[str, Any]:
        answer = self.api.client.get(
            f"/v1/sessions/{self.ids['sessionId']}", headers=self.owner.headers
        )
        return dict(answer.json()["session"])


def _has(method: str, path: str) -> bool:
    return (method, path) in ROUTES


def build_world(api: Api) -> World:
    org = api.org()
    other = api.org()
    world = World(
        api=api,
        org=org,
        owner=api.user(org),
        stranger=api.user(org),
        outsider=api.user(other),
        revoked=api.user(org),
    )
    client, headers = api.client, world.owner.headers
    world.ids["orgId"] = org
    world.ids["userId"] = world.owner.id
    # The owner's own second token: an administrator's issuance would replace the first.
    spare = client.post("/v1/me/tokens", json={}, headers=headers)
    assert spare.status_code == 201, spare.text
    world.ids["tokenPrefix"] = spare.json()["tokenPrefix"]
    for of_org in (org, other, org):
        key = client.post(
            f"/v1/organizations/{of_org}/service-keys", json={"name": "backend"}, headers=api.admin
        )
        assert key.status_code == 201, key.text
        if of_org in world.keys:  # the second key of this organization: revoked
            world.revoked_key = key.json()["key"]
            gone = f"/v1/organizations/{of_org}/service-keys/{key.json()['id']}"
            assert client.delete(gone, headers=api.admin).status_code == 204
        else:
            world.keys[of_org] = key.json()["key"]
            world.ids.setdefault("keyId", key.json()["id"])
    assert (
        client.delete(
            f"/v1/admin/tokens/{world.revoked.token_prefix}", headers=api.admin
        ).status_code
        == 204
    )
    if _has("POST", "/v1/agents"):
        agent = client.post("/v1/agents", json={"name": "helper"}, headers=headers)
        assert agent.status_code == 201, agent.text
        world.ids["agentId"] = agent.json()["agent"]["id"]
    if _has("POST", "/v1/agents/{agentId}/publish"):
        url = f"/v1/agents/{world.ids['agentId']}/publish"
        assert client.post(url, json={}, headers=headers).status_code == 201
        world.ids["n"] = "1"
    if _has("POST", "/v1/threads"):
        thread = client.post("/v1/threads", json={"agentId": world.ids["agentId"]}, headers=headers)
        assert thread.status_code == 201, thread.text
        world.ids["threadId"] = thread.json()["thread"]["id"]
    if _has("POST", "/v1/sessions"):
        body = {"agentId": world.ids["agentId"], "kind": "subagent"}
        session = client.post("/v1/sessions", json=body, headers=headers)
        assert session.status_code == 201, session.text
        world.ids["sessionId"] = session.json()["session"]["id"]
    if _has("POST", "/v1/agent_memories"):
        memory = client.post(
            "/v1/agent_memories",
            json={"category": "fact", "content": "Orders 40 pallets a month.", "importance": 0.5},
            headers=headers,
        )
        assert memory.status_code == 201, memory.text
        world.ids["memoryId"] = memory.json()["id"]
    if _has("POST", "/v1/bots"):
        bot = client.post("/v1/bots", json={"name": "helper"}, headers=headers)
        assert bot.status_code == 201, bot.text
        world.ids["botId"] = bot.json()["bot"]["id"]
        channel = client.post("/v1/channels", json={"name": "team"}, headers=headers)
        assert channel.status_code == 201, channel.text
        world.ids["channelId"] = channel.json()["channel"]["id"]
        chat = client.post("/v1/chats", json={"botId": world.ids["botId"]}, headers=headers)
        assert chat.status_code == 201, chat.text
        world.ids["chatId"] = chat.json()["chat"]["id"]
        started = client.post(
            f"/v1/chats/{world.ids['chatId']}/turns", json={"input": "hello"}, headers=headers
        )
        assert started.status_code == 201, started.text
        world.ids["turnId"] = started.json()["turn"]["id"]
    return world


def _command(world: World, command: dict[str, Any]) -> dict[str, Any]:
    view = world.session_view()
    return {"expected": view["head"], "revision": view["revision"], "command": command}


BODIES: dict[tuple[str, str], Callable[[World], Any]] = {
    ("POST", "/v1/admin/organizations"): lambda w: {"name": "Globex"},
    ("POST", "/v1/admin/users"): lambda w: {"organizationId": w.org},
    ("POST", "/v1/admin/users/{userId}/tokens"): lambda w: {},
    ("POST", "/v1/me/tokens"): lambda w: {},
    ("PATCH", "/v1/organizations/{orgId}/settings"): lambda w: {"agentMemory": False},
    ("POST", "/v1/organizations/{orgId}/service-keys"): lambda w: {"name": "backend"},
    ("POST", "/v1/organizations/{orgId}/users"): lambda w: {"name": "Dora"},
    ("PATCH", "/v1/organizations/{orgId}/users/{userId}"): lambda w: {"name": "Dora Ito"},
    ("POST", "/v1/agents"): lambda w: {"name": "another"},
    ("PATCH", "/v1/agents/{agentId}/draft"): lambda w: {"memory": {"options": {"lastMessages": 5}}},
    ("POST", "/v1/agents/{agentId}/publish"): lambda w: {},
    ("POST", "/v1/agents/{agentId}/versions/{n}/activate"): lambda w: {},
    ("POST", "/v1/threads"): lambda w: {"agentId": w.ids["agentId"]},
    ("PATCH", "/v1/threads/{threadId}"): lambda w: {"title": "Renamed", "metadata": {"n": 1}},
    ("POST", "/v1/threads/{threadId}/messages"): lambda w: {
        "messages": [{"role": "user", "content": "hello"}]
    },
    ("PUT", "/v1/threads/{threadId}/working-memory"): lambda w: {"content": "# Notes"},
    ("POST", "/v1/threads/{threadId}/context"): lambda w: {
        "message": {"role": "user", "content": "hello"}
    },
    ("POST", "/v1/threads/{threadId}/recall"): lambda w: {"query": "hello"},
    ("POST", "/v1/sessions"): lambda w: {"agentId": w.ids["agentId"]},
    ("POST", "/v1/sessions/{sessionId}/turns"): lambda w: {
        "items": [{"role": "user", "content": "hello"}]
    },
    ("POST", "/v1/sessions/{sessionId}/fork"): lambda w: {},
    ("POST", "/v1/sessions/{sessionId}/promote"): lambda w: {"name": "promoted"},
    ("POST", "/v1/sessions/{sessionId}/memory"): lambda w: _command(
        w, {"_tag": "Remember", "key": "budget", "content": "1500 EUR", "kind": "fact"}
    ),
    ("POST", "/v1/agents/{agentId}/memory"): lambda w: {
        "expected": 0,
        "command": {
            "_tag": "Remember",
            "key": "tests-first",
            "content": "Run tests.",
            "kind": "procedure",
        },
    },
    ("POST", "/v1/agent_memories"): lambda w: {
        "category": "preference",
        "content": "Prefers express shipping.",
        "importance": 0.9,
    },
    ("PATCH", "/v1/agent_memories/{memoryId}"): lambda w: {"importance": 0.7},
    ("POST", "/v1/agent_memories/recall"): lambda w: {"limit": 5},
    ("POST", "/v1/bots"): lambda w: {"name": "another"},
    ("POST", "/v1/bots/{botId}/links"): lambda w: {
        "organizationId": w.outsider.org_id,
        "grants": {w.outsider.id: "read"},
    },
    ("POST", "/v1/channels"): lambda w: {"name": "another"},
    ("POST", "/v1/channels/{channelId}/members"): lambda w: {"add": [w.owner.id]},
    ("POST", "/v1/bots/{botId}/memory"): lambda w: {
        "command": {"_tag": "Remember", "content": "Run tests.", "tags": ["testing"]}
    },
    ("POST", "/v1/bots/{botId}/memory/purge"): lambda w: {"tag": f"from:{w.owner.id}"},
    ("POST", "/v1/bots/{botId}/memory/share"): lambda w: {"id": "mem_x", "audience": "for:bot"},
    ("POST", "/v1/bots/{botId}/memory/context"): lambda w: {"chatId": w.ids["chatId"]},
    ("POST", "/v1/chats"): lambda w: {"botId": w.ids["botId"]},
    ("POST", "/v1/chats/{chatId}/turns"): lambda w: {"input": "hello again"},
    ("POST", "/v1/chats/{chatId}/turns/{turnId}/items"): lambda w: {
        "items": [{"role": "assistant", "content": "Hello."}]
    },
    ("POST", "/v1/chats/{chatId}/turns/{turnId}/confide"): lambda w: {"text": "I was unsure."},
    ("POST", "/v1/chats/{chatId}/turns/{turnId}/complete"): lambda w: {
        "items": [{"role": "assistant", "content": "Goodbye."}]
    },
    ("PATCH", "/v1/bots/{botId}/memory/bot"): lambda w: {"expected": 0, "concurrency": 1},
}


def call_route(world: World, method: str, path: str, headers: dict[str, str]) -> Any:
    url = re.sub(r"\{(\w+)\}", lambda m: world.ids[m.group(1)], path)
    operation = DOCUMENT["paths"][path][method.lower()]
    kwargs: dict[str, Any] = {"headers": headers}
    # A required query parameter names an object of the world (`GET /v1/sessions?agentId=`).
    required = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
    params = {
        name: world.ids[name]
        for name in required
        if any(p["name"] == name and p.get("required") for p in operation["parameters"])
    }
    if params:
        kwargs["params"] = params
    if "requestBody" in operation:
        sample = BODIES.get((method, path))
        assert sample is not None, f"add a sample body for {method} {path} to BODIES"
        kwargs["json"] = sample(world)
    return world.api.client.request(method, url, **kwargs)
