"""The confide's call log on its confession's row (seed 002 "Model requests and
results stay in the encrypted call log"): one row per confide holds the confession and the
model call, the call log lists it with its request and reply, a calm confide logs what it
logged before, erasure takes the row, and confides saved on two rows still list.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.tasks.memory_bot_requests import CALM_ANSWER
from agent_memory.persistence.bot_rows import chat_pk
from agent_memory.ports import ModelFailure, Put, Usage
from agent_memory.service import memory_bot_calls
from tests.support.bots import (
    HEARD,
    MEMORY_MODEL,
    Script,
    World,
    make_channel,
    script,
    services,
    turn,
    world,
)
from tests.support.call_log import logged_calls

__all__ = ["script", "services", "world"]  # the memory Bot fixtures of test_confide


def rows(adapters: Any, chat_id: str, prefix: str) -> list[dict[str, Any]]:
    found = adapters.store.query(chat_pk(chat_id)).records
    return [r for r in found if str(r["sk"]).startswith(prefix)]


def confessions(world: World, chat_id: str) -> list[dict[str, Any]]:
    answer = world.get(world.ana, f"/v1/chats/{chat_id}/confessions")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["confessions"])


def test_a_confides_call_is_listed_with_request_and_reply(
    world: World, script: Script, services: Any, adapters: Any
) -> None:
    script.usage = Usage(input_tokens=321, output_tokens=45)
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Book the 8:10.")["turn"]["id"]
    answer = world.confide(world.ana, chat, turn_id, "I booked the wrong day, Lark-7731.")
    assert answer.json() == {"answer": HEARD, "calm": False}
    [call] = logged_calls(services, chat["id"])
    assert (call.turn_id, call.task, call.model, call.ended) == (
        turn_id,
        "confide_answer",
        MEMORY_MODEL,
        "answered",
    )
    request = json.loads(call.request)
    assert request["task"] == "confide_answer"
    assert "Lark-7731" in request["user"]
    assert request["system"]
    assert json.loads(call.reply or "") == {"answer": HEARD}
    assert call.tokens == (321, 45)
    assert call.latency_ms is not None
    [listed] = confessions(world, chat["id"])
    assert listed == {
        "turnId": turn_id,
        "text": "I booked the wrong day, Lark-7731.",
        "answer": HEARD,
        "calm": False,
        "at": call.at,
    }


def test_a_failed_a_slow_and_an_invalid_model_log_what_they_logged_before(
    world: World, script: Script, services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hi.")["turn"]["id"]
    script.answers["confide_answer"] = ModelFailure("unavailable", "down", retryable=True)
    assert world.confide(world.ana, chat, turn_id, "one").json()["calm"] is True
    script.answers["confide_answer"] = {"answer": ""}  # not a valid answer
    assert world.confide(world.ana, chat, turn_id, "two").json()["calm"] is True
    monkeypatch.setattr(memory_bot_calls, "WINDOW_S", 0.3)
    script.answers["confide_answer"] = {"answer": HEARD}
    script.delay_s = 1.0
    assert world.confide(world.ana, chat, turn_id, "three").json()["calm"] is True
    script.delay_s = 0.0
    world.settings({"botMemoryModel": None})
    assert world.confide(world.ana, chat, turn_id, "four").json()["calm"] is True
    calls = logged_calls(services, chat["id"])
    # No model: no call to log. The others: the request, how it ended, the reply if any.
    assert [(c.ended, c.reply) for c in calls] == [
        ("timeout", None),
        ("answered", json.dumps({"answer": ""})),
        ("unavailable", None),
    ]
    # A call without a reply has no usage nor latency; the invalid answer has both.
    assert [(c.tokens, c.latency_ms) for c in (calls[0], calls[2])] == [(None, None)] * 2
    assert calls[1].tokens is not None
    assert calls[1].latency_ms is not None
    assert all(c.task == "confide_answer" and c.model == MEMORY_MODEL for c in calls)
    said = [json.loads(c.request)["user"] for c in calls]
    assert all(s.endswith(t) for s, t in zip(said, ["three", "two", "one"], strict=True))
    listed = confessions(world, chat["id"])
    assert [(c["text"], c["answer"], c["calm"]) for c in listed] == [
        (text, CALM_ANSWER, True) for text in ("four", "three", "two", "one")
    ]


def test_a_confession_that_cannot_be_written_still_leaves_its_call_in_the_log(
    world: World, services: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hi.")["turn"]["id"]
    store = services.memory_bot.repo._store
    real = store.write

    def no_confessions(actions: Any) -> None:
        if any(isinstance(a, Put) and str(a.record["sk"]).startswith("CONFESS#") for a in actions):
            raise Unavailable("the table is unavailable")
        real(actions)

    monkeypatch.setattr(store, "write", no_confessions)
    assert world.confide(world.ana, chat, turn_id, "Lost, Owl-5150.").status_code == 503
    monkeypatch.setattr(store, "write", real)
    assert confessions(world, chat["id"]) == []
    # The model was asked (and charged): its call is on a call log row of its own.
    [call] = logged_calls(services, chat["id"])
    assert (call.task, call.ended) == ("confide_answer", "answered")
    assert "Owl-5150" in call.request
    [row] = rows(adapters, chat["id"], "CALL#")
    assert row["ttl"] > time.time()


def test_each_confide_logs_its_enrichment_and_its_answer_under_its_turn(
    world: World, script: Script, services: Any, adapters: Any
) -> None:
    script.answers["enrichment"] = {"input": None, "used": []}
    remembered = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/memory",
        json={"command": {"_tag": "Remember", "content": "Ana takes trains.", "tags": ["t"]}},
        headers=world.ana.headers,
    )
    assert remembered.status_code == 200, remembered.text
    chat = world.chat(world.ana)
    first = turn(world.api, world.ana, chat["id"], "Train?")["turn"]["id"]
    world.confide(world.ana, chat, first, "first")
    world.complete(world.ana, chat, first)
    second = turn(world.api, world.ana, chat["id"], "Train again?")["turn"]["id"]
    world.confide(world.ana, chat, second, "second")
    calls = logged_calls(services, chat["id"])
    # The answer's call is kept on its confession, the enrichment's on a CALL# row.
    assert sorted((c.task, c.turn_id) for c in calls) == sorted(
        [
            ("confide_answer", second),
            ("enrichment", second),
            ("confide_answer", first),
            ("enrichment", first),
        ]
    )
    assert len(rows(adapters, chat["id"], "CALL#")) == 2
    assert len(rows(adapters, chat["id"], "CONFESS#")) == 2


def test_erasing_the_owner_takes_the_confession_and_its_call(
    world: World, services: Any, adapters: Any
) -> None:
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hi.")["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "Erase me, Wren-6060.").status_code == 200
    assert len(rows(adapters, chat["id"], "CONFESS#")) == 1
    url = f"/v1/organizations/{world.org}/users/{world.ana.id}/erase"
    answer = world.api.client.post(url, json={}, headers=world.api.admin)
    assert answer.status_code == 200, answer.text
    assert adapters.store.query(chat_pk(chat["id"])).records == []


def test_erasing_a_member_takes_their_confessions_and_calls_from_a_group_chat(
    world: World, services: Any, adapters: Any
) -> None:
    channel = make_channel(world.api, world.ana, world.ben)
    chat = world.chat(world.ana, channelId=channel["id"])
    anas = turn(world.api, world.ana, chat["id"], "Ana here.")["turn"]["id"]
    assert world.confide(world.ana, chat, anas, "Ana confides.").status_code == 200
    world.complete(world.ana, chat, anas)
    bens = turn(world.api, world.ben, chat["id"], "Ben here.")["turn"]["id"]
    assert world.confide(world.ben, chat, bens, "Ben confides.").status_code == 200
    url = f"/v1/organizations/{world.org}/users/{world.ben.id}/erase"
    answer = world.api.client.post(url, json={}, headers=world.api.admin)
    assert answer.status_code == 200, answer.text
    assert [c["text"] for c in confessions(world, chat["id"])] == ["Ana confides."]
    calls = logged_calls(services, chat["id"])
    assert [(c.task, c.turn_id) for c in calls] == [("confide_answer", anas)]
    assert all(
        turn_id != bens for r in rows(adapters, chat["id"], "") for turn_id in [r.get("turnId")]
    )


def test_deleting_the_history_keeps_the_confession_and_its_call_together(
    world: World, services: Any, adapters: Any
) -> None:
    """DELETE .../items takes the items only (API.md): the confession stays, as before,
    and its call with it (the request holds nothing the confession does not)."""
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hi.")["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "Kept.").status_code == 200
    deleted = world.api.client.delete(f"/v1/chats/{chat['id']}/items", headers=world.ana.headers)
    assert deleted.status_code == 204, deleted.text
    assert rows(adapters, chat["id"], "ITEM#") == []
    assert [c["text"] for c in confessions(world, chat["id"])] == ["Kept."]
    [call] = logged_calls(services, chat["id"])
    assert "Kept." in call.request


def test_the_merged_row_stays_under_2_kb(world: World, local_aws: Any) -> None:
    """A typical confide (a sentence confessed, a short answer, the owner's instructions):
    the confession and its call, sealed and compressed, sized as DynamoDB bills it (with
    AWS KMS's wrapped data key, bench/sizes.py), stay under 2 KB: 2 write units, where
    the two rows took 3."""
    from bench.sizes import item_size

    body = {"expected": 0, "instructions": "Never share health details. Be brief and kind."}
    patched = world.api.client.patch(
        f"/v1/bots/{world.bot['id']}/memory/bot", json=body, headers=world.ana.headers
    )
    assert patched.status_code == 200, patched.text
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Book the 8:10 train.")["turn"]["id"]
    said = "I booked the 8:10 for Saturday instead of Friday and told Ana it was done."
    assert world.confide(world.ana, chat, turn_id, said).status_code == 200
    session, local = local_aws
    dynamodb = session.client("dynamodb")
    found = dynamodb.query(
        TableName=local.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :confess)",
        ExpressionAttributeValues={
            ":pk": {"S": chat_pk(chat["id"])},
            ":confess": {"S": "CONFESS#"},
        },
    )["Items"]
    [row] = found
    assert "task" in row
    assert item_size(row) < 2048
