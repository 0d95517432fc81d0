"""No Turn stops another Turn's learning (seed 002, "How the Bot learns"; docs/adr/0024,
0025): a confided Turn's run reads the unread items of the Turns that ended through its own
Turn, passing over the items of Turns still open, which a later run (their own or another)
reads once they end; a Turn not completed within 24 hours of its last item is closed as
abandoned and its items become readable. Every item is read by one run only.

Through HTTP; the learning runs are held (`HeldWorkflow`) and run to their end by `settle`,
with the real LearningService, bot pool and DynamoDB on moto.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from agent_memory.domain.bots import ABANDONED_AFTER_MS
from agent_memory.domain.tasks.base import ModelRequest
from tests.conftest import Api, User
from tests.support.bots import (
    Script,
    World,
    error,
    make_channel,
    turn,
)
from tests.support.clock import MovableClock, clock
from tests.support.held_bot import script, services, shown_items, workflow
from tests.support.held_workflow import HeldWorkflow

__all__ = ["clock", "script", "services", "workflow"]  # the fixtures this module uses


def one_fact_from_everyone(request: ModelRequest) -> str:
    """One fact citing every person's item the request shows."""
    people = [i["id"] for i in shown_items(request) if i["role"] == "user"]
    change = {"op": "fact", "content": "The team meets on Mondays.", "topics": ["team"]}
    return json.dumps({"changes": [change | {"sources": people}] if people else []})


class Chats(World):
    """World's people and Bot, with runs held until `settle` and a third person."""

    script: Script  # its memory Bot's model, always given

    def __init__(self, api: Api, workflow: HeldWorkflow, script: Script) -> None:
        super().__init__(api, script=script)
        self.workflow = workflow
        self.carl = api.user(self.org)
        self.settled: set[str] = set()

    def start(self, user: User, chat: dict[str, Any], text: str) -> str:
        return str(turn(self.api, user, chat["id"], text)["turn"]["id"])

    def say(self, user: User, chat: dict[str, Any], turn_id: str, text: str) -> None:
        added = self.api.client.post(
            f"/v1/chats/{chat['id']}/turns/{turn_id}/items",
            json={"items": [{"role": "assistant", "content": text}]},
            headers=user.headers,
        )
        assert added.status_code == 200, added.text

    def confided(self, user: User, chat: dict[str, Any], turn_id: str) -> list[list[str]]:
        """Confide, complete, and run what that started: the contents each run read."""
        assert self.confide(user, chat, turn_id, "I was unsure.").status_code == 200
        self.complete(user, chat, turn_id)
        return self.settle()

    def settle(self) -> list[list[str]]:
        """Run every held run to its end; the contents of the items each one showed."""
        shown: list[list[str]] = []
        for name in list(self.workflow.started):
            if name in self.settled:
                continue
            self.settled.add(name)
            before = len(self.script.calls)
            self.workflow.run(name)
            asked = [c for c in self.script.calls[before:] if c.task == "learning_changes"]
            shown += [[i["content"] for i in shown_items(c)] for c in asked]
        return shown

    def turn_status(self, user: User, chat: dict[str, Any], turn_id: str) -> str:
        answer = self.get(user, f"/v1/chats/{chat['id']}/turns/{turn_id}")
        assert answer.status_code == 200, answer.text
        return str(answer.json()["turn"]["status"])

    def sources(self, user: User) -> Counter[str]:
        return Counter(s["item"] for e in self.memory(user) for s in e.get("sources", []))


@pytest.fixture
def chats(api: Api, workflow: HeldWorkflow, script: Script) -> Chats:
    return Chats(api, workflow, script)


def test_an_open_turn_stops_no_later_learning_in_its_chat(chats: Chats) -> None:
    chat = chats.chat(chats.ana)
    chats.start(chats.ana, chat, "I left my keys somewhere.")  # a client that crashed
    second = chats.start(chats.ana, chat, "I take the 8:10 train.")
    assert chats.confided(chats.ana, chat, second) == [["I take the 8:10 train."]]
    [run] = chats.executions(chats.ana)
    assert run["status"] == "succeeded", run
    assert [e["content"] for e in chats.memory(chats.ana)] == ["Noted: I take the 8:10 train."]
    # And every later confided turn of the chat too.
    third = chats.start(chats.ana, chat, "I cycle home.")
    assert chats.confided(chats.ana, chat, third) == [["I cycle home."]]
    assert [e["status"] for e in chats.executions(chats.ana)] == ["succeeded", "succeeded"]


def test_a_group_fact_of_two_people_is_learned_and_stays_for_the_other_after_a_forget(
    chats: Chats, script: Script
) -> None:
    script.answers["learning_changes"] = one_fact_from_everyone
    channel = make_channel(chats.api, chats.ana, chats.ben, chats.carl)
    chat = chats.chat(chats.ana, channelId=channel["id"])
    chats.start(chats.carl, chat, "I am still typing")  # stays open
    bens = chats.start(chats.ben, chat, "We meet on Mondays.")
    chats.complete(chats.ben, chat, bens)
    anas = chats.start(chats.ana, chat, "Yes, Mondays at nine.")
    assert chats.confided(chats.ana, chat, anas) == [
        ["We meet on Mondays.", "Yes, Mondays at nine."]
    ]
    [fact] = chats.memory(chats.ana)
    assert {f"from:{chats.ben.id}", f"from:{chats.ana.id}"} <= set(fact["tags"])
    assert f"for:channel:{channel['id']}" in fact["tags"]
    assert len(fact["sources"]) == 2
    # Ben takes back his part: the fact stays for Ana (and the group), no longer for Ben.
    forget = chats.api.client.post(
        f"/v1/bots/{chats.bot['id']}/memory",
        json={"command": {"_tag": "Forget", "id": fact["id"]}},
        headers=chats.ben.headers,
    )
    assert forget.status_code == 200, forget.text
    assert chats.memory(chats.ben) == []
    [kept] = chats.memory(chats.ana)
    assert kept["status"] == "active"
    assert f"from:{chats.ben.id}" not in kept["tags"]
    assert f"from:{chats.ana.id}" in kept["tags"]


def test_interleaved_turns_of_several_people_are_each_read_once(chats: Chats) -> None:
    channel = make_channel(chats.api, chats.ana, chats.ben, chats.carl)
    chat = chats.chat(chats.ana, channelId=channel["id"])
    anas = chats.start(chats.ana, chat, "Ana: I plan the trip.")
    bens = chats.start(chats.ben, chat, "Ben: I book the hotel.")
    chats.say(chats.ana, chat, anas, "Bot to Ana: noted.")
    carls = chats.start(chats.carl, chat, "Carl: I rent the car.")
    chats.say(chats.ben, chat, bens, "Bot to Ben: booked.")
    # Ben's run reads Ben's turn only: Ana's and Carl's are still open between its items.
    assert chats.confided(chats.ben, chat, bens) == [
        ["Ben: I book the hotel.", "Bot to Ben: booked."]
    ]
    # Ana's run comes back for her items, passed over before.
    assert chats.confided(chats.ana, chat, anas) == [
        ["Ana: I plan the trip.", "Bot to Ana: noted."]
    ]
    # Carl completes without confiding: no run of his own, a later run reads his turn.
    chats.complete(chats.carl, chat, carls)
    assert chats.settle() == []
    later = chats.start(chats.ana, chat, "Ana: we leave Friday.")
    assert chats.confided(chats.ana, chat, later) == [
        ["Carl: I rent the car.", "Ana: we leave Friday."]
    ]
    counted = chats.sources(chats.ana)
    assert set(counted.values()) == {1}, counted  # no item is a source of two facts
    assert len(counted) == 4
    assert {e["status"] for e in chats.executions(chats.ana)} == {"succeeded"}


def test_a_turn_completed_after_the_one_behind_it_is_learned_by_its_own_run(
    chats: Chats,
) -> None:
    chat = chats.chat(chats.ana)
    first = chats.start(chats.ana, chat, "My sister visits in May.")
    second = chats.start(chats.ana, chat, "I take the 8:10 train.")
    assert chats.confided(chats.ana, chat, second) == [["I take the 8:10 train."]]
    assert chats.confided(chats.ana, chat, first) == [["My sister visits in May."]]
    # And one completed without a confide is read by the next run, with that run's turn.
    third = chats.start(chats.ana, chat, "I moved to Berlin.")
    fourth = chats.start(chats.ana, chat, "I like tea.")
    assert chats.confided(chats.ana, chat, fourth) == [["I like tea."]]
    chats.complete(chats.ana, chat, third)
    fifth = chats.start(chats.ana, chat, "I work at night.")
    assert chats.confided(chats.ana, chat, fifth) == [["I moved to Berlin.", "I work at night."]]
    assert set(chats.sources(chats.ana).values()) == {1}
    assert len(chats.sources(chats.ana)) == 5


def test_a_turn_never_completed_is_closed_as_abandoned_and_then_read(
    chats: Chats, clock: MovableClock
) -> None:
    chat = chats.chat(chats.ana)
    crashed = chats.start(chats.ana, chat, "I am allergic to peanuts.")
    assert chats.confide(chats.ana, chat, crashed, "I was unsure.").status_code == 200
    assert chats.turn_status(chats.ana, chat, crashed) == "open"
    second = chats.start(chats.ana, chat, "I take the 8:10 train.")
    assert chats.confided(chats.ana, chat, second) == [["I take the 8:10 train."]]
    clock.offset_ms += ABANDONED_AFTER_MS - 60_000
    assert chats.turn_status(chats.ana, chat, crashed) == "open"
    clock.offset_ms += 60_000
    assert chats.turn_status(chats.ana, chat, crashed) == "abandoned"
    # Closed: it takes no more items, no confide, no completion.
    for path, body in (
        ("items", {"items": [{"role": "assistant", "content": "late"}]}),
        ("confide", {"text": "late"}),
        ("complete", {}),
    ):
        answer = chats.api.client.post(
            f"/v1/chats/{chat['id']}/turns/{crashed}/{path}", json=body, headers=chats.ana.headers
        )
        assert error(answer)[:2] == (409, "ChatConflict"), (path, answer.text)
        assert "abandoned" in answer.json()["error"]["message"]
    # Its own learning never starts, and says why.
    [wait] = [e for e in chats.executions(chats.ana) if e["turnId"] == crashed]
    assert wait["status"] == "skipped"
    assert "abandoned" in wait["note"]
    # Its items are read by the chat's next run, once.
    third = chats.start(chats.ana, chat, "I cycle home.")
    assert chats.confided(chats.ana, chat, third) == [
        ["I am allergic to peanuts.", "I cycle home."]
    ]
    fourth = chats.start(chats.ana, chat, "I like tea.")
    assert chats.confided(chats.ana, chat, fourth) == [["I like tea."]]
    counted = chats.sources(chats.ana)
    assert set(counted.values()) == {1}, counted  # no item is a source of two facts
    assert len(counted) == 4
