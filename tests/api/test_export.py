"""A person's export (`GET /v1/me/export`) holds exactly what their read routes answer.

One world per module: Ana owns an agent (with a published version, agent memory, a session
with items), a thread with messages and working memory, a chat with the bot; Ben is a
member of her agent with his own session; each keeps a private bot memory entry, and a
learned fact of Ana's chat is hers alone. Every line of each export is checked against the
route that answers it, as that person.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.domain.tasks.learning_changes import FactChange
from tests.conftest import Api, SharedApp, User
from tests.support.bot_memory import MemoryBot
from tests.support.bots import World, make_chat
from tests.support.requests import agent, get, post, session

# What route answers each kind of line: its URL from the line, and where the line sits in it.
SINGLE = {
    "agent": ("/v1/agents/{id}", "agent"),
    "session": ("/v1/sessions/{id}", "session"),
    "thread": ("/v1/threads/{id}", "thread"),
}
WHOLE = {
    "agentDraft": ("/v1/agents/{agentId}/draft"),
    "agentMemory": ("/v1/agents/{agentId}/memory"),
    "sessionMemory": ("/v1/sessions/{sessionId}/memory"),
    "workingMemory": ("/v1/threads/{threadId}/working-memory"),
    "observations": ("/v1/threads/{threadId}/observations"),
}
LISTED = {
    "agentVersion": ("/v1/agents/{agentId}/versions", "versions"),
    "agentMemoryChange": ("/v1/agents/{agentId}/memory/log", "changes"),
    "agentMemoryObject": ("/v1/agent_memories?entity={userId}&limit=100", "data"),
    "agentMemoryItem": ("/v1/agent_memories?namespace=prefs&limit=100", "data"),
    "sessionItem": ("/v1/sessions/{sessionId}/items?limit=100", "data"),
    "threadMessage": ("/v1/threads/{threadId}/messages", "messages"),
    "chatItem": ("/v1/chats/{chatId}/items", "items"),
    "confession": ("/v1/chats/{chatId}/confessions", "confessions"),
    "enrichment": ("/v1/chats/{chatId}/enrichments", "enrichments"),
    "botEntry": ("/v1/bots/{botId}/memory", "entries"),
    "botMemoryChange": ("/v1/bots/{botId}/memory/log", "changes"),
}
PARENTS = ("agentId", "sessionId", "threadId", "chatId", "botId")


@dataclass
class Built:
    world: World
    agent_id: str
    ana_session: str
    ben_session: str
    thread_id: str
    chat: dict[str, Any]
    ana_entry: str
    ben_entry: str
    learned: str


def export(api: Api, user: User) -> list[dict[str, Any]]:
    answer = api.client.get("/v1/me/export", headers=user.headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in answer.text.splitlines()]


@pytest.fixture(scope="module")
def built(shared_app: SharedApp) -> Built:
    api, services = shared_app.api, shared_app.services
    world = World(api, services)
    ana, ben = world.ana, world.ben
    agent_id = agent(api, ana, members=(ben.id,))
    post(api, ana, f"/v1/agents/{agent_id}/publish", {})
    command = {"_tag": "Remember", "key": "tone", "kind": "preference", "content": "Be brief."}
    post(api, ana, f"/v1/agents/{agent_id}/memory", {"expected": 0, "command": command})
    ana_session = session(api, ana, agent_id)
    items = [{"role": "user", "content": "My cat is called Miso."}]
    post(api, ana, f"/v1/sessions/{ana_session}/turns", {"items": items})
    ben_session = session(api, ben, agent_id)
    items = [{"role": "user", "content": "Ben's secret plan."}]
    post(api, ben, f"/v1/sessions/{ben_session}/turns", {"items": items})
    thread_id = post(api, ana, "/v1/threads", {"agentId": agent_id})["thread"]["id"]
    messages = [{"role": "user", "content": "Plan the trip to Lisbon."}]
    post(api, ana, f"/v1/threads/{thread_id}/messages", {"messages": messages})
    api.client.put(
        f"/v1/threads/{thread_id}/working-memory", json={"content": "# Trip"}, headers=ana.headers
    )
    chat = make_chat(api, ana, world.bot["id"])
    said = world.said(ana, chat, "I like green tea.")
    change = FactChange(op="fact", content="Ana likes green tea.", topics=[], sources=[said])
    [learned] = MemoryBot.ids(MemoryBot(services.bot_memory).learn(chat["id"], change))
    about_ana = {
        "category": "fact",
        "content": "Ana is vegetarian.",
        "entity": {"type": "actor", "id": ana.id},
    }
    post(api, ben, "/v1/agent_memories", about_ana)
    post(api, ben, "/v1/agent_memories", {"category": "fact", "content": "Ben's own memo."})
    # A key-value client's items (ADR 0082): each person's own, in the same place.
    for who, content in ((ana, "Ana's store item."), (ben, "Ben's store item.")):
        item = {"category": "fact", "content": content, "namespace": ["prefs"], "key": "food"}
        post(api, who, "/v1/agent_memories", item)
    ana_entry = world.command(ana, {"_tag": "Remember", "content": "Ana's pin."}).json()
    ben_entry = world.command(ben, {"_tag": "Remember", "content": "Ben's pin."}).json()
    return Built(
        world,
        agent_id,
        ana_session,
        ben_session,
        thread_id,
        chat,
        _entry_id(ana_entry),
        _entry_id(ben_entry),
        learned,
    )


def _entry_id(answer: dict[str, Any]) -> str:
    return str(answer["entry"]["id"] if "entry" in answer else answer["id"])


def _lines_of(lines: list[dict[str, Any]], kind: str) -> Iterator[dict[str, Any]]:
    return (line for line in lines[1:] if line["type"] == kind)


def _route_of(line: dict[str, Any], template: str, user: User | None = None) -> str:
    parents = {k: line.get(k) for k in PARENTS}
    return template.format(id=line.get("id"), userId=user.id if user else None, **parents)


def _without(line: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in line.items() if k not in ("type", *names)}


def assert_as_read(api: Api, user: User, lines: list[dict[str, Any]]) -> None:
    """Every line is what its route answers the person, and every listed element is a line."""
    for line in lines[1:]:
        kind = line["type"]
        parents = [k for k in PARENTS if k in line]
        if kind in SINGLE:
            url, key = SINGLE[kind]
            assert get(api, user, _route_of(line, url))[key] == _without(line), kind
        elif kind in WHOLE:
            answer = get(api, user, _route_of(line, WHOLE[kind]))
            assert answer == _without(line, *parents), kind
    for kind, (url, key) in LISTED.items():
        by_parent: dict[str, list[dict[str, Any]]] = {}
        for line in _lines_of(lines, kind):
            route = _route_of(line, url, user)
            by_parent.setdefault(route, []).append(_without(line, *PARENTS))
        for route, exported in by_parent.items():
            assert get(api, user, route)[key] == exported, route


def test_an_export_is_each_persons_reads_and_nothing_else(
    built: Built, shared_app: SharedApp
) -> None:
    api = shared_app.api
    world = built.world
    ana, ben = world.ana, world.ben
    mine, bens = export(api, ana), export(api, ben)
    assert mine[0] == {
        "format": "agent-memory-export",
        "version": 1,
        "userId": ana.id,
        "organizationId": world.org,
        "exportedAt": mine[0]["exportedAt"],
    }

    assert_as_read(api, ana, mine)
    assert_as_read(api, ben, bens)
    kinds = {line["type"] for line in mine[1:]}
    assert kinds >= {
        "agent", "agentDraft", "agentVersion", "agentMemory", "agentMemoryChange", "session",
        "sessionItem", "sessionMemory", "thread", "threadMessage", "workingMemory",
        "observations", "chatItem", "chatTurn", "botEntry", "botMemoryChange",
        "agentMemoryObject", "agentMemoryItem", "event", "end",
    }  # fmt: skip
    # Each event as the feed shows it to her, under its own key (its `type` is the change's).
    feed = get(api, ana, "/v1/events?limit=100")["events"]
    assert [x["event"] for x in _lines_of(mine, "event")] == feed
    assert {x["event"]["type"] for x in _lines_of(mine, "event")} >= {"thread.created"}
    assert mine[-1] == {"type": "end", "lines": len(mine) - 1}
    # Ana's own objects, and her entries: not Ben's session nor his pin.
    assert {x["id"] for x in _lines_of(mine, "session")} == {built.ana_session}
    assert {x["id"] for x in _lines_of(mine, "botEntry")} == {built.ana_entry, built.learned}
    assert [x["content"] for x in _lines_of(mine, "agentMemoryObject")] == ["Ana is vegetarian."]
    assert [x["content"] for x in _lines_of(mine, "agentMemoryItem")] == ["Ana's store item."]
    assert [x["content"] for x in _lines_of(bens, "agentMemoryItem")] == ["Ben's store item."]
    text = json.dumps(mine)
    assert "Miso" in text
    assert "Lisbon" in text
    assert "green tea" in text
    assert "Ben's secret plan" not in text
    assert "Ben's pin" not in text
    # Ben: his session under Ana's agent, his pin; not her agent, thread, chat or entries.
    assert {x["id"] for x in _lines_of(bens, "session")} == {built.ben_session}
    assert {x["id"] for x in _lines_of(bens, "botEntry")} == {built.ben_entry}
    assert not set(_lines_of(bens, "agent"))
    assert not set(_lines_of(bens, "thread"))
    ben_text = json.dumps(bens)
    assert "Miso" not in ben_text
    assert "green tea" not in ben_text
    assert "Ana's pin" not in ben_text


def test_an_organization_admins_export_is_their_reads_not_their_peoples(
    built: Built, shared_app: SharedApp
) -> None:
    api = shared_app.api
    boss = api.user(built.world.org, role="admin")
    lines = export(api, boss)
    assert_as_read(api, boss, lines)
    # An admin may read everyone's sessions, but exports only their own objects.
    assert not list(_lines_of(lines, "session"))
    assert "Miso" not in json.dumps(lines)


def test_a_service_key_acting_for_a_person_exports_what_the_person_does(
    built: Built, shared_app: SharedApp
) -> None:
    api = shared_app.api
    world = built.world
    made = api.client.post(
        f"/v1/organizations/{world.org}/service-keys", json={"name": "backend"}, headers=api.admin
    )
    assert made.status_code == 201, made.text
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    acting = api.client.get("/v1/me/export", headers=key | {"Act-As": world.ben.id})
    assert acting.status_code == 200, acting.text
    theirs = [json.loads(line) for line in acting.text.splitlines()]
    own = export(api, world.ben)
    assert theirs[1:] == own[1:]
    # The key alone is no person: it reads nothing.
    assert api.client.get("/v1/me/export", headers=key).status_code == 403


def test_the_operator_reads_no_export_and_a_stranger_none_of_theirs(
    built: Built, shared_app: SharedApp
) -> None:
    api = shared_app.api
    answer = api.client.get("/v1/me/export", headers=api.admin)
    assert answer.status_code == 403, answer.text
    assert api.client.get("/v1/me/export").status_code == 401
    # A person of another organization with nothing of their own: the header alone.
    olga = export(api, built.world.olga)
    assert olga[0]["userId"] == built.world.olga.id
    assert olga[1:] == [{"type": "end", "lines": 1}]


def test_the_python_client_reads_the_export_line_by_line(
    built: Built, shared_app: SharedApp
) -> None:
    import asyncio

    import httpx

    from agent_memory.api.app import create_app
    from agent_memory_client import AsyncClient
    from agent_memory_client.errors import AgentMemoryError

    api, services = shared_app.api, shared_app.services
    ana = built.world.ana
    transport = httpx.ASGITransport(create_app(lambda: services))
    operator_token = api.admin["Authorization"].removeprefix("Bearer ")

    async def read(token: str) -> list[dict[str, Any]]:
        async with AsyncClient(base_url="http://app", token=token, transport=transport) as client:
            return [line async for line in client.export()]

    lines = asyncio.run(read(ana.token))
    assert lines[0]["userId"] == ana.id
    assert lines[-1] == {"type": "end", "lines": len(lines) - 1}
    assert {x["id"] for x in lines if x.get("type") == "session"} == {built.ana_session}
    with pytest.raises(AgentMemoryError) as refused:
        asyncio.run(read(operator_token))
    assert refused.value.status == 403


def test_where_one_answer_is_capped_a_larger_export_answers_413_and_no_lines(
    built: Built, shared_app: SharedApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On AWS the export is one buffered Lambda answer (EXPORT_MAX_BYTES): one that fits is
    the same lines as streamed; a larger one is refused whole with a reason, not cut."""
    api, services = shared_app.api, shared_app.services
    ana = built.world.ana
    streamed = export(api, ana)
    size = len(api.client.get("/v1/me/export", headers=ana.headers).content)
    capped = services.settings.model_copy(update={"export_max_bytes": size + 1000})
    monkeypatch.setattr(services, "settings", capped)
    fits = export(api, ana)
    assert [_without(line, "exportedAt") for line in fits] == [
        _without(line, "exportedAt") for line in streamed
    ]
    capped = services.settings.model_copy(update={"export_max_bytes": size // 2})
    monkeypatch.setattr(services, "settings", capped)
    answer = api.client.get("/v1/me/export", headers=ana.headers)
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["_tag"] == "TooLarge"
    assert "page by page" in answer.json()["error"]["message"]
