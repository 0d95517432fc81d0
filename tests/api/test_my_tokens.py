"""A person's own tokens: `GET`/`POST /v1/me/tokens` and `DELETE /v1/me/tokens/{tokenPrefix}`."""

from __future__ import annotations

from typing import Any

from agent_memory.domain.identity import MAX_TOKENS_PER_USER
from tests.conftest import Api


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def prefixes(api: Api, headers: dict[str, str]) -> list[str]:
    answer = api.client.get("/v1/me/tokens", headers=headers)
    assert answer.status_code == 200, answer.text
    return [t["prefix"] for t in answer.json()["tokens"]]


def test_a_person_revokes_a_token_of_their_own(api: Api) -> None:
    org = api.org()
    ben = api.user(org)
    laptop: dict[str, Any] = api.client.post("/v1/me/tokens", json={}, headers=ben.headers).json()

    gone = api.client.delete(f"/v1/me/tokens/{laptop['tokenPrefix']}", headers=ben.headers)

    assert gone.status_code == 204, gone.text
    assert api.client.get("/v1/me", headers=bearer(laptop["token"])).status_code == 401
    assert prefixes(api, ben.headers) == [ben.token_prefix]


def test_someone_elses_token_answers_as_an_unknown_one(api: Api) -> None:
    org = api.org()
    ana, boss = api.user(org), api.user(org, role="admin")
    unknown = api.client.delete("/v1/me/tokens/amk_000000000000", headers=ana.headers)
    others = api.client.delete(f"/v1/me/tokens/{boss.token_prefix}", headers=ana.headers)
    # An admin too: this route is about the caller's own tokens (admins have theirs).
    admins = api.client.delete(f"/v1/me/tokens/{ana.token_prefix}", headers=boss.headers)

    assert unknown.status_code == others.status_code == admins.status_code == 404
    assert unknown.json() == others.json() == admins.json()
    for person in (ana, boss):
        assert api.client.get("/v1/me", headers=person.headers).status_code == 200


def test_a_person_holds_at_most_so_many_tokens(api: Api) -> None:
    org = api.org()
    ben = api.user(org)
    added = [
        api.client.post("/v1/me/tokens", json={}, headers=ben.headers).json()
        for _ in range(MAX_TOKENS_PER_USER - 1)
    ]
    assert all("token" in a for a in added)

    over = api.client.post("/v1/me/tokens", json={}, headers=ben.headers)

    assert over.status_code == 409, over.text
    assert over.json()["error"]["_tag"] == "Conflict"
    assert str(MAX_TOKENS_PER_USER) in over.json()["error"]["message"]
    assert len(prefixes(api, ben.headers)) == MAX_TOKENS_PER_USER
    # Revoking one makes room again; a rotation by an admin leaves one.
    api.client.delete(f"/v1/me/tokens/{added[0]['tokenPrefix']}", headers=ben.headers)
    assert api.client.post("/v1/me/tokens", json={}, headers=ben.headers).status_code == 201
    rotated = api.client.post(f"/v1/admin/users/{ben.id}/tokens", json={}, headers=api.admin)
    assert prefixes(api, bearer(rotated.json()["token"])) == [rotated.json()["tokenPrefix"]]


def test_the_admin_token_has_no_tokens_of_its_own(api: Api) -> None:
    minted = api.client.post("/v1/me/tokens", json={}, headers=api.admin)
    assert minted.status_code == 409, minted.text
    assert minted.json()["error"]["_tag"] == "Conflict"
    revoked = api.client.delete("/v1/me/tokens/amk_000000000000", headers=api.admin)
    assert revoked.status_code == 403


def test_an_admin_revoking_a_token_takes_it_off_the_persons_list(api: Api) -> None:
    org = api.org()
    ben = api.user(org)
    laptop = api.client.post("/v1/me/tokens", json={}, headers=ben.headers).json()

    gone = api.client.delete(f"/v1/admin/tokens/{laptop['tokenPrefix']}", headers=api.admin)

    assert gone.status_code == 204
    assert prefixes(api, ben.headers) == [ben.token_prefix]


def test_my_tokens_need_a_token(api: Api) -> None:
    for method in ("GET", "POST"):
        answer = api.client.request(method, "/v1/me/tokens", json={})
        assert answer.status_code == 401
