"""The memory Bot's learning through the real state machine on the embedded AWS: a confide
saves an execution that waits for its turn, the turn's complete releases it, the bot pool
(registered by bootstrap) runs LoadEvidence -> CallModel -> ApplyLearning, and the memory
change, the read position and the execution's end commit once, over HTTP end to end.
"""

from __future__ import annotations

from typing import Any

from infra.local import aws as local_aws_module
from tests.support.bot_learning import Bot, bot, script, wf
from tests.support.bots import Script
from tests.support.state_machine import Workflow, crash_after

__all__ = ["bot", "script", "wf"]  # the fixtures this module uses


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
