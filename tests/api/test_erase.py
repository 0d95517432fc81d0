"""Deleting sessions and agents, erasing a person (issue 17), over HTTP on the embedded AWS."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.ports import Delete
from tests.api.test_listing import agent, get, post, session
from tests.conftest import Api, User


@pytest.fixture
def people(api: Api) -> tuple[User, User, User, User]:
    org = api.org()
    return api.user(org), api.user(org), api.user(org, role="admin"), api.user(api.org())


def turn(api: Api, user: User, sid: str, *texts: str) -> None:
    items = [{"role": "user", "content": t} for t in texts]
    post(api, user, f"/v1/sessions/{sid}/turns", {"items": items})


def delete(api: Api, user: User, url: str, status: int = 200) -> Any:
    answer = api.client.delete(url, headers=user.headers)
    assert answer.status_code == status, answer.text
    return answer.json()


def remember(api: Api, user: User, agent_id: str) -> None:
    command = {"_tag": "Remember", "key": "tone", "kind": "preference", "content": "Be brief."}
    post(api, user, f"/v1/agents/{agent_id}/memory", {"expected": 0, "command": command})


def test_deleting_a_session_removes_its_history_and_keeps_agent_memory(
    api: Api, people: tuple[User, User, User, User]
) -> None:
    ana, bob, _boss, stranger = people
    agent_id = agent(api, ana, members=(bob.id,))
    sid = session(api, ana, agent_id)
    kept = session(api, ana, agent_id)
    turn(api, ana, sid, "one", "two", "three")
    remember(api, ana, agent_id)
    # Only its owner (or an org admin) may: a member of the agent and a stranger get 404.
    for other in (bob, stranger):
        assert delete(api, other, f"/v1/sessions/{sid}", 404)["error"]["_tag"] == "NotFound"
    answer = delete(api, ana, f"/v1/sessions/{sid}")
    assert answer == {"id": sid, "object": "session", "deleted": True, "items": 3}
    for url in ("", "/items", "/memory", "/learning"):
        get(api, ana, f"/v1/sessions/{sid}{url}", 404)
    assert [s["id"] for s in get(api, ana, f"/v1/sessions?agentId={agent_id}")["data"]] == [kept]
    assert "tone" in get(api, ana, f"/v1/agents/{agent_id}/memory")["entries"]
    assert delete(api, ana, f"/v1/sessions/{sid}", 404)["error"]["_tag"] == "NotFound"
    # A turn on a deleted session is refused like one on an unknown session.
    answer = api.client.post(
        f"/v1/sessions/{sid}/turns",
        json={"items": [{"role": "user", "content": "x"}]},
        headers=ana.headers,
    )
    assert answer.status_code == 404


def test_an_interrupted_delete_is_finished_by_the_next(
    api: Api, services: Any, people: tuple[User, User, User, User], monkeypatch: Any
) -> None:
    ana = people[0]
    sid = session(api, ana, agent(api, ana))
    for n in range(3):
        turn(api, ana, sid, *(f"line {n}-{k}" for k in range(60)))
    store = services.erasure._repo._store
    real = store.write
    calls = {"n": 0}

    def failing(actions: Any) -> None:
        if any(isinstance(a, Delete) for a in actions):
            calls["n"] += 1
            if calls["n"] == 2:
                raise Unavailable("the table is unavailable")
        real(actions)

    monkeypatch.setattr(store, "write", failing)
    assert api.client.delete(f"/v1/sessions/{sid}", headers=ana.headers).status_code == 503
    # Half deleted: it reads as gone already, and a second DELETE finishes the work.
    get(api, ana, f"/v1/sessions/{sid}", 404)
    answer = delete(api, ana, f"/v1/sessions/{sid}")
    assert answer["deleted"] is True
    assert 0 < answer["items"] < 180
    delete(api, ana, f"/v1/sessions/{sid}", 404)


def test_deleting_an_agent_takes_its_sessions_and_memory(
    api: Api, people: tuple[User, User, User, User]
) -> None:
    ana, bob, boss, stranger = people
    agent_id = agent(api, ana, members=(bob.id,))
    sessions = [session(api, ana, agent_id), session(api, bob, agent_id)]
    turn(api, bob, sessions[1], "hello")
    remember(api, ana, agent_id)
    other = agent(api, ana, "other")
    assert delete(api, bob, f"/v1/agents/{agent_id}", 403)["error"]["_tag"] == "Forbidden"
    assert delete(api, stranger, f"/v1/agents/{agent_id}", 404)["error"]["_tag"] == "NotFound"
    answer = delete(api, boss, f"/v1/agents/{agent_id}")
    assert answer == {"id": agent_id, "object": "agent", "deleted": True, "sessions": 2}
    for url in ("", "/memory", "/versions"):
        get(api, ana, f"/v1/agents/{agent_id}{url}", 404)
    get(api, bob, f"/v1/sessions/{sessions[1]}", 404)
    assert [a["id"] for a in get(api, ana, "/v1/agents")["data"]] == [other]
    delete(api, ana, f"/v1/agents/{agent_id}", 404)


def test_erasing_a_person_counts_what_went_and_a_second_erase_counts_zero(
    api: Api, people: tuple[User, User, User, User]
) -> None:
    ana, bob, boss, stranger = people
    first, second = agent(api, ana, members=(bob.id,)), agent(api, bob)
    bobs = [session(api, bob, first), session(api, bob, second)]
    anas = session(api, ana, first)
    turn(api, bob, bobs[0], "a", "b")
    turn(api, bob, bobs[1], "c")
    turn(api, ana, anas, "mine")
    thread = post(api, bob, "/v1/threads", {"agentId": second})["thread"]["id"]
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    post(api, bob, f"/v1/threads/{thread}/messages", {"messages": messages})
    bot = post(api, ana, "/v1/bots", {"name": "Helper", "grants": {bob.id: "write"}})["bot"]["id"]
    remembered = {"command": {"_tag": "Remember", "content": "Bob likes tea."}}
    post(api, bob, f"/v1/bots/{bot}/memory", remembered)
    post(api, ana, f"/v1/bots/{bot}/memory", {"command": {"_tag": "Remember", "content": "Ana."}})
    url = f"/v1/organizations/{ana.org_id}/users/{bob.id}/erase"
    # A member may not; another organization's admin learns nothing.
    assert api.client.post(url, headers=ana.headers).status_code == 403
    assert api.client.post(url, headers=stranger.headers).status_code == 404
    answer = post(api, boss, url, {})
    assert answer == {
        "userId": bob.id,
        "organizationId": ana.org_id,
        "sessions": 2,
        "items": 3,
        "threads": 1,
        "messages": 2,
        "workingMemory": 0,
        "botEntries": 1,
    }
    for sid in bobs:
        get(api, bob, f"/v1/sessions/{sid}", 404)
    get(api, bob, f"/v1/threads/{thread}", 404)
    assert get(api, bob, "/v1/threads")["threads"] == []
    assert get(api, bob, f"/v1/bots/{bot}/memory")["entries"] == []
    assert len(get(api, ana, f"/v1/bots/{bot}/memory")["entries"]) == 1
    # Ana's session of the shared agent is hers: it stays.
    assert len(get(api, ana, f"/v1/sessions/{anas}/items")["data"]) == 1
    again = post(api, boss, url, {})
    assert {k: v for k, v in again.items() if isinstance(v, int)} == dict.fromkeys(
        ("sessions", "items", "threads", "messages", "workingMemory", "botEntries"), 0
    )
    unknown = api.client.post(
        f"/v1/organizations/{ana.org_id}/users/nobody/erase", headers=boss.headers
    )
    assert unknown.status_code == 404
    assert unknown.json()["error"]["path"] == ["userId"]
