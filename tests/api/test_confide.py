"""The memory Bot through HTTP (seed 002, "The memory Bot"; API.md): confide and its calm
answer, confessions for the chat's owner, and the learning that waits for the turn.

The learning workflow runs inline (`InlineWorkflow`: the real LearningService steps, the bot
pool, DynamoDB and KMS on moto); tests/integration/test_bot_learning.py runs it through the
real state machine.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from agent_memory.domain.memory_bot import BOT_MEMORY_OFF, Price
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.domain.tasks.memory_bot_requests import CALM_ANSWER
from agent_memory.ports import ModelFailure, Usage
from agent_memory.service import memory_bot_calls
from tests.support.bots import (
    HEARD,
    MEMORY_MODEL,
    Script,
    World,
    error,
    fact_from_person,
    make_channel,
    make_chat,
    patch_settings,
    script,
    scripted_services,
    services,
    settings_of,
    turn,
    world,
)

__all__ = ["script", "services", "world"]  # the memory Bot fixtures


def test_confide_is_answered_by_the_model_and_recorded_for_the_owner(
    world: World, script: Script
) -> None:
    chat = world.chat(world.ana)
    started = turn(world.api, world.ana, chat["id"], "Book the 8:10 train for me.")
    turn_id = started["turn"]["id"]
    answer = world.confide(world.ana, chat, turn_id, "I booked the wrong day.")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"answer": HEARD, "calm": False}
    # The model was asked with the confession, under its task's name.
    confide_calls = [c for c in script.calls if c.task == "confide_answer"]
    assert len(confide_calls) == 1
    assert "I booked the wrong day." in confide_calls[0].user
    listed = world.get(world.ana, f"/v1/chats/{chat['id']}/confessions")
    assert listed.status_code == 200, listed.text
    [confession] = listed.json()["confessions"]
    assert confession["turnId"] == turn_id
    assert confession["text"] == "I booked the wrong day."
    assert confession["answer"] == HEARD
    assert confession["calm"] is False
    assert isinstance(confession["at"], int)
    # Another organization does not know the chat; nobody but its owner reads confessions.
    assert error(world.get(world.olga, f"/v1/chats/{chat['id']}/confessions"))[0] == 404
    assert error(world.confide(world.olga, chat, turn_id, "x"))[0] == 404


def test_a_group_chat_member_reads_no_confessions(world: World) -> None:
    channel = make_channel(world.api, world.ana, world.ben)
    chat = world.chat(world.ana, channelId=channel["id"])
    started = turn(world.api, world.ben, chat["id"], "What is on today?")
    assert world.confide(world.ben, chat, started["turn"]["id"], "I am unsure.").status_code == 200
    # Ben reads the chat but is not its owner.
    assert error(world.get(world.ben, f"/v1/chats/{chat['id']}/confessions"))[:2] == (
        403,
        "Forbidden",
    )
    owner = world.get(world.ana, f"/v1/chats/{chat['id']}/confessions")
    assert [c["text"] for c in owner.json()["confessions"]] == ["I am unsure."]


def test_review_chats_and_completed_turns_have_no_confide(world: World, script: Script) -> None:
    review = world.chat(world.ana, kind="review")
    started = turn(world.api, world.ana, review["id"], "Look at this.")
    assert error(world.confide(world.ana, review, started["turn"]["id"], "x"))[:2] == (
        409,
        "ChatConflict",
    )
    chat = world.chat(world.ana)
    done = turn(world.api, world.ana, chat["id"], "Hello.")
    world.complete(world.ana, chat, done["turn"]["id"])
    assert error(world.confide(world.ana, chat, done["turn"]["id"], "x"))[:2] == (
        409,
        "ChatConflict",
    )
    assert error(world.confide(world.ana, chat, "turn_missing", "x"))[0] == 404
    assert "confide_answer" not in script.tasks()
    assert world.get(world.ana, f"/v1/chats/{chat['id']}/confessions").json() == {"confessions": []}


def test_no_model_a_failing_model_and_a_slow_model_give_the_calm_answer(
    world: World, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hi.")["turn"]["id"]
    script.answers["confide_answer"] = ModelFailure("unavailable", "down", retryable=True)
    assert world.confide(world.ana, chat, turn_id, "one").json() == {
        "answer": CALM_ANSWER,
        "calm": True,
    }
    script.answers["confide_answer"] = {"answer": ""}  # an invalid answer
    assert world.confide(world.ana, chat, turn_id, "two").json()["calm"] is True
    # A model slower than the window: the calm answer once the window passed.
    monkeypatch.setattr(memory_bot_calls, "WINDOW_S", 0.3)
    script.answers["confide_answer"] = {"answer": HEARD}
    script.delay_s = 2.0
    began = time.monotonic()
    assert world.confide(world.ana, chat, turn_id, "three").json()["calm"] is True
    assert time.monotonic() - began < 1.5
    script.delay_s = 0.0
    world.settings({"botMemoryModel": None})
    calls = len(script.calls)
    assert world.confide(world.ana, chat, turn_id, "four").json() == {
        "answer": CALM_ANSWER,
        "calm": True,
    }
    assert len(script.calls) == calls  # no model: nobody is asked
    listed = world.get(world.ana, f"/v1/chats/{chat['id']}/confessions").json()["confessions"]
    assert [(c["text"], c["calm"]) for c in listed] == [
        ("four", True),
        ("three", True),
        ("two", True),
        ("one", True),
    ]


def test_learning_waits_for_the_turn_then_learns_once(world: World, script: Script) -> None:
    script.answers["learning_changes"] = fact_from_person
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "I was unsure.").status_code == 200
    # Saved, waiting for its turn: the model is not asked to learn before it completes.
    [waiting] = world.executions(world.ana)
    assert (waiting["status"], waiting["chatId"], waiting["turnId"]) == (
        "waiting",
        chat["id"],
        turn_id,
    )
    assert "learning_changes" not in script.tasks()
    # A second confide of the same turn saves no second execution.
    assert world.confide(world.ana, chat, turn_id, "Still unsure.").status_code == 200
    assert len(world.executions(world.ana)) == 1
    world.complete(world.ana, chat, turn_id)
    [done] = world.executions(world.ana)
    assert done["status"] == "succeeded", done
    assert (done["chatId"], done["turnId"]) == (chat["id"], turn_id)
    assert [a["op"] for a in done["applied"]] == ["fact"]
    [learn_call] = [c for c in script.calls if c.task == "learning_changes"]
    assert "I take the 8:10 train." in learn_call.user
    assert f'"actor": "{world.ana.id}"' in learn_call.user
    # The confession itself never becomes memory: the model saw the chat's items only.
    assert "I was unsure." not in learn_call.user
    [entry] = world.memory(world.ana)
    assert entry["content"] == "Ana takes the 8:10 train."
    assert entry["layer"] == "fact"
    # Completing again releases nothing new: the evidence is applied once.
    world.complete(world.ana, chat, turn_id)
    assert len([c for c in script.calls if c.task == "learning_changes"]) == 1
    assert len(world.memory(world.ana)) == 1


def test_a_failed_learning_reads_the_same_evidence_again_later(
    world: World, script: Script
) -> None:
    chat = world.chat(world.ana)
    first = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    world.confide(world.ana, chat, first, "x")
    script.answers["learning_changes"] = ModelFailure("bad_request", "no", retryable=False)
    world.complete(world.ana, chat, first)
    assert world.executions(world.ana)[0]["status"] == "failed"
    assert world.memory(world.ana) == []
    script.answers["learning_changes"] = fact_from_person
    second = turn(world.api, world.ana, chat["id"], "And I cycle home.")["turn"]["id"]
    world.confide(world.ana, chat, second, "y")
    world.complete(world.ana, chat, second)
    newest = world.executions(world.ana)[0]
    assert newest["status"] == "succeeded", newest
    learned = [c for c in script.calls if c.task == "learning_changes"]
    # The second run read the first turn's words again (the read position had not moved).
    assert "I take the 8:10 train." in learned[-1].user
    assert "And I cycle home." in learned[-1].user


def test_who_sees_which_executions_and_what_teaches_nothing(world: World, script: Script) -> None:
    ana_chat = world.chat(world.ana)
    ben_chat = world.chat(world.ben)
    for user, chat in ((world.ana, ana_chat), (world.ben, ben_chat)):
        turn_id = turn(world.api, user, chat["id"], "Hello there.")["turn"]["id"]
        world.confide(user, chat, turn_id, "ok")
    # Ana writes the bot: every execution of her organization; Ben those of his chats.
    assert {e["chatId"] for e in world.executions(world.ana)} == {ana_chat["id"], ben_chat["id"]}
    assert {e["chatId"] for e in world.executions(world.ben)} == {ben_chat["id"]}
    assert error(world.get(world.olga, f"/v1/bots/{world.bot['id']}/learning"))[0] == 404
    # A review chat saves no learning; with botMemory off confide is still answered, and
    # its run is skipped, saying why.
    review = world.chat(world.ana, kind="review")
    turn(world.api, world.ana, review["id"], "Look.")
    world.settings({"botMemory": False})
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "I take the bus.")["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "hm").json() == {"answer": HEARD, "calm": False}
    world.complete(world.ana, chat, turn_id)
    newest = world.executions(world.ana)
    assert {e["chatId"] for e in newest} == {ana_chat["id"], ben_chat["id"], chat["id"]}
    [off] = [e for e in newest if e["chatId"] == chat["id"]]
    assert (off["status"], off["note"]) == ("skipped", BOT_MEMORY_OFF)


def test_concurrent_completes_apply_the_evidence_once(world: World, script: Script) -> None:
    script.answers["learning_changes"] = fact_from_person
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    world.confide(world.ana, chat, turn_id, "x")
    threads = [
        threading.Thread(target=world.complete, args=(world.ana, chat, turn_id)) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(world.memory(world.ana)) == 1
    assert [e["status"] for e in world.executions(world.ana)] == ["succeeded"]


def test_memory_bot_settings_need_write_and_the_current_version(world: World) -> None:
    fresh = settings_of(world, world.ana)
    assert fresh.status_code == 200, fresh.text
    assert fresh.json() == {
        "version": 0,
        "instructions": None,
        "concurrency": None,
        "budget": None,
        "spentMicros": 0,
    }
    assert error(settings_of(world, world.ben))[:2] == (403, "Forbidden")  # read only
    assert error(settings_of(world, world.olga))[0] == 404
    body = {
        "expected": 0,
        "instructions": "Never share health details.",
        "concurrency": 2,
        "budget": {"period": "day", "limitMicros": 5000},
    }
    changed = patch_settings(world, world.ana, body)
    assert changed.status_code == 200, changed.text
    assert changed.json() == {
        "version": 1,
        "instructions": "Never share health details.",
        "concurrency": 2,
        "budget": {"period": "day", "limitMicros": 5000},
        "spentMicros": 0,
    }
    assert error(patch_settings(world, world.ana, {"expected": 0, "concurrency": 3}))[:2] == (
        409,
        "VersionConflict",
    )
    # null removes a field; a missing one stays.
    removed = patch_settings(world, world.ana, {"expected": 1, "concurrency": None})
    assert (removed.json()["version"], removed.json()["concurrency"]) == (2, None)
    assert removed.json()["instructions"] == "Never share health details."
    assert error(patch_settings(world, world.ben, {"expected": 2}))[:2] == (403, "Forbidden")
    bad = patch_settings(world, world.ana, {"expected": 2, "concurrency": 0})
    assert error(bad)[:2] == (400, "ValidationError")
    assert settings_of(world, world.ana).json()["version"] == 2


def test_instructions_reach_the_model_and_a_spent_budget_gives_the_calm_answer(
    world: World, script: Script, services: Any
) -> None:
    services.memory_bot.calls.prices = {MEMORY_MODEL: Price(1_000_000, 2_000_000)}
    script.usage = Usage(input_tokens=600, output_tokens=200)  # 600 + 400 = 1000 micros
    body = {
        "expected": 0,
        "instructions": "Never share health details.",
        "budget": {"period": "month", "limitMicros": 1000},
    }
    assert patch_settings(world, world.ana, body).status_code == 200
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hi.")["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "one").json() == {
        "answer": HEARD,
        "calm": False,
    }
    [asked] = [c for c in script.calls if c.task == "confide_answer"]
    assert "Never share health details." in asked.system
    assert settings_of(world, world.ana).json()["spentMicros"] == 1000
    # Spent: the calm answer, and no model is asked.
    calls = len(script.calls)
    assert world.confide(world.ana, chat, turn_id, "two").json() == {
        "answer": CALM_ANSWER,
        "calm": True,
    }
    assert len(script.calls) == calls
    # Nor is the input enriched, though an entry would help.
    remember_body = {"command": {"_tag": "Remember", "content": "I take the train."}}
    remembered = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/memory", json=remember_body, headers=world.ana.headers
    )
    assert remembered.status_code == 200, remembered.text
    script.answers["enrichment"] = {"input": "Hi, train person.", "used": []}
    assert turn(world.api, world.ana, chat["id"], "Hi train.")["enriched"] is False
    assert len(script.calls) == calls
    # A usage the price table does not know is not charged.
    raised = {"expected": 1, "budget": {"period": "month", "limitMicros": 10_000}}
    assert patch_settings(world, world.ana, raised).status_code == 200
    services.memory_bot.calls.prices = {}
    assert world.confide(world.ana, chat, turn_id, "three").json()["calm"] is False
    assert settings_of(world, world.ana).json()["spentMicros"] == 1000


class InFlight:
    """Counts model calls at the same time (the most ever seen)."""

    def __init__(self) -> None:
        self.now = 0
        self.most = 0
        self.lock = threading.Lock()

    def answer(self, request: ModelRequest) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.25)
        with self.lock:
            self.now -= 1
        return json.dumps({"answer": HEARD})


def confide_from_both(
    world: World, second: Any, chat: dict[str, Any], turn_id: str, times: int
) -> list[Any]:
    clients = [world.api.client, second]
    answers: list[Any] = [None] * times

    def one(index: int) -> None:
        answers[index] = clients[index % 2].post(
            f"/v1/chats/{chat['id']}/turns/{turn_id}/confide",
            json={"text": f"confession {index}"},
            headers=world.ana.headers,
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


# Each server serves one request at a time (as one Lambda instance does): without a limit
# the two call the model at once.
@pytest.mark.parametrize(("concurrency", "most"), [(1, 1), (None, 2)])
def test_concurrency_holds_across_two_servers_on_one_table(
    world: World,
    script: Script,
    settings: Any,
    adapters: Any,
    concurrency: int | None,
    most: int,
) -> None:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    flight = InFlight()
    script.answers["confide_answer"] = flight.answer
    body = {"expected": 0, "concurrency": concurrency}
    assert patch_settings(world, world.ana, body).status_code == 200
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hi.")["turn"]["id"]
    other = scripted_services(settings, adapters, script)  # a second server, same table
    with TestClient(create_app(lambda: other), raise_server_exceptions=False) as second:
        answers = confide_from_both(world, second, chat, turn_id, 4)
    assert [a.status_code for a in answers] == [200] * 4
    assert all(a.json()["calm"] is False for a in answers)
    assert flight.most == most


def test_a_spent_budget_skips_learning_and_keeps_its_evidence(
    world: World, script: Script, services: Any
) -> None:
    script.answers["learning_changes"] = fact_from_person
    services.memory_bot.calls.prices = {MEMORY_MODEL: Price(1_000_000, 1_000_000)}
    script.usage = Usage(input_tokens=10, output_tokens=0)
    body = {"expected": 0, "budget": {"period": "day", "limitMicros": 10}}
    assert patch_settings(world, world.ana, body).status_code == 200
    chat = world.chat(world.ana)
    first = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    assert world.confide(world.ana, chat, first, "x").json()["calm"] is False  # spends it all
    world.complete(world.ana, chat, first)
    assert [e["status"] for e in world.executions(world.ana)] == ["skipped"]
    assert "learning_changes" not in script.tasks()
    raised = {"expected": 1, "budget": {"period": "day", "limitMicros": 1000}}
    assert patch_settings(world, world.ana, raised).status_code == 200
    second = turn(world.api, world.ana, chat["id"], "I cycle home.")["turn"]["id"]
    world.confide(world.ana, chat, second, "y")
    world.complete(world.ana, chat, second)
    assert world.executions(world.ana)[0]["status"] == "succeeded"
    [learned] = [c for c in script.calls if c.task == "learning_changes"]
    # The evidence of the skipped run was read again.
    assert "I take the 8:10 train." in learned.user
    assert "I cycle home." in learned.user


def test_refused_changes_are_recorded_with_their_reasons(world: World, script: Script) -> None:
    def bot_words_only(request: ModelRequest) -> str:
        lines = [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]
        bot_item = next(line["id"] for line in lines if line.get("role") == "assistant")
        fact = {"op": "fact", "content": "The bot said so.", "topics": [], "sources": [bot_item]}
        rename = {"op": "renameTopic", "from": "commute", "to": "travel"}
        return json.dumps({"changes": [fact, rename]})

    script.answers["learning_changes"] = bot_words_only
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hello.")["turn"]["id"]
    added = world.api.client.post(
        f"/v1/chats/{chat['id']}/turns/{turn_id}/items",
        json={"items": [{"role": "assistant", "content": "You take the 8:10 train."}]},
        headers=world.ana.headers,
    )
    assert added.status_code == 200, added.text
    world.confide(world.ana, chat, turn_id, "x")
    world.complete(world.ana, chat, turn_id)
    [done] = world.executions(world.ana)
    assert (done["status"], done["applied"]) == ("succeeded", [])
    refused = {r["change"]["op"]: r["reason"] for r in done["rejected"]}
    assert set(refused) == {"fact", "renameTopic"}
    assert all(refused.values())
    assert world.memory(world.ana) == []


def test_a_linked_bot_uses_the_model_of_the_chats_organization(
    world: World, script: Script
) -> None:
    linked = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/links",
        json={"organizationId": world.other, "grants": {world.olga.id: "read"}},
        headers=world.ana.headers,
    )
    assert linked.status_code == 201, linked.text
    chat = make_chat(world.api, world.olga, world.bot["id"])
    assert chat["organizationId"] == world.other
    turn_id = turn(world.api, world.olga, chat["id"], "Hi.")["turn"]["id"]
    # The home organization names a model; Olga's organization names none: the calm answer.
    assert world.confide(world.olga, chat, turn_id, "x").json() == {
        "answer": CALM_ANSWER,
        "calm": True,
    }
    assert "confide_answer" not in script.tasks()
    world.settings({"botMemoryModel": MEMORY_MODEL}, world.other)
    assert world.confide(world.olga, chat, turn_id, "y").json()["calm"] is False
    # Olga's organization's executions are hers (the first confide's skipped for want of a
    # model, the second's waiting); the home organization sees none of them.
    runs = world.executions(world.olga)
    assert sorted((e["chatId"], e["status"]) for e in runs) == [
        (chat["id"], "skipped"),
        (chat["id"], "waiting"),
    ]
    assert world.executions(world.ana) == []


def test_a_completed_turn_is_learned_without_the_items_of_another_open_turn(
    world: World, script: Script
) -> None:
    script.answers["learning_changes"] = fact_from_person

    def say(turn_id: str, text: str) -> None:
        added = world.api.client.post(
            f"/v1/chats/{chat['id']}/turns/{turn_id}/items",
            json={"items": [{"role": "assistant", "content": text}]},
            headers=world.ana.headers,
        )
        assert added.status_code == 200, added.text

    chat = world.chat(world.ana)
    first = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    say(first, "Your train is noted.")
    second = turn(world.api, world.ana, chat["id"], "My sister visits in May.")["turn"]["id"]
    say(first, "Late words of the first turn.")  # after the second turn's input
    world.confide(world.ana, chat, first, "x")
    world.confide(world.ana, chat, second, "y")
    world.complete(world.ana, chat, first)
    [learned] = [c for c in script.calls if c.task == "learning_changes"]
    assert "I take the 8:10 train." in learned.user
    assert "Your train is noted." in learned.user
    # The second turn is still open: its words are passed over, the first turn's later
    # words are read with the rest of it.
    assert "My sister visits in May." not in learned.user
    assert "Late words of the first turn." in learned.user
    world.complete(world.ana, chat, second)
    later = [c for c in script.calls if c.task == "learning_changes"][-1]
    assert "My sister visits in May." in later.user
    assert "I take the 8:10 train." not in later.user  # learned once
    assert [e["status"] for e in world.executions(world.ana)] == ["succeeded", "succeeded"]


def test_a_confide_over_its_bounds_is_a_400_in_characters_and_a_413_in_bytes(
    world: World, script: Script
) -> None:
    """As every item's text (docs/adr/0018-schema-limits-are-400s.md): the schema's character
    bound is a 400 naming `text`; within it, over the bytes as UTF-8, a 413."""
    chat = world.chat(world.ana)
    turn_id = turn(world.api, world.ana, chat["id"], "Hello.")["turn"]["id"]
    assert error(world.confide(world.ana, chat, turn_id, "x" * 32_769)) == (
        400,
        "ValidationError",
        ["text"],
    )
    assert error(world.confide(world.ana, chat, turn_id, "é" * 16_385))[:2] == (413, "TooLarge")
    assert "confide_answer" not in script.tasks()
