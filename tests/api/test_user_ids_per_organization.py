"""A user id belongs to its organization: `ana` of two organizations are two people who never
see each other, and a route naming a user without an organization asks which when it must."""

from __future__ import annotations

from tests.conftest import Api, User


def _two_anas(api: Api) -> tuple[User, User]:
    return api.user(api.org(), user_id="ana"), api.user(api.org(), user_id="ana")


def test_the_same_id_in_two_organizations_is_two_people(api: Api) -> None:
    first, second = _two_anas(api)
    for ana in (first, second):
        me = api.client.get("/v1/me", headers=ana.headers).json()["user"]
        assert (me["id"], me["organizationId"]) == ("ana", ana.org_id)
    saved = api.client.post(
        "/v1/agent_memories",
        json={"category": "preference", "content": "Likes window seats."},
        headers=first.headers,
    )
    assert saved.status_code == 201, saved.text
    theirs = api.client.get(f"/v1/agent_memories/{saved.json()['id']}", headers=second.headers)
    assert theirs.status_code == 404
    listed = api.client.get("/v1/agent_memories", headers=second.headers).json()
    assert listed["data"] == []


def test_threads_of_the_same_id_in_two_organizations_never_mix(api: Api) -> None:
    first, second = _two_anas(api)
    for ana in (first, second):
        agent = api.client.post("/v1/agents", json={"name": "A"}, headers=ana.headers).json()
        made = api.client.post(
            "/v1/threads", json={"agentId": agent["agent"]["id"]}, headers=ana.headers
        )
        assert made.status_code == 201, made.text
    for ana in (first, second):
        threads = api.client.get("/v1/threads", headers=ana.headers).json()["threads"]
        assert len(threads) == 1
        assert threads[0]["resourceId"] == "ana"


def test_an_id_in_two_organizations_needs_the_organization_to_get_a_token(api: Api) -> None:
    first, second = _two_anas(api)
    path = "/v1/admin/users/ana/tokens"
    unnamed = api.client.post(path, json={}, headers=api.admin)
    assert unnamed.status_code == 400
    assert unnamed.json()["error"]["path"] == ["organizationId"]
    named = api.client.post(path, json={"organizationId": second.org_id}, headers=api.admin)
    assert named.status_code == 201, named.text
    # The rotation replaced the second Ana's token only.
    assert api.client.get("/v1/me", headers=second.headers).status_code == 401
    assert api.client.get("/v1/me", headers=first.headers).status_code == 200
    token = {"Authorization": f"Bearer {named.json()['token']}"}
    assert api.client.get("/v1/me", headers=token).json()["user"]["organizationId"] == (
        second.org_id
    )


def test_an_organization_admin_names_their_own_people_without_the_organization(
    api: Api,
) -> None:
    first, second = _two_anas(api)
    admin = api.user(first.org_id, role="admin")
    issued = api.client.post("/v1/admin/users/ana/tokens", json={}, headers=admin.headers)
    assert issued.status_code == 201, issued.text
    assert api.client.get("/v1/me", headers=first.headers).status_code == 401
    assert api.client.get("/v1/me", headers=second.headers).status_code == 200
    elsewhere = api.client.post(
        "/v1/admin/users/ana/tokens", json={"organizationId": second.org_id}, headers=admin.headers
    )
    assert elsewhere.status_code == 404
