"""The access matrix, built FROM infra/openapi.json: every route, present and future, is
called as its owner, as a same-organization stranger, as another organization's user,
without a token and with a revoked token.

A new route fails here until it is classified in `AUDIENCE` (who may use it) and, when it
takes a body, given a sample in `BODIES`: adding a route means deciding who may call it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from infra.gen_openapi import OPENAPI_PATH
from tests.conftest import Api, User

DOCUMENT = json.loads(OPENAPI_PATH.read_text())
ROUTES = sorted(
    (method.upper(), path)
    for path, operations in DOCUMENT["paths"].items()
    for method in operations
    if path != "/healthz"
)

# Who may use a route (besides the service admin), by path prefix:
#   "service-admin": only the admin token; an organization's member gets 403, and 404 when
#                    the route names an object of another organization.
#   "org-admin":     the organization's admins; members 403, other organizations 404.
#   "org":           any member of the organization; other organizations 404 on object ids.
#   "owner":         the object's owner (and members where granted); others 404.
#   "self":          any valid token, the operator's included: it answers who the token is.
AUDIENCE: list[tuple[str, str]] = [
    (r"^/v1/admin/", "service-admin"),
    (r"^/v1/me$", "self"),
    (r"^/v1/capabilities$", "self"),  # what the deployment runs, for any valid token
    (r"^/v1/me/tokens$", "self"),  # the caller's own tokens (the operator's list is empty)
    (r"^/v1/me/tokens/", "owner"),  # revoking one of the caller's own tokens
    (r"^/v1/organizations/\{orgId\}/", "org-admin"),
    (r"^/v1/agent_memories", "org"),
    (r"^/v1/agents/\{agentId\}", "owner"),
    (r"^/v1/agents$", "org"),
    (r"^/v1/sessions/\{sessionId\}", "owner"),
    (r"^/v1/sessions$", "owner"),  # creating a session needs access to its agent
    (r"^/v1/bots$", "org"),
    (r"^/v1/bots/\{botId\}", "owner"),  # a grant on the bot; memory is the caller's own
    (r"^/v1/channels$", "org"),
    (r"^/v1/events$", "org"),  # the caller's organization's feed, filtered by each object's rule
    (r"^/v1/channels/\{channelId\}", "owner"),  # its members (changes: creator or admin)
    (r"^/v1/chats", "owner"),  # a chat's readers; creating one needs read on its bot
    (r"^/v1/threads", "owner"),  # a thread's user alone; creating one needs read on its agent
]


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
    ("POST", "/v1/agents"): lambda w: {"name": "another"},
    ("PATCH", "/v1/agents/{agentId}/draft"): lambda w: {"memory": {"options": {"lastMessages": 5}}},
    ("POST", "/v1/agents/{agentId}/publish"): lambda w: {},
    ("POST", "/v1/agents/{agentId}/versions/{n}/activate"): lambda w: {},
    ("POST", "/v1/threads"): lambda w: {"agentId": w.ids["agentId"]},
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


def audience(path: str) -> str:
    for pattern, who in AUDIENCE:
        if re.search(pattern, path):
            return who
    raise AssertionError(f"classify the new route {path} in AUDIENCE")


def expected(method: str, path: str, caller: str) -> set[int]:
    """Statuses allowed for `caller` on a route; "ok" means any 2xx or a non-access 4xx."""
    if caller in ("anonymous", "revoked"):
        return {401}
    who = audience(path)
    if who == "self":
        return {0}
    if caller == "operator":
        # The admin token administers; tenants' objects and content are closed to it.
        return {0} if who in ("service-admin", "org-admin") else {403}
    if caller == "outsider-admin":
        caller = "outsider"  # another organization's admin holds nothing in this one
    names_object = "{" in path
    if who == "service-admin":
        if caller == "outsider" and (names_object or path.endswith("/users")):
            return {404}
        return {403}
    if who == "org-admin":
        return {404} if caller == "outsider" else {403}
    if who == "org":
        return {404} if caller == "outsider" and names_object else {0}
    if caller in ("stranger", "outsider"):
        creates = path in ("/v1/sessions", "/v1/chats") or (method, path) == ("POST", "/v1/threads")
        return {404} if names_object or creates else {0}
    return {0}


def _call(world: World, method: str, path: str, headers: dict[str, str]) -> Any:
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


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Api, Any]]:
    """One embedded AWS and one app for the module, wired as tests/conftest.py wires them
    (its `api`): provisioning a fresh one per route cost most of each case. Every case builds
    its own organizations and objects (`build_world`), so no case sees another's."""
    from dataclasses import replace

    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters, build_services, step_services
    from agent_memory.persistence.limits import ProcessCounters
    from tests.reliability.world import embedded_settings

    with embedded_settings() as (session, _local, settings):
        counters = ProcessCounters()
        adapters = replace(aws_adapters(settings, session), counters=counters)
        services = build_services(settings, adapters)
        step_services.use(services)
        try:
            with TestClient(create_app(lambda: services), raise_server_exceptions=False) as c:
                yield Api(c), counters
        finally:
            step_services.reset()


@pytest.fixture
def api(shared: tuple[Api, Any]) -> Api:
    """The module's app, with rate counters as fresh as a new process's (the admin token
    would otherwise count every case's calls against one limit)."""
    made, counters = shared
    counters._windows.clear()
    return made


CALLERS = ("anonymous", "revoked", "outsider", "outsider-admin", "operator", "stranger", "owner")


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_route_access(api: Api, method: str, path: str) -> None:
    world = None
    for caller in CALLERS:
        if world is None:
            world = build_world(api)  # fresh objects: an allowed DELETE must not hide the next
            outsider_admin = api.user(world.outsider.org_id, role="admin")
        headers = {
            "anonymous": {},
            "revoked": world.revoked.headers,
            "outsider": world.outsider.headers,
            "outsider-admin": outsider_admin.headers,
            "operator": api.admin,
            "stranger": world.stranger.headers,
            "owner": world.owner.headers,
        }[caller]
        answer = _call(world, method, path, headers)
        if answer.status_code < 400 and method != "GET":
            world = None  # a refused call or a read changed nothing; an allowed write may have
        allowed = expected(method, path, caller)
        if allowed == {0}:
            assert answer.status_code < 500, f"{caller}: {answer.status_code} {answer.text}"
            assert answer.status_code not in (401, 403, 404), (
                f"{caller} should be allowed {method} {path}: {answer.status_code} {answer.text}"
            )
        else:
            assert answer.status_code in allowed, (
                f"{caller} on {method} {path}: {answer.status_code} {answer.text}"
            )
            assert answer.json()["error"]["_tag"] in {"Unauthorized", "Forbidden", "NotFound"}


def test_the_matrix_covers_the_document() -> None:
    assert ("POST", "/v1/admin/users") in ROUTES
    for method, path in ROUTES:
        audience(path)
        if "requestBody" in DOCUMENT["paths"][path][method.lower()]:
            assert (method, path) in BODIES, f"add a sample body for {method} {path}"
