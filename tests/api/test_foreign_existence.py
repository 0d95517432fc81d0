"""Another organization's objects do not exist for its callers: for every route of
infra/openapi.json that names an object (in its path or body), an admin and a member of
another organization get exactly the answer (status, `_tag`, message, path) that an id
which does not exist gets.

A new route fails here until it is listed: its ids are in the path, in `BODY_IDS`, or it
names none (`WITHOUT_IDS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Api, SharedApp, User, fresh_counters
from tests.support.access import (
    BODIES,
    DOCUMENT,
    ROUTES,
    World,
    build_world,
)


@pytest.fixture
def api(shared_app: SharedApp) -> Api:
    return fresh_counters(shared_app)


# Routes whose body names an object of an organization: how to name one in a body.
BODY_IDS: dict[tuple[str, str], Callable[[str], dict[str, Any]]] = {
    ("POST", "/v1/admin/users"): lambda org: {"organizationId": org},
    ("POST", "/v1/sessions"): lambda agent: {"agentId": agent},
    ("POST", "/v1/threads"): lambda agent: {"agentId": agent},
    ("POST", "/v1/agents"): lambda user: {"name": "helper", "members": [user]},
    ("POST", "/v1/bots"): lambda user: {"name": "helper", "grants": {user: "read"}},
    ("POST", "/v1/channels"): lambda user: {"name": "team", "members": [user]},
    ("POST", "/v1/chats"): lambda bot: {"botId": bot},
}
# Which world id a body id is.
BODY_ID_OF = {
    ("POST", "/v1/admin/users"): "orgId",
    ("POST", "/v1/sessions"): "agentId",
    ("POST", "/v1/threads"): "agentId",
    ("POST", "/v1/agents"): "userId",
    ("POST", "/v1/bots"): "userId",
    ("POST", "/v1/channels"): "userId",
    ("POST", "/v1/chats"): "botId",
}
# Routes whose query names an object: which world id each query parameter is.
QUERY_IDS: dict[tuple[str, str], dict[str, str]] = {
    ("GET", "/v1/sessions"): {"agentId": "agentId"},
    ("GET", "/v1/chats"): {"botId": "botId"},  # a filter by a bot the caller reaches
}
# Routes that name no object: the caller's own organization is implied.
WITHOUT_IDS = {
    ("GET", "/v1/agents"),  # the caller's own and shared agents
    ("POST", "/v1/admin/organizations"),
    ("GET", "/v1/admin/organizations"),  # every organization, for the admin token only
    ("GET", "/v1/agent_memories"),
    ("POST", "/v1/agent_memories"),
    ("POST", "/v1/agent_memories/recall"),
    ("GET", "/v1/threads"),  # the caller's own threads
    ("GET", "/v1/bots"),  # the bots the caller reaches
    ("GET", "/v1/channels"),  # the caller's channels
    ("GET", "/v1/events"),  # the caller's own organization's feed
    ("GET", "/v1/me"),  # the caller itself
    ("GET", "/v1/me/tokens"),  # the caller's own tokens
    ("POST", "/v1/me/tokens"),
    ("GET", "/v1/me/export"),  # the caller's own objects
    ("GET", "/v1/capabilities"),  # what this deployment runs, the same for every caller
}
PARAMETER = re.compile(r"\{(\w+)\}")


def missing(value: str) -> str:
    """An id shaped like `value` that names nothing: its last four characters zeroed."""
    changed = value[:-4] + "0000"
    return changed if changed != value else value[:-4] + "1111"


def _probed(method: str, path: str) -> bool:
    return bool(PARAMETER.search(path)) or (method, path) in BODY_IDS | QUERY_IDS.keys()


PROBED = [route for route in ROUTES if _probed(*route)]


def test_every_route_is_audited() -> None:
    for method, path in ROUTES:
        assert _probed(method, path) or (method, path) in WITHOUT_IDS, (
            f"{method} {path}: list the ids its body names in BODY_IDS, or add it to WITHOUT_IDS"
        )
    assert {("POST", "/v1/admin/users/{userId}/tokens")} <= set(PROBED)


def _answer(world: World, method: str, path: str, ids: dict[str, str], caller: User) -> Any:
    url = PARAMETER.sub(lambda m: ids[m.group(1)], path)
    operation = DOCUMENT["paths"][path][method.lower()]
    kwargs: dict[str, Any] = {"headers": caller.headers}
    if (method, path) in QUERY_IDS:
        kwargs["params"] = {q: ids[w] for q, w in QUERY_IDS[(method, path)].items()}
    if (method, path) in BODY_IDS:
        kwargs["json"] = BODY_IDS[(method, path)](ids[BODY_ID_OF[(method, path)]])
    elif "requestBody" in operation:
        kwargs["json"] = BODIES[(method, path)](world)
    answer = world.api.client.request(method, url, **kwargs)
    error = answer.json().get("error") if answer.content else None
    if error is not None:
        # An answer may name the id the caller sent (a path into a map): that is no leak.
        sent = {v: f"<{k}>" for k, v in ids.items()}
        error = {
            **error,
            "path": [sent.get(p, p) if isinstance(p, str) else p for p in error["path"]],
        }
    return answer.status_code, error


@pytest.mark.parametrize(("method", "path"), PROBED, ids=[f"{m} {p}" for m, p in PROBED])
@pytest.mark.parametrize("role", ["admin", "member"])
def test_a_foreign_object_answers_as_a_missing_one(
    api: Api, method: str, path: str, role: str
) -> None:
    world = build_world(api)
    caller = api.user(world.outsider.org_id, role=role)
    names = set(PARAMETER.findall(path))
    if (method, path) in BODY_IDS:
        names.add(BODY_ID_OF[(method, path)])
    names |= set(QUERY_IDS.get((method, path), {}).values())
    absent = {k: (missing(v) if k in names else v) for k, v in world.ids.items()}

    foreign = _answer(world, method, path, world.ids, caller)
    unknown = _answer(world, method, path, absent, caller)

    assert foreign == unknown, f"{role} of another organization: {foreign} vs {unknown}"
    assert foreign[0] in (400, 403, 404), foreign  # refused either way, never allowed


def test_minting_a_token_for_another_organizations_user(api: Api) -> None:
    """The reported case: another organization's admin learnt that the user exists."""
    mine, theirs = api.org(), api.org()
    user = api.user(mine)
    admin = api.user(theirs, role="admin")
    url = "/v1/admin/users/{}/tokens"

    foreign = api.client.post(url.format(user.id), json={}, headers=admin.headers)
    unknown = api.client.post(url.format(missing(user.id)), json={}, headers=admin.headers)

    assert foreign.status_code == unknown.status_code == 404
    assert foreign.json() == unknown.json()
    assert foreign.json()["error"]["message"] == "user not found"
