"""No silent impersonation: a token someone else issues to a person replaces every token the
person holds (a rotation), every issuance is shown to the person with who issued it and when,
and a person may add a token of their own without losing the others.

The attacker's case: an organization admin (or the admin token) mints a token for Ben, reads
Ben's chat with it, and Ben's own token keeps working with nothing to tell him.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, User

ADMIN_TOKEN_ISSUER = "admin token"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def issue(api: Api, user: User, headers: dict[str, str]) -> dict[str, Any]:
    answer = api.client.post(f"/v1/admin/users/{user.id}/tokens", json={}, headers=headers)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def my_tokens(api: Api, headers: dict[str, str]) -> list[dict[str, Any]]:
    answer = api.client.get("/v1/me/tokens", headers=headers)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["tokens"])


def test_an_org_admin_minting_bens_token_ends_bens_old_one_and_ben_sees_who(api: Api) -> None:
    org = api.org()
    boss, ben = api.user(org, role="admin"), api.user(org)
    bot = api.client.post("/v1/bots", json={"name": "Helper"}, headers=ben.headers)
    assert bot.status_code == 201, bot.text
    chat = api.client.post(
        "/v1/chats", json={"botId": bot.json()["bot"]["id"]}, headers=ben.headers
    ).json()["chat"]["id"]

    minted = issue(api, ben, boss.headers)

    # Ben's token stops at once: he notices on his next request.
    old = api.client.get(f"/v1/chats/{chat}/items", headers=ben.headers)
    assert old.status_code == 401
    assert old.json()["error"]["_tag"] == "Unauthorized"
    new = bearer(minted["token"])
    assert api.client.get("/v1/me", headers=new).json()["user"]["id"] == ben.id
    # With the token he is given, Ben sees who issued it and when; never a secret or a hash.
    (shown,) = my_tokens(api, new)
    assert set(shown) == {"prefix", "issuedBy", "createdAt"}
    assert (shown["prefix"], shown["issuedBy"]) == (minted["tokenPrefix"], boss.id)
    assert isinstance(shown["createdAt"], int)
    assert minted["token"] not in str(shown)


def test_the_admin_token_rotates_too_and_is_named_as_the_issuer(api: Api) -> None:
    org = api.org()
    ben = api.user(org)
    first = issue(api, ben, api.admin)
    second = issue(api, ben, api.admin)

    for token in (ben.token, first["token"]):
        assert api.client.get("/v1/me", headers=bearer(token)).status_code == 401
    shown = my_tokens(api, bearer(second["token"]))
    assert [(t["prefix"], t["issuedBy"]) for t in shown] == [
        (second["tokenPrefix"], ADMIN_TOKEN_ISSUER)
    ]


def test_ben_adds_a_token_of_his_own_and_keeps_the_others(api: Api) -> None:
    org = api.org()
    ben = api.user(org)

    added = api.client.post("/v1/me/tokens", json={}, headers=ben.headers)

    assert added.status_code == 201, added.text
    laptop = added.json()
    assert set(laptop) == {"token", "tokenPrefix"}
    for headers in (ben.headers, bearer(laptop["token"])):
        assert api.client.get("/v1/me", headers=headers).json()["user"]["id"] == ben.id
    shown = my_tokens(api, ben.headers)
    # The token he was created with (by the admin token), then his own, oldest first.
    assert [(t["prefix"], t["issuedBy"]) for t in shown] == [
        (ben.token_prefix, ADMIN_TOKEN_ISSUER),
        (laptop["tokenPrefix"], ben.id),
    ]
    assert shown[0]["createdAt"] <= shown[1]["createdAt"]


def test_a_rotation_ends_the_tokens_a_person_added_too(api: Api) -> None:
    org = api.org()
    boss, ben = api.user(org, role="admin"), api.user(org)
    laptop = api.client.post("/v1/me/tokens", json={}, headers=ben.headers).json()

    minted = issue(api, ben, boss.headers)

    for token in (ben.token, laptop["token"]):
        assert api.client.get("/v1/me", headers=bearer(token)).status_code == 401
    assert [t["prefix"] for t in my_tokens(api, bearer(minted["token"]))] == [minted["tokenPrefix"]]


def test_the_list_is_the_callers_own(api: Api) -> None:
    org = api.org()
    ana, ben = api.user(org), api.user(org)
    api.client.post("/v1/me/tokens", json={}, headers=ben.headers)

    assert [t["prefix"] for t in my_tokens(api, ana.headers)] == [ana.token_prefix]
    # The admin token is configured, not issued: it holds no tokens of its own.
    assert my_tokens(api, api.admin) == []
