"""Lists users expect: agents, an agent's sessions, a session's items; and a
Turn's `learningReason`. Over HTTP on the embedded AWS."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from tests.conftest import Api, User
from tests.support.requests import agent, get, post, session


@pytest.fixture
def settings(settings: Any) -> Any:
    # Anthropic is allowed and keyed, so a session may name it (until `Forgetting.lost`).
    update = {"allowed_models": "anthropic/*,local/*", "anthropic_api_key": "sk-ant-test"}
    return settings.model_copy(update=update)


@dataclass
class Forgetting:
    """The deployment's catalog, until a restart without Anthropic's key (`lost`): a
    session that named an Anthropic model then has a provider not configured."""

    real: Any
    lost: bool = False

    def resolve(self, name: str | None) -> Any:
        if self.lost and (name or "").startswith("anthropic/"):
            return None
        return self.real.resolve(name)

    def providers(self) -> tuple[str, ...]:
        return tuple(p for p in self.real.providers() if not (self.lost and p == "anthropic"))


@pytest.fixture
def adapters(adapters: Any) -> Any:
    return replace(adapters, models=Forgetting(adapters.models))


def walk(api: Api, user: User, url: str, limit: int) -> list[list[str]]:
    """Every page of a list, following `starting_after` as a client would."""
    pages: list[list[str]] = []
    after: str | None = None
    joiner = "&" if "?" in url else "?"
    while True:
        position = f"&starting_after={after}" if after else ""
        page = get(api, user, f"{url}{joiner}limit={limit}{position}")
        assert page["object"] == "list"
        pages.append([o["id"] for o in page["data"]])
        if not page["has_more"]:
            return pages
        after = page["data"][-1]["id"]


def flat(pages: list[list[str]]) -> list[str]:
    return [one for page in pages for one in page]


@pytest.fixture
def org(api: Api) -> tuple[User, User, User, User]:
    org = api.org()
    return (
        api.user(org),
        api.user(org),
        api.user(org, role="admin"),
        api.user(api.org(name="Other")),
    )


def test_agents_list_the_callers_own_and_shared_agents_newest_first(
    api: Api, org: tuple[User, User, User, User]
) -> None:
    ana, bob, boss, stranger = org
    mine = [agent(api, ana, f"a{n}") for n in range(5)]
    shared = agent(api, bob, "shared", members=(ana.id,))
    private = agent(api, bob, "bob's")
    pages = walk(api, ana, "/v1/agents", limit=2)
    assert [len(p) for p in pages] == [2, 2, 2]
    assert flat(pages) == [shared, *reversed(mine)]
    assert [a["id"] for a in get(api, bob, "/v1/agents")["data"]] == [private, shared]
    # An organization admin sees every agent of the organization; another org none.
    assert len(get(api, boss, "/v1/agents?limit=100")["data"]) == 7
    assert get(api, stranger, "/v1/agents")["data"] == []
    first = get(api, ana, "/v1/agents?limit=1")["data"][0]
    assert first == {"id": shared, "name": "shared", "owner": bob.id, "members": [ana.id]}


def test_sessions_of_an_agent_are_the_callers_own(
    api: Api, org: tuple[User, User, User, User]
) -> None:
    ana, bob, boss, stranger = org
    shared = agent(api, ana, members=(bob.id,))
    anas = [session(api, ana, shared) for _ in range(3)]
    bobs = session(api, bob, shared)
    assert flat(walk(api, ana, f"/v1/sessions?agentId={shared}", limit=2)) == anas[::-1]
    assert [s["id"] for s in get(api, bob, f"/v1/sessions?agentId={shared}")["data"]] == [bobs]
    assert len(get(api, boss, f"/v1/sessions?agentId={shared}")["data"]) == 4
    view = get(api, ana, f"/v1/sessions?agentId={shared}&limit=1")["data"][0]
    assert view == get(api, ana, f"/v1/sessions/{anas[-1]}")["session"]
    # A fork is listed too (it is a session of the same agent).
    fork = post(api, ana, f"/v1/sessions/{anas[0]}/fork", {})["session"]["id"]
    assert get(api, ana, f"/v1/sessions?agentId={shared}&limit=1")["data"][0]["id"] == fork
    # Another organization's agent is unknown, and agentId is required.
    error = get(api, stranger, f"/v1/sessions?agentId={shared}", status=404)["error"]
    assert error["_tag"] == "NotFound"
    assert get(api, ana, "/v1/sessions", status=400)["error"]["path"] == ["agentId"]


def test_items_page_in_order_with_their_turn(api: Api, org: tuple[User, User, User, User]) -> None:
    ana, bob, _boss, stranger = org
    sid = session(api, ana, agent(api, ana, members=(bob.id,)))
    said = [f"line {n}" for n in range(5)]
    turn = post(
        api,
        ana,
        f"/v1/sessions/{sid}/turns",
        {"items": [{"role": "user", "content": text} for text in said]},
    )["turn"]
    tool = {"role": "tool", "content": "42", "app": "calc"}
    post(api, ana, f"/v1/sessions/{sid}/turns", {"items": [tool], "model": "local/rules"})
    pages = walk(api, ana, f"/v1/sessions/{sid}/items", limit=2)
    assert flat(pages) == [f"i-{n:02d}" for n in range(1, 7)]
    items = get(api, ana, f"/v1/sessions/{sid}/items?limit=100")["data"]
    assert [i["content"] for i in items] == [*said, "42"]
    assert items[0]["turnId"] == turn["id"]
    assert items[0]["object"] == "session_item"
    assert (items[-1]["app"], items[-1]["model"], items[-1]["role"]) == (
        "calc",
        "local/rules",
        "tool",
    )
    # Sessions are private: a member of the agent and another organization get 404.
    for other in (bob, stranger):
        assert (
            get(api, other, f"/v1/sessions/{sid}/items", status=404)["error"]["_tag"] == "NotFound"
        )
    bad = get(api, ana, f"/v1/sessions/{sid}/items?starting_after=x", status=400)
    assert bad["error"]["path"] == ["starting_after"]
    assert get(api, ana, f"/v1/sessions/{sid}/items?limit=0", status=400)["error"]["path"] == [
        "limit"
    ]


class Refusing:
    """A learning workflow that answers as a throttled or unreachable one does."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer

    def start(self, pool: Any, *, upto: int, reason: str) -> str:
        if self.answer is None:
            raise Unavailable("the workflow service is unavailable")
        return self.answer

    def executions(self, pool: Any) -> list[dict[str, Any]]:
        return []


def test_a_skipped_turn_says_why(
    api: Api, services: Any, adapters: Any, org: tuple[User, User, User, User]
) -> None:
    ana = org[0]
    agent_id = agent(api, ana)

    def reason(items: list[dict[str, Any]] | None = None, **body: Any) -> Any:
        sid = session(api, ana, agent_id, **body)
        sent = items or [{"role": "user", "content": "My budget is 1500 EUR."}]
        turn = post(api, ana, f"/v1/sessions/{sid}/turns", {"items": sent})["turn"]
        assert (turn["learning"] == "skipped") == (turn["learningReason"] is not None)
        return turn["learningReason"]

    assert reason() == "noModel"
    forgetting = adapters.models
    named = session(api, ana, agent_id, model="anthropic/claude-x")
    forgetting.lost = True
    try:
        sent = [{"role": "user", "content": "My budget is 1500 EUR."}]
        turn = post(api, ana, f"/v1/sessions/{named}/turns", {"items": sent})["turn"]
        assert turn["learningReason"] == "modelNotConfigured"
    finally:
        forgetting.lost = False
    app_only = [{"role": "tool", "content": "42", "app": "calc"}]
    assert reason(app_only, model="local/rules") == "appOnly"
    boss = api.user(ana.org_id, role="admin")
    off = api.client.patch(
        f"/v1/organizations/{ana.org_id}/settings",
        json={"memory": {"use": True, "generate": False}},
        headers=boss.headers,
    )
    assert off.status_code == 200, off.text
    assert reason(model="local/rules") == "generateOff"
    api.client.patch(
        f"/v1/organizations/{ana.org_id}/settings", json={"memory": None}, headers=boss.headers
    )
    real = services.sessions.learning
    try:
        services.sessions.learning = Refusing(None)
        assert reason(model="local/rules") == "workflowUnreachable"
        services.sessions.learning = Refusing("skipped")
        assert reason(model="local/rules") == "workflowUnreachable"
        services.sessions.learning = Refusing("throttled")
        assert reason(model="local/rules") == "throttled"
        services.sessions.learning = Refusing("started")
        assert reason(model="local/rules") is None
    finally:
        services.sessions.learning = real


def test_a_wrong_method_lists_every_documented_method(api: Api) -> None:
    for path, allowed in (("/v1/agents", "GET, POST"), ("/v1/sessions/s_1", "DELETE, GET")):
        answer = api.client.request("PUT", path, headers=api.admin)
        assert answer.status_code == 405
        assert answer.headers["allow"] == allowed


def test_a_fixed_path_lists_its_own_methods(api: Api) -> None:
    answer = api.client.request("PUT", "/v1/agent_memories/recall", headers=api.admin)
    assert answer.headers["allow"] == "POST"
