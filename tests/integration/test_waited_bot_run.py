"""A confide's learning run begins on its evidence row, through the real state
machine on the embedded AWS and the HTTP API: the Bot's executions show it `running` while
its model call is slow and `succeeded` after, with the items it read; a failed model call is
recorded as failed and the next turn reads the same words again.
"""

from __future__ import annotations

from typing import Any

from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.ports import ModelFailure
from tests.support.bot_learning import Bot, bot, script, wf
from tests.support.bots import Script, fact_from_person
from tests.support.state_machine import Workflow

__all__ = ["bot", "script", "wf"]  # the fixtures this module uses


def test_a_waited_bot_run_shows_running_during_a_slow_model_call_and_succeeded_after(
    wf: Workflow, bot: Bot, script: Script
) -> None:
    seen: list[dict[str, Any]] = []

    def slow(request: ModelRequest) -> str:
        seen.extend(bot.executions())  # a user looking while the model works
        return fact_from_person(request)

    script.answers["learning_changes"] = slow
    turn_id = bot.said(bot.ana, "I take the 8:10 train.")
    bot.confide(turn_id, "I was unsure about the time.")
    bot.complete(turn_id)
    [described] = wf.wait_all()
    assert described["status"] == "SUCCEEDED"

    [during] = seen
    assert (during["status"], during["turnId"], during["endedAt"]) == ("running", turn_id, None)
    assert during["itemIds"]
    [done] = bot.executions()
    assert (done["status"], done["itemIds"], done["model"]) == (
        "succeeded",
        during["itemIds"],
        during["model"],
    )
    assert [a["op"] for a in done["applied"]] == ["fact"]


def test_a_failed_model_call_of_a_waited_run_is_recorded_and_the_position_stays(
    wf: Workflow, bot: Bot, script: Script
) -> None:
    script.answers["learning_changes"] = ModelFailure("bad_request", "no", retryable=False)
    first = bot.said(bot.ana, "I take the 8:10 train.")
    bot.confide(first, "x")
    bot.complete(first)
    wf.wait_all()
    [failed] = bot.executions()
    assert failed["status"] == "failed"
    assert failed["error"]["message"].startswith("CallModel: ")
    assert failed["itemIds"]  # what it read, kept on its row
    assert bot.memory() == []

    script.answers["learning_changes"] = fact_from_person
    second = bot.said(bot.ana, "And I cycle home.")
    bot.confide(second, "y")
    bot.complete(second)
    wf.wait_all()
    newest = bot.executions()[0]
    assert newest["status"] == "succeeded", newest
    learned = [c for c in script.calls if c.task == "learning_changes"]
    # The read position had not moved: the second run read the first turn's words again.
    assert "I take the 8:10 train." in learned[-1].user
    assert "And I cycle home." in learned[-1].user
