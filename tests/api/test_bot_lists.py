"""What a person lists of bots, channels and chats (`GET /v1/bots`, `/v1/channels`,
`/v1/chats`): exactly what each object's own read route shows them, newest first, paged as
threads are. Over HTTP on the embedded AWS, one world for the module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Api, SharedApp, User
from tests.support.requests import get, post


@dataclass
class World:
    api: Api
    ana: User
    bob: User
    boss: User  # the organization's admin
    oz: User  # another organization's, whose bot is linked to Ana
    stranger: User  # a third organization's
    bots: dict[str, str]
    channels: dict[str, str]
    chats: dict[str, dict[str, Any]]


def ids(api: Api, user: User, url: str) -> list[str]:
    key = url.split("?", maxsplit=1)[0].rsplit("/", 1)[-1]
    return [o["id"] for o in get(api, user, url)[key]]


def bot(api: Api, user: User, name: str, grants: dict[str, str] | None = None) -> str:
    return str(post(api, user, "/v1/bots", {"name": name, "grants": grants or {}})["bot"]["id"])


@pytest.fixture(scope="module")
def world(shared_app: SharedApp) -> World:
    api = shared_app.api
    org, other = api.org(), api.org(name="Other")
    ana, bob, boss = api.user(org), api.user(org), api.user(org, role="admin")
    oz, stranger = api.user(other), api.user(api.org(name="Third"))
    bots = {
        "own": bot(api, ana, "ana's"),
        "granted": bot(api, bob, "shared", {ana.id: "read"}),
        "bobs": bot(api, bob, "bob's"),
        "linked": bot(api, oz, "oz's"),
    }
    post(
        api,
        oz,
        f"/v1/bots/{bots['linked']}/links",
        {"organizationId": org, "grants": {ana.id: "read"}},
    )
    channels = {
        "team": post(api, ana, "/v1/channels", {"name": "team", "members": [bob.id]})["channel"][
            "id"
        ],
        "bobs": post(api, bob, "/v1/channels", {"name": "bob's", "members": []})["channel"]["id"],
    }
    chats = {
        "own": post(api, ana, "/v1/chats", {"botId": bots["own"]})["chat"],
        "group": post(
            api, bob, "/v1/chats", {"botId": bots["granted"], "channelId": channels["team"]}
        )["chat"],
        "bobs": post(api, bob, "/v1/chats", {"botId": bots["bobs"]})["chat"],
        "linked": post(api, ana, "/v1/chats", {"botId": bots["linked"]})["chat"],
    }
    # Ana speaks in Bob's group chat: it is one of hers to list from then on.
    post(api, ana, f"/v1/chats/{chats['group']['id']}/turns", {"input": "Hello team."})
    return World(api, ana, bob, boss, oz, stranger, bots, channels, chats)


def test_a_person_lists_the_bots_they_reach_as_each_bots_own_route_shows_it(world: World) -> None:
    api, ana, b = world.api, world.ana, world.bots
    listed = get(api, ana, "/v1/bots")

    assert [x["id"] for x in listed["bots"]] == [b["linked"], b["granted"], b["own"]]
    assert listed["has_more"] is False
    for shown in listed["bots"]:
        assert shown == get(api, ana, f"/v1/bots/{shown['id']}")["bot"]
    assert [x["linked"] for x in listed["bots"]] == [True, False, False]
    # The linked bot shows Ana's organization's grants, never its home's people.
    assert listed["bots"][0]["grants"] == {ana.id: "read"}

    # An admin: every bot of the organization, none linked without a grant; the linked
    # bot's owner: their own; someone of a third organization: none.
    assert ids(api, world.boss, "/v1/bots") == [b["bobs"], b["granted"], b["own"]]
    assert ids(api, world.oz, "/v1/bots") == [b["linked"]]
    assert get(api, world.stranger, "/v1/bots") == {"bots": [], "has_more": False}


def test_lists_page_by_the_last_id_and_refuse_a_position_they_do_not_show(world: World) -> None:
    api, ana = world.api, world.ana
    pages, after = [], None
    while True:
        page = get(api, ana, "/v1/bots?limit=1" + (f"&starting_after={after}" if after else ""))
        pages.append([x["id"] for x in page["bots"]])
        if not page["has_more"]:
            break
        after = page["bots"][-1]["id"]
    assert pages == [[i] for i in ids(api, ana, "/v1/bots")]

    for url, hidden in [
        ("/v1/bots", world.bots["bobs"]),
        ("/v1/channels", world.channels["bobs"]),
        ("/v1/chats", world.chats["bobs"]["id"]),
    ]:
        answer = api.client.get(f"{url}?starting_after={hidden}", headers=ana.headers)
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["path"] == ["starting_after"]
    bad = api.client.get("/v1/chats?limit=0", headers=ana.headers)
    assert bad.status_code == 400
    assert bad.json()["error"]["path"] == ["limit"]
    unseen = api.client.get(f"/v1/chats?botId={world.bots['bobs']}", headers=ana.headers)
    assert unseen.status_code == 404
    assert unseen.json()["error"]["path"] == ["botId"]


def test_channels_list_the_callers_memberships_and_an_admin_all(world: World) -> None:
    api, c = world.api, world.channels
    assert get(api, world.ana, "/v1/channels")["channels"] == [
        {"id": c["team"], "name": "team", "members": [world.ana.id, world.bob.id]}
    ]
    assert ids(api, world.bob, "/v1/channels") == [c["bobs"], c["team"]]
    assert ids(api, world.boss, "/v1/channels") == [c["bobs"], c["team"]]
    assert ids(api, world.oz, "/v1/channels") == []


def test_chats_list_what_the_caller_owns_or_speaks_in_while_they_read_it(world: World) -> None:
    api, ana, chats = world.api, world.ana, world.chats
    listed = get(api, ana, "/v1/chats")["chats"]
    assert listed == [chats["linked"], chats["group"], chats["own"]]
    assert ids(api, ana, f"/v1/chats?botId={world.bots['granted']}") == [chats["group"]["id"]]
    assert ids(api, world.bob, "/v1/chats") == [chats["bobs"]["id"], chats["group"]["id"]]
    assert ids(api, world.boss, "/v1/chats") == []  # an admin reads nobody's chats
    assert ids(api, world.oz, "/v1/chats") == []  # the linked bot's owner neither

    # Out of the channel, Ana no longer reads its group chat, nor lists it.
    removed = {"remove": [ana.id]}
    post(api, world.boss, f"/v1/channels/{world.channels['team']}/members", removed)
    try:
        assert ids(api, ana, "/v1/chats") == [chats["linked"]["id"], chats["own"]["id"]]
    finally:
        post(api, world.boss, f"/v1/channels/{world.channels['team']}/members", {"add": [ana.id]})


def test_erased_chats_and_deleted_bots_leave_the_lists(world: World) -> None:
    api, ana, admin = world.api, world.ana, world.api.admin
    # Bob is erased: his chats go, his group chat with them from Ana's list.
    erase = f"/v1/organizations/{ana.org_id}/users/{world.bob.id}/erase"
    assert api.client.post(erase, headers=world.boss.headers).status_code == 200
    assert ids(api, ana, "/v1/chats") == [world.chats["linked"]["id"], world.chats["own"]["id"]]
    assert ids(api, world.bob, "/v1/chats") == []

    # Oz's organization is deleted: its bot leaves Ana's list.
    gone = api.client.delete(f"/v1/admin/organizations/{world.oz.org_id}", headers=admin)
    assert gone.status_code == 200, gone.text
    assert world.bots["linked"] not in ids(api, ana, "/v1/bots")
