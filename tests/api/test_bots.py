"""Bots, channels, chats, turns and items (API.md, "Bots, channels and chats") through HTTP
on the embedded AWS."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api
from tests.support.bots import error, make_bot, make_channel, make_chat, turn


@pytest.fixture
def people(api: Api) -> dict[str, Any]:
    org = api.org()
    other = api.org()
    return {
        "org": org,
        "other": other,
        "ana": api.user(org),
        "ben": api.user(org),
        "cy": api.user(org),
        "admin": api.user(org, role="admin"),
        "olga": api.user(other),
    }


def test_a_bot_is_created_with_grants_and_seen_by_its_people(
    api: Api, people: dict[str, Any]
) -> None:
    ana, ben, cy, olga = people["ana"], people["ben"], people["cy"], people["olga"]
    bot = make_bot(api, ana, {ben.id: "read"})
    assert bot == {
        "id": bot["id"],
        "name": "Helper",
        "organizationId": people["org"],
        "owner": ana.id,
        "grants": {ben.id: "read", ana.id: "write"},
        "linked": False,
    }
    seen = api.client.get(f"/v1/bots/{bot['id']}", headers=ben.headers)
    assert seen.status_code == 200
    assert seen.json()["bot"] == bot
    # Without a level, or from another organization: the bot does not exist.
    assert error(api.client.get(f"/v1/bots/{bot['id']}", headers=cy.headers))[:2] == (
        404,
        "NotFound",
    )
    assert error(api.client.get(f"/v1/bots/{bot['id']}", headers=olga.headers))[0] == 404
    # A grant for someone who is not in the organization: nobody known, a 404 naming them.
    bad = api.client.post(
        "/v1/bots", json={"name": "x", "grants": {olga.id: "read"}}, headers=ana.headers
    )
    assert error(bad) == (404, "NotFound", ["grants", olga.id])
    wrong = api.client.post(
        "/v1/bots", json={"name": "x", "grants": {ben.id: "own"}}, headers=ana.headers
    )
    assert error(wrong) == (400, "ValidationError", ["grants", ben.id])
    # The admin token is nobody: it cannot own a bot.
    assert api.client.post("/v1/bots", json={"name": "x"}, headers=api.admin).status_code == 403


def test_a_link_lets_another_organization_use_the_bot_there(
    api: Api, people: dict[str, Any]
) -> None:
    ana, ben, olga = people["ana"], people["ben"], people["olga"]
    bot = make_bot(api, ana, {ben.id: "read"})
    url = f"/v1/bots/{bot['id']}/links"
    body = {"organizationId": people["other"], "grants": {olga.id: "read"}}
    # A reader may not link; an unknown organization is a 404 naming it.
    assert error(api.client.post(url, json=body, headers=ben.headers))[:2] == (403, "Forbidden")
    missing = api.client.post(url, json={**body, "organizationId": "nowhere"}, headers=ana.headers)
    assert error(missing) == (404, "NotFound", ["organizationId"])
    linked = api.client.post(url, json=body, headers=ana.headers)
    assert linked.status_code == 201, linked.text
    seen = api.client.get(f"/v1/bots/{bot['id']}", headers=olga.headers).json()["bot"]
    # The linked organization sees its own people's grants, never the home organization's.
    assert seen["linked"] is True
    assert seen["grants"] == {olga.id: "read"}
    chat = make_chat(api, olga, bot["id"])
    assert chat["organizationId"] == people["other"]
    # Links do not pass through a link.
    again = api.client.post(url, json=body, headers=olga.headers)
    assert error(again)[:2] == (403, "Forbidden")


def test_channels_and_group_chats_follow_current_members(api: Api, people: dict[str, Any]) -> None:
    ana, ben, cy, admin = people["ana"], people["ben"], people["cy"], people["admin"]
    bot = make_bot(api, ana, {ben.id: "read", cy.id: "read"})
    channel = make_channel(api, ana, ben)
    assert channel["members"] == [ana.id, ben.id]
    # cy is not a member: no group chat for cy.
    refused = api.client.post(
        "/v1/chats", json={"botId": bot["id"], "channelId": channel["id"]}, headers=cy.headers
    )
    assert error(refused) == (404, "NotFound", ["channelId"])
    chat = make_chat(api, ben, bot["id"], channelId=channel["id"])
    assert chat["channelId"] == channel["id"]
    assert chat["kind"] == "chat"
    started = turn(api, ana, chat["id"], "We ship on Friday.")
    assert started["turn"]["actor"] == ana.id
    assert api.client.get(f"/v1/chats/{chat['id']}/items", headers=cy.headers).status_code == 404
    # Only the creator or an admin changes members; cy joins, ben leaves.
    url = f"/v1/channels/{channel['id']}/members"
    assert error(api.client.post(url, json={"add": [cy.id]}, headers=ben.headers))[0] == 403
    # Someone who is not a person of the organization is nobody known: a 404 naming them.
    nobody = api.client.post(url, json={"add": ["nobody"]}, headers=ana.headers)
    assert error(nobody) == (404, "NotFound", ["add", 0])
    new = {"name": "x", "members": [ben.id, "nobody"]}
    assert error(api.client.post("/v1/channels", json=new, headers=ana.headers)) == (
        404,
        "NotFound",
        ["members", 1],
    )
    changed = api.client.post(url, json={"add": [cy.id], "remove": [ben.id]}, headers=admin.headers)
    assert changed.status_code == 200
    assert changed.json()["channel"]["members"] == [ana.id, cy.id]
    assert api.client.get(f"/v1/chats/{chat['id']}/items", headers=cy.headers).status_code == 200
    assert api.client.get(f"/v1/chats/{chat['id']}/items", headers=ben.headers).status_code == 404


def test_turns_keep_the_person_words_with_the_saved_actor(api: Api, people: dict[str, Any]) -> None:
    ana, ben = people["ana"], people["ben"]
    bot = make_bot(api, ana)
    chat = make_chat(api, ana, bot["id"])
    started = turn(api, ana, chat["id"], "My name is Ana; I like tea.")
    assert started["turn"] == {"id": started["turn"]["id"], "actor": ana.id, "status": "open"}
    assert started["input"] == "My name is Ana; I like tea."
    assert started["enriched"] is False
    turn_id = started["turn"]["id"]
    url = f"/v1/chats/{chat['id']}/turns/{turn_id}/items"
    added = api.client.post(
        url,
        json={
            "items": [
                {"role": "assistant", "content": "Noted, Ana."},
                {"role": "tool", "content": "weather: sunny", "app": "weather"},
                {"role": "notice", "content": "The user ben joined."},
            ]
        },
        headers=ana.headers,
    )
    assert added.status_code == 200, added.text
    assert added.json() == {"itemIds": ["i-02", "i-03", "i-04"]}
    # The person's words only come as the input; an app is only a tool's.
    person = api.client.post(
        url, json={"items": [{"role": "user", "content": "x"}]}, headers=ana.headers
    )
    assert error(person) == (400, "ValidationError", ["items", 0, "role"])
    app = api.client.post(
        url,
        json={"items": [{"role": "assistant", "content": "x", "app": "a"}]},
        headers=ana.headers,
    )
    assert error(app) == (400, "ValidationError", ["items", 0, "app"])
    items = api.client.get(f"/v1/chats/{chat['id']}/items", headers=ana.headers).json()["items"]
    assert items == [
        {
            "id": "i-01",
            "turnId": turn_id,
            "role": "user",
            "actor": ana.id,
            "content": "My name is Ana; I like tea.",
        },
        {
            "id": "i-02",
            "turnId": turn_id,
            "role": "assistant",
            "actor": None,
            "content": "Noted, Ana.",
        },
        {
            "id": "i-03",
            "turnId": turn_id,
            "role": "tool",
            "actor": None,
            "content": "weather: sunny",
            "app": "weather",
        },
        {
            "id": "i-04",
            "turnId": turn_id,
            "role": "notice",
            "actor": None,
            "content": "The user ben joined.",
        },
    ]
    # A notice turn: its input is never a person's words.
    notice = turn(api, ana, chat["id"], "The meeting moved.", notice=True)
    later = api.client.get(f"/v1/chats/{chat['id']}/items?after=i-04", headers=ana.headers).json()
    assert later["items"] == [
        {
            "id": "i-05",
            "turnId": notice["turn"]["id"],
            "role": "notice",
            "actor": None,
            "content": "The meeting moved.",
        }
    ]
    # Private chats are their owner's alone.
    assert api.client.get(f"/v1/chats/{chat['id']}/items", headers=ben.headers).status_code == 404
    assert (
        error(
            api.client.post(
                f"/v1/chats/{chat['id']}/turns", json={"input": "hi"}, headers=ben.headers
            )
        )[0]
        == 404
    )
    # Complete: no more items; a repeated complete answers the same.
    done = api.client.post(
        f"/v1/chats/{chat['id']}/turns/{turn_id}/complete", json={}, headers=ana.headers
    )
    assert done.status_code == 200
    assert done.json() == {"turn": {"id": turn_id, "status": "completed"}}
    again = api.client.post(
        f"/v1/chats/{chat['id']}/turns/{turn_id}/complete", json={}, headers=ana.headers
    )
    assert again.json() == done.json()
    late = api.client.post(
        url, json={"items": [{"role": "assistant", "content": "x"}]}, headers=ana.headers
    )
    assert error(late)[:2] == (409, "ChatConflict")
    unknown = api.client.post(
        f"/v1/chats/{chat['id']}/turns/turn_nope/complete", json={}, headers=ana.headers
    )
    assert error(unknown)[0] == 404


def test_deleting_the_history_keeps_item_ids_unique(api: Api, people: dict[str, Any]) -> None:
    ana, ben = people["ana"], people["ben"]
    bot = make_bot(api, ana, {ben.id: "read"})
    channel = make_channel(api, ana, ben)
    chat = make_chat(api, ana, bot["id"], channelId=channel["id"])
    turn(api, ben, chat["id"], "First.")
    # A member reads a group chat but only its owner deletes the history.
    assert error(api.client.delete(f"/v1/chats/{chat['id']}/items", headers=ben.headers))[0] == 403
    deleted = api.client.delete(f"/v1/chats/{chat['id']}/items", headers=ana.headers)
    assert deleted.status_code == 204
    assert api.client.get(f"/v1/chats/{chat['id']}/items", headers=ana.headers).json() == {
        "items": []
    }
    turn(api, ben, chat["id"], "Second.")
    items = api.client.get(f"/v1/chats/{chat['id']}/items", headers=ana.headers).json()["items"]
    # Facts learned before keep citing i-01: a new item never takes its id.
    assert [i["id"] for i in items] == ["i-02"]


def test_review_chats_and_chat_access(api: Api, people: dict[str, Any]) -> None:
    ana, ben, cy = people["ana"], people["ben"], people["cy"]
    bot = make_bot(api, ana, {ben.id: "read"})
    review = make_chat(api, ben, bot["id"], kind="review")
    assert review["kind"] == "review"
    assert review["owner"] == ben.id
    # Without read on the bot there is no chat with it.
    refused = api.client.post("/v1/chats", json={"botId": bot["id"]}, headers=cy.headers)
    assert error(refused) == (404, "NotFound", ["botId"])
    kind = api.client.post(
        "/v1/chats", json={"botId": bot["id"], "kind": "group"}, headers=ben.headers
    )
    assert error(kind)[:2] == (400, "ValidationError")
