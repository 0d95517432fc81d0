"""The memory Bot's learning through the real state machine on the embedded AWS: a confide
saves an execution that waits for its turn, the turn's complete releases it, the bot pool
(registered by bootstrap) runs LoadEvidence -> CallModel -> ApplyLearning, and the memory
change, the read position and the execution's end commit once, over HTTP end to end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from infra.local import aws as local_aws_module
from tests.conftest import Api, User
from tests.integration.learning_harness import Workflow, crash_after, workflow
from tests.support.bots import MEMORY_MODEL, Script, fact_from_person, make_bot, make_chat, turn


@pytest.fixture
def wf(local_aws: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workflow]:
    with workflow(local_aws, settings, monkeypatch, model=MEMORY_MODEL, notes=False) as flow:
        yield flow


@pytest.fixture
def script(wf: Workflow) -> Script:
    script = Script()
    script.answers["learning_changes"] = fact_from_person
    wf.model.script = script
    return script


class Bot:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.org = api.org()
        self.ana = api.user(self.org)
        answer = api.client.patch(
            f"/v1/organizations/{self.org}/settings",
            json={"botMemoryModel": MEMORY_MODEL},
            headers=api.admin,
        )
        assert answer.status_code == 200, answer.text
        self.bot = make_bot(api, self.ana)
        self.chat = make_chat(api, self.ana, self.bot["id"])

    def said(self, user: User, text: str) -> str:
        return str(turn(self.api, user, self.chat["id"], text)["turn"]["id"])

    def post(self, user: User, path: str, body: dict[str, Any]) -> Any:
        return self.api.client.post(path, json=body, headers=user.headers)

    def confide(self, turn_id: str, text: str) -> Any:
        path = f"/v1/chats/{self.chat['id']}/turns/{turn_id}/confide"
        return self.post(self.ana, path, {"text": text})

    def complete(self, turn_id: str) -> None:
        path = f"/v1/chats/{self.chat['id']}/turns/{turn_id}/complete"
        assert self.post(self.ana, path, {}).status_code == 200

    def executions(self) -> list[dict[str, Any]]:
        answer = self.api.client.get(
            f"/v1/bots/{self.bot['id']}/learning", headers=self.ana.headers
        )
        assert answer.status_code == 200, answer.text
        return list(answer.json()["executions"])

    def memory(self) -> list[dict[str, Any]]:
        answer = self.api.client.get(f"/v1/bots/{self.bot['id']}/memory", headers=self.ana.headers)
        return list(answer.json()["entries"])


@pytest.fixture
def bot(wf: Workflow) -> Iterator[Bot]:
    with TestClient(create_app(lambda: wf.services), raise_server_exceptions=False) as client:
        yield Bot(Api(client))


def started(wf: Workflow) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = wf.sfn.list_executions(stateMachineArn=wf.machine_arn)[
        "executions"
    ]
    return listed


def test_a_confide_learns_after_its_turn_completes(wf: Workflow, bot: Bot, script: Script) -> None:
    turn_id = bot.said(bot.ana, "I take the 8:10 train.")
    assert bot.confide(turn_id, "I was unsure about the time.").json()["calm"] is False
    [waiting] = bot.executions()
    assert (waiting["status"], waiting["turnId"]) == ("waiting", turn_id)
    assert started(wf) == []  # nothing runs before the turn completes
    assert "learning_changes" not in script.tasks()

    bot.complete(turn_id)
    [described] = wf.wait_all()
    assert described["status"] == "SUCCEEDED"
    assert wf.task_states(described["executionArn"]) == [
        "LoadEvidence",
        "CallModel",
        "ApplyLearning",
    ]
    [done] = bot.executions()
    assert (done["status"], done["chatId"], done["turnId"]) == (
        "succeeded",
        bot.chat["id"],
        turn_id,
    )
    assert [a["op"] for a in done["applied"]] == ["fact"]
    [entry] = bot.memory()
    assert entry["content"] == "Ana takes the 8:10 train."
    assert entry["sources"][0]["chat"] == bot.chat["id"]


def test_a_crash_after_the_model_answered_is_recovered_without_a_second_call(
    wf: Workflow, bot: Bot, script: Script
) -> None:
    local_aws_module.add_invoke_hook(crash_after("CallModelFunction"))
    turn_id = bot.said(bot.ana, "I take the 8:10 train.")
    bot.confide(turn_id, "x")
    bot.complete(turn_id)
    [described] = wf.wait_all()
    assert described["status"] == "SUCCEEDED"
    assert wf.task_states(described["executionArn"]).count("CallModel") == 2
    assert script.tasks().count("learning_changes") == 1
    assert len(bot.memory()) == 1
    assert bot.executions()[0]["status"] == "succeeded"


def test_a_crash_after_apply_applies_the_evidence_once(
    wf: Workflow, bot: Bot, script: Script
) -> None:
    local_aws_module.add_invoke_hook(crash_after("ApplyLearningFunction"))
    turn_id = bot.said(bot.ana, "I take the 8:10 train.")
    bot.confide(turn_id, "x")
    bot.complete(turn_id)
    [described] = wf.wait_all()
    assert described["status"] == "SUCCEEDED"
    assert wf.task_states(described["executionArn"]).count("ApplyLearning") == 2
    assert script.tasks().count("learning_changes") == 1
    assert len(bot.memory()) == 1
    assert bot.executions()[0]["status"] == "succeeded"


def test_a_turn_left_open_stops_no_later_learning(wf: Workflow, bot: Bot, script: Script) -> None:
    first = bot.said(bot.ana, "My sister visits in May.")  # left open for now
    bot.confide(first, "x")
    second = bot.said(bot.ana, "I take the 8:10 train.")
    bot.confide(second, "y")
    bot.complete(second)
    [described] = wf.wait_all()
    assert described["status"] == "SUCCEEDED"
    [learned] = [c for c in script.calls if c.task == "learning_changes"]
    assert "I take the 8:10 train." in learned.user
    assert "My sister visits in May." not in learned.user
    # The turn behind it completes later: its own run comes back for its item, once.
    bot.complete(first)
    assert [d["status"] for d in wf.wait_all()] == ["SUCCEEDED", "SUCCEEDED"]
    later = [c for c in script.calls if c.task == "learning_changes"][-1]
    assert "My sister visits in May." in later.user
    assert "I take the 8:10 train." not in later.user
    assert [e["status"] for e in bot.executions()] == ["succeeded", "succeeded"]
    assert len({s["item"] for e in bot.memory() for s in e["sources"]}) == 2
