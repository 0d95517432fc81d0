"""The access matrix, built FROM infra/openapi.json: every route, present and future, is
called as its owner, as a same-organization stranger, as another organization's user,
without a token and with a revoked token.

A new route fails here until it is classified in `AUDIENCE` (who may use it) and, when it
takes a body, given a sample in `BODIES`: adding a route means deciding who may call it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import Api, SharedApp, fresh_counters
from tests.support.access import (
    BODIES,
    DOCUMENT,
    ROUTES,
    build_world,
    call_route,
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
    (r"^/v1/me/export$", "org"),  # each person's own objects; the operator's is 403
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
        # `GET /v1/chats` lists the caller's own chats: a stranger's list is theirs, empty.
        creates = path == "/v1/sessions" or (
            method == "POST" and path in ("/v1/chats", "/v1/threads")
        )
        return {404} if names_object or creates else {0}
    return {0}


@pytest.fixture
def api(shared_app: SharedApp) -> Api:
    return fresh_counters(shared_app)


CALLERS = ("anonymous", "revoked", "outsider", "outsider-admin", "operator", "stranger", "owner")


# Each person with their own token, and again reached through their organization's service
# key (`Act-As`); without a token and with the admin token a request is the same either way.
# Callers refused first, then the owners: an allowed write builds the world anew.
CALLS = [
    (credential, caller)
    for caller in CALLERS
    for credential in ("token", "service-key")
    if credential == "token" or caller not in ("anonymous", "operator")
]


def _headers(api: Api, world: Any, outsider_admin: Any, credential: str, caller: str) -> Any:
    if caller in ("anonymous", "operator"):
        return {} if caller == "anonymous" else api.admin
    person = {
        "revoked": world.revoked,
        "outsider": world.outsider,
        "outsider-admin": outsider_admin,
        "stranger": world.stranger,
        "owner": world.owner,
    }[caller]
    if credential == "token":
        return person.headers
    if caller == "revoked":
        return {"Authorization": f"Bearer {world.revoked_key}", "Act-As": world.owner.id}
    return world.acting(person)


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_route_access(api: Api, method: str, path: str) -> None:
    """The same answers with personal tokens and with a service key acting for each person."""
    world = None
    for credential, caller in CALLS:
        if world is None:
            world = build_world(api)  # fresh objects: an allowed DELETE must not hide the next
            outsider_admin = api.user(world.outsider.org_id, role="admin")
        headers = _headers(api, world, outsider_admin, credential, caller)
        answer = call_route(world, method, path, headers)
        if answer.status_code < 400 and method != "GET":
            world = None  # a refused call or a read changed nothing; an allowed write may have
        allowed = expected(method, path, caller)
        who = f"{caller} ({credential})"
        if allowed == {0}:
            assert answer.status_code < 500, f"{who}: {answer.status_code} {answer.text}"
            assert answer.status_code not in (401, 403, 404), (
                f"{who} should be allowed {method} {path}: {answer.status_code} {answer.text}"
            )
        else:
            assert answer.status_code in allowed, (
                f"{who} on {method} {path}: {answer.status_code} {answer.text}"
            )
            assert answer.json()["error"]["_tag"] in {"Unauthorized", "Forbidden", "NotFound"}


def test_the_matrix_covers_the_document() -> None:
    assert ("POST", "/v1/admin/users") in ROUTES
    for method, path in ROUTES:
        audience(path)
        if "requestBody" in DOCUMENT["paths"][path][method.lower()]:
            assert (method, path) in BODIES, f"add a sample body for {method} {path}"
