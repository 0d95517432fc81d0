"""`complete` with the Bot's last items (API.md, "Bots, channels and chats"): the
answer and the Turn's end in one request, learned as if `items` then `complete` were sent."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api
from tests.support.bots import World, error, fact_from_person, script, services, turn, world

__all__ = ["script", "services", "world"]

ANSWER = {"role": "assistant", "content": "Take the 8:10 train from platform 2."}


def _complete(world: World, chat: dict[str, Any], turn_id: str, body: Any = None) -> Any:
    path = f"/v1/chats/{chat['id']}/turns/{turn_id}/complete"
    kwargs = {} if body is None else {"json": body}
    return world.api.client.post(path, headers=world.ana.headers, **kwargs)


def _history(api: Api, world: World, chat: dict[str, Any]) -> list[dict[str, Any]]:
    answer = api.client.get(f"/v1/chats/{chat['id']}/items", headers=world.ana.headers)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def test_the_last_items_and_the_end_of_the_turn_in_one_request(world: World, script: Any) -> None:
    script.answers["learning_changes"] = fact_from_person
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "I was unsure.").status_code == 200

    done = _complete(world, chat, turn_id, {"items": [ANSWER]})
    assert done.status_code == 200, done.text
    body = done.json()
    assert body["turn"] == {"id": turn_id, "status": "completed"}
    [item_id] = body["itemIds"]

    history = _history(world.api, world, chat)
    assert [(i["role"], i["content"]) for i in history] == [
        ("user", "I take the 8:10 train."),
        ("assistant", ANSWER["content"]),
    ]
    assert history[-1]["id"] == item_id
    # The waiting learning went on through the Bot's last words, once.
    [run] = world.executions(world.ana)
    assert run["status"] == "succeeded", run
    [learn_call] = [c for c in script.calls if c.task == "learning_changes"]
    assert ANSWER["content"] in learn_call.user
    assert [e["content"] for e in world.memory(world.ana)] == ["Ana takes the 8:10 train."]


def test_a_completed_turn_takes_no_more_items_and_keeps_its_history(
    world: World, script: Any
) -> None:
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hello")["turn"]["id"]
    assert _complete(world, chat, turn_id, {"items": [ANSWER]}).status_code == 200
    again = _complete(world, chat, turn_id, {"items": [ANSWER]})
    assert error(again)[:2] == (409, "ChatConflict")
    assert len(_history(world.api, world, chat)) == 2
    # Without items a repeated complete still answers the same, with no ids.
    plain = _complete(world, chat, turn_id, {})
    assert plain.status_code == 200, plain.text
    assert plain.json() == {"turn": {"id": turn_id, "status": "completed"}}
    assert _complete(world, chat, turn_id).status_code == 200  # no body at all


def test_bad_items_are_refused_by_field_and_nothing_is_saved(world: World, script: Any) -> None:
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hello")["turn"]["id"]
    for items, field in (
        ([], "items"),
        ([{"role": "user", "content": "not the person's words"}], "items"),
        ([{"role": "assistant"}], "items"),
    ):
        refused = _complete(world, chat, turn_id, {"items": items})
        status, tag, where = error(refused)
        assert (status, tag) == (400, "ValidationError"), refused.text
        assert where[0] == field, where
    # The turn is still open and its history unchanged: nothing was written.
    assert len(_history(world.api, world, chat)) == 1
    added = world.api.client.post(
        f"/v1/chats/{chat['id']}/turns/{turn_id}/items",
        json={"items": [ANSWER]},
        headers=world.ana.headers,
    )
    assert added.status_code == 200, added.text
