"""A platform acts for its users: an organization's service key names the person in `Act-As`
and is then that person; without it, it may only manage the organization's people. (The
seeds' families through a service key: tests/clients/test_e2e_suite.py runs the whole
deployment check both ways.)"""

from __future__ import annotations

from typing import Any

from tests.conftest import Api
from tests.support.plaintext import all_text, scan_rows


class Platform:
    """An organization's backend: its service key and the people it acts for."""

    def __init__(self, api: Api, org: str | None = None) -> None:
        self.api = api
        self.org = org or api.org()
        made = api.client.post(
            f"/v1/organizations/{self.org}/service-keys",
            json={"name": "backend"},
            headers=api.admin,
        )
        assert made.status_code == 201, made.text
        self.key_id, self.key = made.json()["id"], made.json()["key"]

    def headers(self, person: str | None = None) -> dict[str, str]:
        auth = {"Authorization": f"Bearer {self.key}"}
        return auth | ({"Act-As": person} if person is not None else {})

    def add(self, person: str, role: str = "member") -> None:
        added = self.api.client.post(
            f"/v1/organizations/{self.org}/users",
            json={"id": person, "role": role},
            headers=self.headers(),
        )
        assert added.status_code == 201, added.text

    def get(self, path: str, person: str | None = None) -> Any:
        return self.api.client.get(path, headers=self.headers(person))

    def post(self, path: str, body: Any, person: str | None = None) -> Any:
        return self.api.client.post(path, json=body, headers=self.headers(person))


def test_a_key_is_shown_once_listed_without_it_and_revoked_at_once(api: Api) -> None:
    platform = Platform(api)
    platform.add("ana")
    assert platform.get("/v1/me", "ana").json()["user"] == {
        "id": "ana",
        "organizationId": platform.org,
        "role": "member",
        "serviceKeyId": platform.key_id,
    }
    [listed] = api.client.get(
        f"/v1/organizations/{platform.org}/service-keys", headers=api.admin
    ).json()["serviceKeys"]
    assert listed["id"] == platform.key_id
    assert platform.key.startswith(listed["prefix"])
    assert platform.key not in str(listed)
    assert listed["lastUsedAt"] is not None
    gone = api.client.delete(
        f"/v1/organizations/{platform.org}/service-keys/{platform.key_id}", headers=api.admin
    )
    assert gone.status_code == 204
    assert platform.get("/v1/me", "ana").status_code == 401


def test_the_people_a_key_acts_for_never_mix(api: Api) -> None:
    platform = Platform(api)
    for person in ("ana", "ben"):
        platform.add(person)
    body = {"category": "preference", "content": "Ana takes the 8:10.", "importance": 0.9}
    body["entity"] = {"type": "actor", "id": "ana"}
    saved = platform.post("/v1/agent_memories", body, "ana")
    assert saved.status_code == 201, saved.text
    agent = platform.post("/v1/agents", {"name": "Trip"}, "ana").json()["agent"]["id"]
    thread = platform.post("/v1/threads", {"agentId": agent}, "ana").json()["thread"]["id"]
    said = {"messages": [{"role": "user", "content": "I live in Lisbon."}]}
    assert platform.post(f"/v1/threads/{thread}/messages", said, "ana").status_code == 200
    assert platform.get(f"/v1/threads/{thread}/messages", "ben").status_code == 404
    assert platform.get(f"/v1/agents/{agent}", "ben").status_code == 404
    assert platform.get("/v1/threads", "ben").json()["threads"] == []
    # A thread for another person is refused, as for a personal token.
    other = platform.post("/v1/threads", {"agentId": agent, "resourceId": "ben"}, "ana")
    assert other.status_code == 403


def test_a_key_without_a_person_manages_people_and_reads_nothing(api: Api) -> None:
    platform = Platform(api)
    platform.add("ana")
    for path in ("/v1/agent_memories", "/v1/threads", "/v1/events"):
        refused = platform.get(path)
        assert refused.status_code == 403, path
        assert "Act-As" in refused.json()["error"]["message"]
    people = platform.get(f"/v1/organizations/{platform.org}/users").json()
    assert [u["id"] for u in people["users"]] == ["ana"]
    assert platform.get("/v1/me").json()["user"]["role"] == "service-key"


def test_a_key_never_crosses_to_another_organization(api: Api) -> None:
    ours, theirs = Platform(api), Platform(api)
    theirs.add("cy")
    crossing = ours.get("/v1/me", "cy")
    assert crossing.status_code == 404
    assert crossing.json()["error"]["path"] == ["Act-As"]
    assert ours.get(f"/v1/organizations/{theirs.org}/users").status_code == 404
    listed = api.client.get(
        f"/v1/organizations/{theirs.org}/service-keys", headers=ours.headers("cy")
    )
    assert listed.status_code == 404


def test_people_on_first_sight_only_when_the_organization_allows_it(api: Api) -> None:
    platform = Platform(api)
    platform.add("admin", role="admin")
    assert platform.get("/v1/me", "dora").status_code == 404
    allowed = api.client.patch(
        f"/v1/organizations/{platform.org}/settings",
        json={"autoProvisionUsers": True},
        headers=platform.headers("admin"),
    )
    assert allowed.status_code == 200, allowed.text
    assert platform.get("/v1/me", "dora").json()["user"]["role"] == "member"
    people = platform.get(f"/v1/organizations/{platform.org}/users").json()["users"]
    assert [u["id"] for u in people] == ["admin", "dora"]
    assert platform.get("/v1/me", "no spaces").json()["error"]["path"] == ["Act-As"]


def test_act_as_needs_a_service_key(api: Api) -> None:
    org = api.org()
    ana = api.user(org)
    api.user(org, user_id="ben")
    acted = api.client.get("/v1/me", headers=ana.headers | {"Act-As": "ben"})
    assert acted.status_code == 400
    assert acted.json()["error"]["path"] == ["Act-As"]


def test_only_an_organization_admin_makes_keys(api: Api) -> None:
    org = api.org()
    member, admin = api.user(org), api.user(org, role="admin")
    path = f"/v1/organizations/{org}/service-keys"
    assert api.client.post(path, json={"name": "k"}, headers=member.headers).status_code == 403
    assert api.client.post(path, json={"name": "k"}, headers=admin.headers).status_code == 201
    stranger = api.user(api.org(), role="admin")
    assert api.client.get(path, headers=stranger.headers).status_code == 404


def test_deleting_a_person_leaves_no_row_of_theirs_and_no_working_token(
    api: Api, local_aws: Any
) -> None:
    org = api.org()
    admin, ana = api.user(org, role="admin"), api.user(org, user_id="ana")
    agent = api.client.post("/v1/agents", json={"name": "A"}, headers=ana.headers).json()
    thread = api.client.post(
        "/v1/threads", json={"agentId": agent["agent"]["id"]}, headers=ana.headers
    ).json()["thread"]["id"]
    said = {"messages": [{"role": "user", "content": "I live in Lisbon."}]}
    api.client.post(f"/v1/threads/{thread}/messages", json=said, headers=ana.headers)
    deleted = api.client.delete(f"/v1/organizations/{org}/users/ana", headers=admin.headers)
    assert deleted.status_code == 200, deleted.text
    assert (deleted.json()["agents"], deleted.json()["threads"]) == (1, 1)
    assert api.client.get("/v1/me", headers=ana.headers).status_code == 401
    keys = [all_text(r["pk"]) + " " + all_text(r["sk"]) for r in scan_rows(local_aws)]
    assert [k for k in keys if "ana" in k] == []
    again = api.client.delete(f"/v1/organizations/{org}/users/ana", headers=admin.headers)
    assert again.status_code == 404
    # The id is free again: a new person, who inherits nothing.
    new = api.user(org, user_id="ana")
    assert api.client.get("/v1/threads", headers=new.headers).json()["threads"] == []


def test_a_change_through_a_key_records_the_person_and_the_key(api: Api) -> None:
    platform = Platform(api)
    platform.add("ana")
    agent = platform.post("/v1/agents", {"name": "Trip"}, "ana").json()["agent"]["id"]
    remember = {"_tag": "Remember", "key": "seat", "content": "Aisle.", "kind": "preference"}
    changed = platform.post(
        f"/v1/agents/{agent}/memory", {"expected": 0, "command": remember}, "ana"
    )
    assert changed.status_code == 200, changed.text
    [change] = platform.get(f"/v1/agents/{agent}/memory/log", "ana").json()["changes"]
    assert (change["by"], change["person"], change["serviceKeyId"]) == (
        "person",
        "ana",
        platform.key_id,
    )
    # The events feed names the key to everyone who sees the change, the person to
    # themselves alone; a change with a person's own token names neither.
    platform.add("bob")
    shared = {"name": "Team", "members": ["bob"]}
    team = platform.post("/v1/agents", shared, "ana").json()["agent"]["id"]
    platform.post(f"/v1/agents/{team}/memory", {"expected": 0, "command": remember}, "ana")

    def changed_memory(person: str) -> list[dict[str, Any]]:
        events = platform.get("/v1/events?limit=100", person).json()["events"]
        return [e for e in events if e["type"] == "memory.changed"]

    as_ana = changed_memory("ana")
    assert [(e["serviceKeyId"], e["person"]) for e in as_ana] == [(platform.key_id, "ana")] * 2
    [as_bob] = changed_memory("bob")
    assert as_bob["object"] == {"agentId": team}
    assert as_bob["serviceKeyId"] == platform.key_id
    assert "person" not in as_bob
    token = api.user(platform.org)
    own = api.client.post("/v1/agents", json={"name": "Own"}, headers=token.headers)
    own_agent = own.json()["agent"]["id"]
    api.client.post(
        f"/v1/agents/{own_agent}/memory",
        json={"expected": 0, "command": remember},
        headers=token.headers,
    )
    mine = api.client.get("/v1/events?limit=100", headers=token.headers).json()["events"]
    [by_token] = [e for e in mine if e["type"] == "memory.changed"]
    assert "serviceKeyId" not in by_token


def test_an_administrator_cannot_erase_or_delete_themselves(api: Api) -> None:
    org = api.org()
    admin = api.user(org, role="admin")
    for method, path in (
        ("POST", f"/v1/organizations/{org}/users/{admin.id}/erase"),
        ("DELETE", f"/v1/organizations/{org}/users/{admin.id}"),
    ):
        refused = api.client.request(method, path, headers=admin.headers)
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["path"] == ["userId"]
    assert api.client.get("/v1/me", headers=admin.headers).status_code == 200
