"""Input enrichment at turn start (seed 002, "How the Bot uses memory"; API.md): the memory
Bot rewrites a person's input with entries every reader of the chat may see, within 15 s;
the history keeps the person's words, and the chat's owner reads what was rewritten.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.service import memory_bot_calls
from tests.conftest import User
from tests.support.bots import Script, World, error, make_channel, script, services, turn, world
from tests.support.enrichment import (
    REWRITTEN,
    enrichment_calls,
    remember,
    rewrite_with_all,
    shown_entries,
)

__all__ = ["script", "services", "world"]  # the fixtures this module uses


def items(world: World, user: User, chat: dict[str, Any]) -> list[str]:
    answer = world.get(user, f"/v1/chats/{chat['id']}/items")
    return [item["content"] for item in answer.json()["items"]]


def test_an_input_is_rewritten_with_entries_that_help(world: World, script: Script) -> None:
    entry = remember(world, world.ana, "I take the 8:10 train to Berlin.")
    script.answers["enrichment"] = rewrite_with_all
    chat = world.chat(world.ana)
    started = turn(world.api, world.ana, chat["id"], "Book my train for Friday.")
    assert (started["input"], started["enriched"]) == (REWRITTEN, True)
    [call] = enrichment_calls(script)
    assert [e["id"] for e in shown_entries(call)] == [entry]
    assert "Book my train for Friday." in call.user
    # The history keeps the person's words.
    assert items(world, world.ana, chat) == ["Book my train for Friday."]
    listed = world.get(world.ana, f"/v1/chats/{chat['id']}/enrichments")
    assert listed.status_code == 200, listed.text
    [enriched] = listed.json()["enrichments"]
    assert enriched["turnId"] == started["turn"]["id"]
    assert (enriched["input"], enriched["original"]) == (REWRITTEN, "Book my train for Friday.")
    assert enriched["entryIds"] == [entry]
    assert isinstance(enriched["at"], int)
    assert error(world.get(world.olga, f"/v1/chats/{chat['id']}/enrichments"))[0] == 404


def test_no_visible_entry_means_no_model_call(world: World, script: Script) -> None:
    script.answers["enrichment"] = rewrite_with_all
    chat = world.chat(world.ana)
    started = turn(world.api, world.ana, chat["id"], "Book my train.")
    assert (started["input"], started["enriched"]) == ("Book my train.", False)
    # Ben's own entry is for Ben only: Ana's chat has no entry its reader may see.
    remember(world, world.ben, "I cycle to work.")
    again = turn(world.api, world.ana, chat["id"], "Book my train.")
    assert again["enriched"] is False
    assert enrichment_calls(script) == []


def test_a_group_chat_sees_no_private_entry_and_only_its_owner_lists(
    world: World, script: Script
) -> None:
    remember(world, world.ana, "I take the 8:10 train.")
    script.answers["enrichment"] = rewrite_with_all
    channel = make_channel(world.api, world.ana, world.ben)
    chat = world.chat(world.ana, channelId=channel["id"])
    started = turn(world.api, world.ben, chat["id"], "Book Ana's train.")
    # Ana's pinned entry is hers alone: the group's answer may not use it.
    assert started["enriched"] is False
    assert enrichment_calls(script) == []
    assert error(world.get(world.ben, f"/v1/chats/{chat['id']}/enrichments"))[:2] == (
        403,
        "Forbidden",
    )


def test_notices_review_chats_and_bot_memory_off_are_not_enriched(
    world: World, script: Script
) -> None:
    remember(world, world.ana, "I take the 8:10 train.")
    script.answers["enrichment"] = rewrite_with_all
    chat = world.chat(world.ana)
    notice = turn(world.api, world.ana, chat["id"], "The train is late.", notice=True)
    assert (notice["input"], notice["enriched"]) == ("The train is late.", False)
    review = world.chat(world.ana, kind="review")
    assert turn(world.api, world.ana, review["id"], "Book my train.")["enriched"] is False
    assert enrichment_calls(script) == []
    world.settings({"botMemory": False})
    assert turn(world.api, world.ana, chat["id"], "Book my train.")["enriched"] is False
    world.settings({"botMemory": True, "botMemoryModel": None})
    assert turn(world.api, world.ana, chat["id"], "Book my train.")["enriched"] is False
    assert enrichment_calls(script) == []
    assert world.get(world.ana, f"/v1/chats/{chat['id']}/enrichments").json() == {"enrichments": []}


def test_an_unseen_entry_a_null_answer_or_a_slow_model_leave_the_input(
    world: World, script: Script, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(world, world.ana, "I take the 8:10 train.")
    hidden = remember(world, world.ben, "Ben's door code is private.")
    chat = world.chat(world.ana)
    # The model names an entry the chat's readers may not see: the rewrite is void.
    script.answers["enrichment"] = {"input": REWRITTEN, "used": [hidden]}
    assert turn(world.api, world.ana, chat["id"], "Book my train.")["enriched"] is False
    script.answers["enrichment"] = {"input": None, "used": []}
    assert turn(world.api, world.ana, chat["id"], "Book my train.")["enriched"] is False
    script.answers["enrichment"] = rewrite_with_all
    monkeypatch.setattr(memory_bot_calls, "WINDOW_S", 0.3)
    script.delay_s = 2.0
    began = time.monotonic()
    slow = turn(world.api, world.ana, chat["id"], "Book my train.")
    assert (slow["input"], slow["enriched"]) == ("Book my train.", False)
    assert time.monotonic() - began < 1.5
    assert len(enrichment_calls(script)) == 3
    assert world.get(world.ana, f"/v1/chats/{chat['id']}/enrichments").json() == {"enrichments": []}


def test_confessions_and_enrichments_are_sealed_at_rest(
    world: World, script: Script, local_aws: Any, services: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.support.call_log import logged_calls
    from tests.support.plaintext import all_text, scan_rows

    remember(world, world.ana, "My locker is number Quartz-4411.")
    script.answers["enrichment"] = lambda request: json.dumps(
        {
            "input": "Open locker Quartz-4411 (Heron-2207).",
            "used": [shown_entries(request)[0]["id"]],
        }
    )
    script.answers["confide_answer"] = {"answer": "Calm now, Falcon-3190."}
    chat = world.chat(world.ana)
    started = turn(world.api, world.ana, chat["id"], "Open my locker, Heron-2207.")
    assert started["enriched"] is True
    confided = world.confide(world.ana, chat, started["turn"]["id"], "I fear Mango-5528.")
    assert confided.json()["answer"] == "Calm now, Falcon-3190."
    at_rest = "\n".join(all_text(item) for item in scan_rows(local_aws))
    for marker in ("Quartz-4411", "Heron-2207", "Falcon-3190", "Mango-5528"):
        assert marker not in at_rest
    # The owner reads them back in the clear.
    [confession] = world.get(world.ana, f"/v1/chats/{chat['id']}/confessions").json()["confessions"]
    assert confession["text"] == "I fear Mango-5528."
    # Both model calls are in the chat's encrypted call log, request and reply, and no
    # content reached the logs.
    calls = {c.task: c for c in logged_calls(services, chat["id"])}
    assert set(calls) == {"enrichment", "confide_answer"}
    assert "Heron-2207" in calls["enrichment"].request
    assert "Quartz-4411" in (calls["enrichment"].reply or "")
    assert "Mango-5528" in calls["confide_answer"].request
    assert "Falcon-3190" in (calls["confide_answer"].reply or "")
    assert {c.ended for c in calls.values()} == {"answered"}
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for marker in ("Quartz-4411", "Heron-2207", "Falcon-3190", "Mango-5528"):
        assert marker not in logged


def test_an_entry_forgotten_while_the_model_worked_voids_the_rewrite(
    world: World, script: Script, services: Any
) -> None:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    entry = remember(world, world.ana, "I take the 8:10 train to Berlin.")
    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as other:

        def forget_then_rewrite(request: ModelRequest) -> str:
            forgot = other.post(
                f"/v1/bots/{world.bot['id']}/memory",
                json={"command": {"_tag": "Forget", "id": entry}},
                headers=world.ana.headers,
            )
            assert forgot.status_code == 200, forgot.text
            return rewrite_with_all(request)

        script.answers["enrichment"] = forget_then_rewrite
        chat = world.chat(world.ana)
        started = turn(world.api, world.ana, chat["id"], "Book my train for Friday.")
    # The model used an entry that was retracted before the rewrite was returned.
    assert [e["id"] for e in shown_entries(enrichment_calls(script)[0])] == [entry]
    assert (started["input"], started["enriched"]) == ("Book my train for Friday.", False)
    assert world.get(world.ana, f"/v1/chats/{chat['id']}/enrichments").json() == {"enrichments": []}


def test_deleting_a_chats_history_takes_its_enrichments_and_their_calls(
    world: World, script: Script, services: Any
) -> None:
    from tests.support.call_log import logged_calls

    remember(world, world.ana, "I take the 8:10 train to Berlin.")
    script.answers["enrichment"] = rewrite_with_all
    script.answers["confide_answer"] = {"answer": "Calm now."}
    chat = world.chat(world.ana)
    started = turn(world.api, world.ana, chat["id"], "Book my train for Friday.")
    assert started["enriched"] is True
    world.confide(world.ana, chat, started["turn"]["id"], "I booked the wrong day.")
    assert logged_calls(services, chat["id"])
    deleted = world.api.client.delete(f"/v1/chats/{chat['id']}/items", headers=world.ana.headers)
    assert deleted.status_code == 204
    # The enrichment and its call held the person's words: neither outlives the history.
    listed = world.get(world.ana, f"/v1/chats/{chat['id']}/enrichments")
    assert listed.json() == {"enrichments": []}
    assert [c.task for c in logged_calls(services, chat["id"])] == ["confide_answer"]
    # The confession is the Bot's words: it stays (API.md), with its call.
    confessions = world.get(world.ana, f"/v1/chats/{chat['id']}/confessions").json()
    assert [c["text"] for c in confessions["confessions"]] == ["I booked the wrong day."]
    assert items(world, world.ana, chat) == []
    # The memory learned from the chat stays until its tag is purged.
    memory = world.get(world.ana, f"/v1/bots/{chat['botId']}/memory").json()["entries"]
    assert [e["content"] for e in memory] == ["I take the 8:10 train to Berlin."]
