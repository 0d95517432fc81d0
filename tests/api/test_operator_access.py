"""The admin token (the operator's) administers organizations, users, tokens and settings,
and reads no tenant content: 403 `Forbidden` on every other route, built FROM
infra/openapi.json so that a new route fails here until it is classified.

A route is administration only when it is listed in `ADMINISTRATION`; every other route
must carry a tag of `TENANT_TAGS` and is then tested as closed to the operator.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import Api
from tests.support.access import DOCUMENT, ROUTES, World, build_world, call_route

ADMINISTRATION = {
    ("POST", "/v1/admin/organizations"),
    ("POST", "/v1/admin/users"),
    ("POST", "/v1/admin/users/{userId}/tokens"),
    ("DELETE", "/v1/admin/tokens/{tokenPrefix}"),
    # Tenants come and go: ids, names, times and counts; the deletion shows no content.
    ("GET", "/v1/admin/organizations"),
    ("DELETE", "/v1/admin/organizations/{orgId}"),
    ("GET", "/v1/organizations/{orgId}/settings"),
    ("PATCH", "/v1/organizations/{orgId}/settings"),
    ("GET", "/v1/me"),  # who the token is: the operator may ask too
    ("GET", "/v1/me/tokens"),  # the operator's own tokens: none
    ("GET", "/v1/capabilities"),  # what the deployment runs: names, never keys or content
    ("POST", "/v1/organizations/{orgId}/users/{userId}/erase"),  # removes, shows no content
    # An organization's people and service keys: ids, names and times, never content.
    ("GET", "/v1/organizations/{orgId}/users"),
    ("POST", "/v1/organizations/{orgId}/users"),
    ("DELETE", "/v1/organizations/{orgId}/users/{userId}"),
    ("PATCH", "/v1/organizations/{orgId}/users/{userId}"),
    ("GET", "/v1/organizations/{orgId}/service-keys"),
    ("POST", "/v1/organizations/{orgId}/service-keys"),
    ("DELETE", "/v1/organizations/{orgId}/service-keys/{keyId}"),
}
# A person's own tokens: the admin token is configured, not issued, so it has none to add to
# (409) or revoke (403).
NOT_A_PERSON = {("POST", "/v1/me/tokens"): 409, ("DELETE", "/v1/me/tokens/{tokenPrefix}"): 403}
# Tags of routes that read or change what tenants' people and agents wrote.
TENANT_TAGS = {
    "agents",
    "sessions",
    "agent memory",
    "agent versions",
    "agent memories",
    "bots",
    "bot memory",
    "channels",
    "chats",
    "threads",
    "events",
    "export",  # a person's own export: their content
}
SECRET = "The trip budget is 1500 EUR"


def _tags(method: str, path: str) -> set[str]:
    return set(DOCUMENT["paths"][path][method.lower()].get("tags", []))


def classify(method: str, path: str) -> str:
    if (method, path) in ADMINISTRATION:
        return "administration"
    if (method, path) in NOT_A_PERSON:
        return "person"
    if _tags(method, path) & TENANT_TAGS:
        return "tenant"
    raise AssertionError(
        f"classify {method} {path} (tags {sorted(_tags(method, path))}): list it in "
        "ADMINISTRATION or give it a tag of TENANT_TAGS"
    )


TENANT_ROUTES = [r for r in ROUTES if classify(*r) == "tenant"]


def test_every_route_is_classified() -> None:
    assert set(ROUTES) >= ADMINISTRATION, "a listed administration route left the document"
    for method, path in ROUTES:
        classify(method, path)
    assert len(TENANT_ROUTES) >= 15


def _with_content(api: Api) -> World:
    """The access matrix's objects, plus a session history and memory with content."""
    world = build_world(api)
    client, headers = api.client, world.owner.headers
    # Without a model: no learning changes the session while the test compares it.
    body = {"agentId": world.ids["agentId"], "kind": "subagent", "model": None}
    created = client.post("/v1/sessions", json=body, headers=headers)
    assert created.status_code == 201, created.text
    session = world.ids["sessionId"] = created.json()["session"]["id"]
    turn = {"items": [{"role": "user", "content": f"{SECRET}."}]}
    assert client.post(f"/v1/sessions/{session}/turns", json=turn, headers=headers).is_success
    view = world.session_view()
    remember = {
        "expected": view["head"],
        "revision": view["revision"],
        "command": {"_tag": "Remember", "key": "budget", "content": SECRET, "kind": "fact"},
    }
    answer = client.post(f"/v1/sessions/{session}/memory", json=remember, headers=headers)
    assert answer.is_success, answer.text
    return world


def _tenant_view(world: World) -> list[Any]:
    """What the owner reads of their objects (to see that the operator changed nothing)."""
    client, headers = world.api.client, world.owner.headers
    urls = [
        f"/v1/sessions/{world.ids['sessionId']}",
        f"/v1/sessions/{world.ids['sessionId']}/memory",
        f"/v1/agents/{world.ids['agentId']}/memory",
        f"/v1/agent_memories/{world.ids['memoryId']}",
        "/v1/agent_memories",
    ]
    return [client.get(url, headers=headers).json() for url in urls]


@pytest.mark.parametrize(
    ("method", "path"), TENANT_ROUTES, ids=[f"{m} {p}" for m, p in TENANT_ROUTES]
)
def test_the_operator_gets_403_on_tenant_routes(api: Api, method: str, path: str) -> None:
    world = _with_content(api)
    before = _tenant_view(world)

    answer = call_route(world, method, path, api.admin)

    assert answer.status_code == 403, f"{method} {path}: {answer.status_code} {answer.text}"
    assert answer.json()["error"]["_tag"] == "Forbidden"
    assert "1500" not in answer.text
    assert _tenant_view(world) == before


@pytest.mark.parametrize(
    ("method", "path"), sorted(ADMINISTRATION), ids=[f"{m} {p}" for m, p in sorted(ADMINISTRATION)]
)
def test_the_operator_administers(api: Api, method: str, path: str) -> None:
    world = build_world(api)

    answer = call_route(world, method, path, api.admin)

    assert answer.is_success, f"{method} {path}: {answer.status_code} {answer.text}"


@pytest.mark.parametrize(
    ("method", "path"), sorted(NOT_A_PERSON), ids=[f"{m} {p}" for m, p in sorted(NOT_A_PERSON)]
)
def test_the_operator_is_no_person(api: Api, method: str, path: str) -> None:
    world = build_world(api)

    answer = call_route(world, method, path, api.admin)

    assert answer.status_code == NOT_A_PERSON[(method, path)], answer.text
    owner = api.client.get("/v1/me/tokens", headers=world.owner.headers).json()["tokens"]
    assert world.ids["tokenPrefix"] in [t["prefix"] for t in owner]


def test_the_operator_gets_403_for_a_session_that_does_not_exist(api: Api) -> None:
    """Refused before the lookup: the operator cannot probe session ids either."""
    for url in ("/v1/sessions/s_missing", "/v1/sessions/s_missing/fork"):
        method = "POST" if url.endswith("fork") else "GET"
        answer = api.client.request(
            method, url, json={} if method == "POST" else None, headers=api.admin
        )
        assert answer.status_code == 403, answer.text
    turn = {"items": [{"role": "user", "content": "hi"}]}
    answer = api.client.post("/v1/sessions/s_missing/turns", json=turn, headers=api.admin)
    assert answer.status_code == 403, answer.text


def test_an_organization_admin_still_reads_their_organization(api: Api) -> None:
    """Only the operator is shut out: an organization's admin keeps its grants inside it."""
    world = _with_content(api)
    admin = api.user(world.org, role="admin")
    session = world.ids["sessionId"]
    answer = api.client.get(f"/v1/sessions/{session}", headers=admin.headers)
    assert answer.status_code == 200, answer.text
    assert re.fullmatch(r"s_\w+", answer.json()["session"]["id"])
