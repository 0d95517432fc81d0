"""Deleting sessions and agents, erasing a person, over HTTP on the embedded AWS."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.ports import Delete
from tests.conftest import Api, User
from tests.support.embedders import adapters
from tests.support.requests import agent, get, post, session

__all__ = ["adapters"]  # the fixture this module uses

COUNTS = (
    "sessions",
    "items",
    "threads",
    "messages",
    "workingMemory",
    "botEntries",
    "agents",
    "observations",
    "chats",
    "chatItems",
    "agentMemories",
)


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


def fail_delete_transaction(services: Any, monkeypatch: Any, nth: int) -> None:
    """The erasure's store refuses its `nth` transaction of deletes (the table unavailable)."""
    store = services.erasure.repo._store
    real = store.write
    calls = {"n": 0}

    def failing(actions: Any) -> None:
        if any(isinstance(a, Delete) for a in actions):
            calls["n"] += 1
            if calls["n"] == nth:
                raise Unavailable("the table is unavailable")
        real(actions)

    monkeypatch.setattr(store, "write", failing)


def test_an_interrupted_delete_is_finished_by_the_next(
    api: Api, services: Any, people: tuple[User, User, User, User], monkeypatch: Any
) -> None:
    ana = people[0]
    sid = session(api, ana, agent(api, ana))
    # 120 items: more than one transaction of deletes.
    for n in range(2):
        turn(api, ana, sid, *(f"line {n}-{k}" for k in range(60)))
    fail_delete_transaction(services, monkeypatch, 2)
    assert api.client.delete(f"/v1/sessions/{sid}", headers=ana.headers).status_code == 503
    # Half deleted: it reads as gone already, and a second DELETE finishes the work.
    get(api, ana, f"/v1/sessions/{sid}", 404)
    answer = delete(api, ana, f"/v1/sessions/{sid}")
    assert answer["deleted"] is True
    assert 0 < answer["items"] < 120
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
    assert answer == {
        "id": agent_id,
        "object": "agent",
        "deleted": True,
        "sessions": 2,
        "threads": 0,
    }
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
        # Bob's own agent went whole (with his session and thread in it).
        "agents": 1,
        "observations": 0,
        "chats": 0,
        "chatItems": 0,
        "agentMemories": 0,
    }
    get(api, bob, f"/v1/agents/{second}", 404)
    get(api, ana, f"/v1/agents/{first}")
    for sid in bobs:
        get(api, bob, f"/v1/sessions/{sid}", 404)
    get(api, bob, f"/v1/threads/{thread}", 404)
    assert get(api, bob, "/v1/threads")["threads"] == []
    assert get(api, bob, f"/v1/bots/{bot}/memory")["entries"] == []
    assert len(get(api, ana, f"/v1/bots/{bot}/memory")["entries"]) == 1
    # Ana's session of the shared agent is hers: it stays.
    assert len(get(api, ana, f"/v1/sessions/{anas}/items")["data"]) == 1
    again = post(api, boss, url, {})
    assert {k: v for k, v in again.items() if isinstance(v, int)} == dict.fromkeys(COUNTS, 0)
    unknown = api.client.post(
        f"/v1/organizations/{ana.org_id}/users/nobody/erase", headers=boss.headers
    )
    assert unknown.status_code == 404
    assert unknown.json()["error"]["path"] == ["userId"]


def thread(api: Api, user: User, agent_id: str, *texts: str) -> str:
    thread_id = str(post(api, user, "/v1/threads", {"agentId": agent_id})["thread"]["id"])
    messages = [{"role": "user", "content": t} for t in texts]
    post(api, user, f"/v1/threads/{thread_id}/messages", {"messages": messages})
    return thread_id


def test_erasing_a_person_takes_their_chats_own_agents_and_memories_about_them(
    api: Api, people: tuple[User, User, User, User]
) -> None:
    ana, bob, boss, _stranger = people
    bot = post(api, ana, "/v1/bots", {"name": "Helper", "grants": {bob.id: "write"}})["bot"]["id"]
    chats = [post(api, user, "/v1/chats", {"botId": bot})["chat"]["id"] for user in (bob, ana)]
    for user, chat in zip((bob, ana), chats, strict=True):
        post(api, user, f"/v1/chats/{chat}/turns", {"input": "Book the train."})
    # Bob's agent, with a thread of Ana's in it: it goes whole.
    bobs_agent = agent(api, bob, members=(ana.id,))
    anas_thread = thread(api, ana, bobs_agent, "hello")
    about = [
        post(api, ana, "/v1/agent_memories", memory(entity))["id"]
        for entity in ({"id": bob.id, "type": "actor"}, {"id": ana.id, "type": "actor"}, None)
    ]
    url = f"/v1/organizations/{ana.org_id}/users/{bob.id}/erase"
    answer = post(api, boss, url, {})
    assert (answer["chats"], answer["chatItems"], answer["agents"]) == (1, 1, 1)
    assert (answer["threads"], answer["messages"], answer["agentMemories"]) == (1, 1, 1)
    get(api, bob, f"/v1/chats/{chats[0]}/items", 404)
    assert len(get(api, ana, f"/v1/chats/{chats[1]}/items")["items"]) == 1
    get(api, ana, f"/v1/agents/{bobs_agent}", 404)
    get(api, ana, f"/v1/threads/{anas_thread}", 404)
    get(api, ana, f"/v1/agent_memories/{about[0]}", 404)
    listed = [m["id"] for m in get(api, ana, "/v1/agent_memories")["data"]]
    assert sorted(listed) == sorted(about[1:])


def memory(entity: dict[str, str] | None) -> dict[str, Any]:
    return {"category": "fact", "content": "Prefers trains.", "entity": entity}


def test_an_interrupted_erasure_is_finished_by_the_next_and_counts_stay_true(
    api: Api, services: Any, people: tuple[User, User, User, User], monkeypatch: Any
) -> None:
    ana, bob, boss, _stranger = people
    bot = post(api, ana, "/v1/bots", {"name": "Helper", "grants": {bob.id: "write"}})["bot"]["id"]
    chat = post(api, bob, "/v1/chats", {"botId": bot})["chat"]["id"]
    post(api, bob, f"/v1/chats/{chat}/turns", {"input": "Book the train."})
    threads = [thread(api, bob, agent(api, bob), *(f"m{n}" for n in range(k))) for k in (40, 3)]
    for n in range(2):  # 120 messages: their deletes take two transactions
        saved = [{"role": "user", "content": f"more {n}-{k}"} for k in range(40)]
        post(api, bob, f"/v1/threads/{threads[0]}/messages", {"messages": saved})
    post(api, ana, "/v1/agent_memories", memory({"id": bob.id, "type": "actor"}))
    fail_delete_transaction(services, monkeypatch, 6)
    url = f"/v1/organizations/{ana.org_id}/users/{bob.id}/erase"
    assert api.client.post(url, headers=boss.headers).status_code == 503
    # Cut short after some rows went: the next call finishes, and the two add up.
    done = post(api, boss, url, {})
    assert (done["chats"], done["chatItems"], done["agentMemories"]) == (1, 1, 1)
    assert 1 <= done["agents"] <= 2
    assert get(api, bob, "/v1/agents")["data"] == []
    assert post(api, boss, url, {}) | {"userId": "", "organizationId": ""} == dict.fromkeys(
        COUNTS, 0
    ) | {"userId": "", "organizationId": ""}
    for thread_id in threads:
        get(api, bob, f"/v1/threads/{thread_id}", 404)
    get(api, bob, f"/v1/chats/{chat}/items", 404)
    assert get(api, ana, "/v1/agent_memories")["data"] == []


def test_erasing_a_person_takes_their_words_from_anothers_group_chat(
    api: Api, people: tuple[User, User, User, User]
) -> None:
    ana, bob, boss, _stranger = people
    bot = post(api, ana, "/v1/bots", {"name": "Helper", "grants": {bob.id: "read"}})["bot"]["id"]
    channel = post(api, ana, "/v1/channels", {"name": "team", "members": [bob.id]})["channel"]
    chat = post(api, ana, "/v1/chats", {"botId": bot, "channelId": channel["id"]})["chat"]["id"]
    for user, text in ((ana, "Ana here."), (bob, "Bob here."), (bob, "Bob again.")):
        post(api, user, f"/v1/chats/{chat}/turns", {"input": text})
    answer = post(api, boss, f"/v1/organizations/{ana.org_id}/users/{bob.id}/erase", {})
    assert (answer["chats"], answer["chatItems"]) == (0, 2)
    # The group's chat stays, with Ana's words only.
    items = get(api, ana, f"/v1/chats/{chat}/items")["items"]
    assert [i["content"] for i in items] == ["Ana here."]
