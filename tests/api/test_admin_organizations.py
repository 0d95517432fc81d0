"""Tenants come and go: the admin token lists organizations (no content) and deletes one with
everything in it, resumably; another organization reads as before. Organization admins rename
their people."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.ports import Delete
from tests.conftest import Api, User
from tests.support.embedders import TinyEmbedder, adapters
from tests.support.plaintext import all_text, scan_rows
from tests.support.requests import agent, get, post, session

__all__ = ["adapters"]  # the fixture this module uses


@dataclass
class Tenant:
    """An organization with something of every kind in it."""

    org: str
    admin: User
    member: User
    ids: dict[str, str] = field(default_factory=dict)

    def everything(self) -> set[str]:
        return {self.org, self.admin.id, self.member.id, *self.ids.values()}


def build(api: Api, tag: str) -> Tenant:
    org = api.org(name=f"Org {tag}")
    admin = api.user(org, role="admin", user_id=f"ana-{tag}")
    member = api.user(org, user_id=f"ben-{tag}")
    t = Tenant(org, admin, member)
    settings = {"autoProvisionUsers": True, "botMemoryModel": "local/rules"}
    answer = api.client.patch(f"/v1/organizations/{org}/settings", json=settings, headers=api.admin)
    assert answer.status_code == 200, answer.text
    key = post(api, admin, f"/v1/organizations/{org}/service-keys", {"name": "backend"})
    t.ids |= {"key": key["id"], "kim": f"kim-{tag}"}
    # A person first seen through the key.
    me = api.client.get(
        "/v1/me", headers={"Authorization": f"Bearer {key['key']}"} | {"Act-As": f"kim-{tag}"}
    )
    assert me.status_code == 200, me.text
    t.ids["agent"] = agent(api, admin, members=(member.id,))
    t.ids["session"] = sid = session(api, admin, t.ids["agent"])
    items = [{"role": "user", "content": "My budget is 1500 EUR."}]
    post(api, admin, f"/v1/sessions/{sid}/turns", {"items": items})
    remember = {"_tag": "Remember", "key": "tone", "kind": "preference", "content": "Be brief."}
    post(api, admin, f"/v1/agents/{t.ids['agent']}/memory", {"expected": 0, "command": remember})
    about = {"type": "actor", "id": member.id}
    for name, entity in (("note", None), ("about", about)):
        body = {"category": "preference", "content": f"{tag} likes trains.", "entity": entity}
        t.ids[name] = post(api, member, "/v1/agent_memories", body)["id"]
    t.ids["bot"] = bot = post(api, admin, "/v1/bots", {"name": "Concierge"})["bot"]["id"]
    channel = post(api, admin, "/v1/channels", {"name": "team", "members": [member.id]})
    t.ids["channel"] = channel["channel"]["id"]
    chat = post(api, admin, "/v1/chats", {"botId": bot, "channelId": t.ids["channel"]})
    t.ids["chat"] = chat_id = chat["chat"]["id"]
    turn = post(api, member, f"/v1/chats/{chat_id}/turns", {"input": "I am vegetarian."})
    t.ids["turn"] = turn_id = turn["turn"]["id"]
    base = f"/v1/chats/{chat_id}/turns/{turn_id}"
    post(api, member, f"{base}/confide", {"text": "I forgot it."})
    post(api, member, f"{base}/complete", {})
    t.ids["thread"] = thread = post(api, member, "/v1/threads", {"agentId": t.ids["agent"]})[
        "thread"
    ]["id"]
    said = {"messages": [{"role": "user", "content": "I live in Lisbon."}]}
    post(api, member, f"/v1/threads/{thread}/messages", said)
    return t


def reads(api: Api, t: Tenant) -> list[Any]:
    """What the tenant's people read of their own."""
    ids, admin, member = t.ids, t.admin, t.member
    return [
        get(api, admin, f"/v1/agents/{ids['agent']}/memory")["entries"],
        get(api, admin, f"/v1/sessions/{ids['session']}/items")["data"],
        get(api, member, f"/v1/agent_memories/{ids['note']}")["content"],
        get(api, member, f"/v1/threads/{ids['thread']}/messages")["messages"],
        get(api, admin, f"/v1/chats/{ids['chat']}/items")["items"],
        get(api, admin, f"/v1/bots/{ids['bot']}"),
        get(api, admin, f"/v1/organizations/{t.org}/users")["users"],
    ]


def listed(api: Api) -> dict[str, Any]:
    answer = api.client.get("/v1/admin/organizations?limit=100", headers=api.admin)
    assert answer.status_code == 200, answer.text
    return {o["id"]: o for o in answer.json()["organizations"]}


def rows_naming(local_aws: Any, words: set[str]) -> list[str]:
    found = []
    for row in scan_rows(local_aws):
        text = all_text(row)
        if any(word in text for word in words):
            found.append(all_text(row["pk"]) + " " + all_text(row["sk"]))
    return found


def vectors_of(services: Any, t: Tenant) -> list[str]:
    index = services.recall.index
    probe = TinyEmbedder().embed(["x"])[0]
    owners = (t.org, t.admin.id, t.member.id)
    return [h.key for o in owners for h in index.query(probe, 100, org=t.org, owner=o)]


def test_deleting_an_organization_leaves_no_row_of_it_and_others_read_as_before(
    api: Api, local_aws: Any, services: Any
) -> None:
    keep = build(api, "keep")
    gone = build(api, "gone")
    # The kept organization's bot, linked into the one that goes and used there.
    grants = {"organizationId": gone.org, "grants": {gone.member.id: "write"}}
    post(api, keep.admin, f"/v1/bots/{keep.ids['bot']}/links", grants)
    linked = post(api, gone.member, "/v1/chats", {"botId": keep.ids["bot"]})["chat"]["id"]
    post(api, gone.member, f"/v1/chats/{linked}/turns", {"input": "We use Go."})
    before = reads(api, keep)
    assert len(rows_naming(local_aws, gone.everything() | {linked})) > 50
    assert vectors_of(services, gone)  # the agent_memories were embedded
    assert listed(api)[gone.org] == {
        "id": gone.org,
        "name": "Org gone",
        "createdAt": listed(api)[gone.org]["createdAt"],
        "users": 3,
        "deleting": False,
    }
    # Only the admin token lists and deletes organizations.
    for method in ("GET", "DELETE"):
        path = "/v1/admin/organizations" + ("" if method == "GET" else f"/{gone.org}")
        refused = api.client.request(method, path, headers=gone.admin.headers)
        assert refused.status_code == 403, refused.text

    answer = api.client.delete(f"/v1/admin/organizations/{gone.org}", headers=api.admin)

    assert answer.status_code == 200, answer.text
    deleted = answer.json()["deleted"]
    expected = {"organizations": 1, "users": 3, "serviceKeys": 1, "agents": 1, "bots": 1}
    expected |= {"botLinks": 1, "channels": 1, "chats": 2, "threads": 1, "agentMemories": 2}
    assert {k: deleted[k] for k in expected} == expected, deleted
    assert deleted["tokens"] == 2
    assert rows_naming(local_aws, gone.everything() | {linked}) == []
    assert vectors_of(services, gone) == []
    assert gone.org not in listed(api)
    # Its people's tokens stop working; the other organization reads as before.
    assert api.client.get("/v1/me", headers=gone.admin.headers).status_code == 401
    assert reads(api, keep) == before
    assert get(api, keep.admin, f"/v1/bots/{keep.ids['bot']}")["bot"]["linked"] is False
    again = api.client.delete(f"/v1/admin/organizations/{gone.org}", headers=api.admin)
    assert again.status_code == 404
    assert again.json()["error"]["path"] == ["orgId"]


def test_a_deletion_cut_short_is_finished_by_the_next_call(
    api: Api, services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = build(api, "cut")
    store = services.erasure.repo._store
    real, calls = store.write, {"n": 0}

    def failing(actions: Any) -> None:
        if any(isinstance(a, Delete) for a in actions):
            calls["n"] += 1
            if calls["n"] == 12:
                raise Unavailable("the table is unavailable")
        real(actions)

    monkeypatch.setattr(store, "write", failing)
    path = f"/v1/admin/organizations/{gone.org}"
    assert api.client.delete(path, headers=api.admin).status_code == 503
    # Marked: listed as going, no person added, no token of its people works.
    assert listed(api)[gone.org]["deleting"] is True
    body = {"organizationId": gone.org}
    assert api.client.post("/v1/admin/users", json=body, headers=api.admin).status_code == 404
    assert api.client.get("/v1/me", headers=gone.member.headers).status_code == 401
    finished = api.client.delete(path, headers=api.admin)
    assert finished.status_code == 200, finished.text
    assert finished.json()["deleted"]["organizations"] == 1
    assert gone.org not in listed(api)
    assert api.client.delete(path, headers=api.admin).status_code == 404


def test_an_organization_admin_renames_a_person(api: Api) -> None:
    org, other = api.org(), api.org()
    admin, member = api.user(org, role="admin"), api.user(org)
    stranger = api.user(other)
    path = f"/v1/organizations/{org}/users/{member.id}"
    renamed = api.client.patch(path, json={"name": "Ben Ito"}, headers=admin.headers)
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["user"]["name"] == "Ben Ito"
    people = get(api, admin, f"/v1/organizations/{org}/users")["users"]
    assert {p["id"]: p["name"] for p in people}[member.id] == "Ben Ito"
    for body, field_path in (
        ({"name": ""}, ["name"]),
        ({}, ["name"]),
        ({"name": "x", "nom": "x"}, ["nom"]),
    ):
        bad = api.client.patch(path, json=body, headers=admin.headers)
        assert bad.status_code == 400, bad.text
        assert bad.json()["error"]["path"] == field_path
    # A person of another organization, or nobody, is not found; a member may not rename.
    for user_id in (stranger.id, "nobody"):
        missing = api.client.patch(
            f"/v1/organizations/{org}/users/{user_id}", json={"name": "x"}, headers=admin.headers
        )
        assert missing.status_code == 404
        assert missing.json()["error"]["path"] == ["userId"]
    assert api.client.patch(path, json={"name": "x"}, headers=member.headers).status_code == 403
