"""Every learning run that ends without applying says why, in words a person understands, on
every execution list: the bot's, a session's, an agent's and a thread's. Notes are fixed
sentences, never the words of an item.

Bot runs run inline (`InlineWorkflow`: the real LearningService, the bot pool, DynamoDB and
KMS on moto); session, agent and thread runs are held (`HeldWorkflow`) so that a setting can change
between a run's start and its LoadEvidence, as it may while a run waits for its worker.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from agent_memory.domain import agent_memory as agent_rules
from agent_memory.domain import learning_notes as notes
from agent_memory.domain.memory_bot import BOT_MEMORY_OFF, NO_MODEL, Price
from agent_memory.ports import ModelFailure, Usage
from tests.conftest import Api
from tests.support.bots import (
    MEMORY_MODEL,
    Script,
    World,
    fact_from_person,
    patch_settings,
    script,
    services,
    turn,
    world,
)
from tests.support.held_workflow import HeldRun, HeldWorkflow
from tests.support.sessions import Client
from tests.support.threads import World as ThreadWorld
from tests.support.threads import agent_of, assistant, user
from tests.support.workflow import wired_services

__all__ = ["script", "services", "world"]  # the fixtures this module uses

SAID = "I take the 8:10 train."


def _confide(world: World, chat: dict[str, Any], text: str = SAID) -> str:
    turn_id = str(turn(world.api, world.ana, chat["id"], text)["turn"]["id"])
    answer = world.confide(world.ana, chat, turn_id, "I was unsure.")
    assert answer.status_code == 200, answer.text
    return turn_id


def _no_content(run: dict[str, Any]) -> None:
    assert SAID not in str(run)
    assert "unsure" not in str(run)


# --- the bot's learning ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "note"),
    [({"botMemoryModel": None}, NO_MODEL), ({"botMemory": False}, BOT_MEMORY_OFF)],
)
def test_a_confide_that_cannot_teach_is_a_skipped_run_saying_why(
    world: World, script: Script, setting: dict[str, Any], note: str
) -> None:
    world.settings(setting)
    chat = world.chat(world.ana)
    turn_id = _confide(world, chat)
    _confide_again = world.confide(world.ana, chat, turn_id, "Still unsure.")
    assert _confide_again.status_code == 200
    world.complete(world.ana, chat, turn_id)
    # One run for the Turn, however often it confides: skipped, with why, naming its Turn.
    [run] = world.executions(world.ana)
    assert (run["status"], run["note"], run["chatId"], run["turnId"]) == (
        "skipped",
        note,
        chat["id"],
        turn_id,
    )
    assert run["error"] is None
    assert run["applied"] == []
    _no_content(run)
    assert "learning_changes" not in script.tasks()
    assert world.memory(world.ana) == []


def test_a_model_configured_later_still_learns_the_turn(world: World, script: Script) -> None:
    script.answers["learning_changes"] = fact_from_person
    world.settings({"botMemoryModel": None})
    chat = world.chat(world.ana)
    turn_id = _confide(world, chat)
    world.settings({"botMemoryModel": MEMORY_MODEL})
    assert world.confide(world.ana, chat, turn_id, "Now I know.").status_code == 200
    world.complete(world.ana, chat, turn_id)
    runs = sorted((run["status"], run["turnId"]) for run in world.executions(world.ana))
    assert runs == [("skipped", turn_id), ("succeeded", turn_id)]
    assert len(world.memory(world.ana)) == 1


@pytest.mark.parametrize(
    ("setting", "note"),
    [({"botMemoryModel": None}, NO_MODEL), ({"botMemory": False}, BOT_MEMORY_OFF)],
)
def test_a_run_whose_setting_changed_before_it_began_says_why(
    world: World, script: Script, setting: dict[str, Any], note: str
) -> None:
    chat = world.chat(world.ana)
    turn_id = _confide(world, chat)
    world.settings(setting)  # after the confide saved its run, before the Turn completes
    world.complete(world.ana, chat, turn_id)
    [run] = world.executions(world.ana)
    assert (run["status"], run["note"], run["turnId"]) == ("skipped", note, turn_id)
    assert "learning_changes" not in script.tasks()


def test_a_spent_budget_says_until_when(world: World, script: Script, services: Any) -> None:
    script.answers["learning_changes"] = fact_from_person
    services.memory_bot.calls.prices = {MEMORY_MODEL: Price(1_000_000, 1_000_000)}
    script.usage = Usage(input_tokens=10, output_tokens=0)
    body = {"expected": 0, "budget": {"period": "day", "limitMicros": 10}}
    assert patch_settings(world, world.ana, body).status_code == 200
    chat = world.chat(world.ana)
    turn_id = _confide(world, chat)  # its answer spends the whole budget
    world.complete(world.ana, chat, turn_id)
    [run] = world.executions(world.ana)
    assert run["status"] == "skipped"
    found = re.fullmatch(
        r"the memory bot's budget for this day is spent; learning waits until "
        r"(\d{4}-\d{2}-\d{2}) \(UTC\)",
        run["note"],
    )
    assert found is not None, run["note"]


def test_a_failed_run_gives_its_kind_its_message_and_what_happens_next(
    world: World, script: Script
) -> None:
    script.answers["learning_changes"] = ModelFailure("bad_request", "refused", retryable=False)
    chat = world.chat(world.ana)
    turn_id = _confide(world, chat)
    world.complete(world.ana, chat, turn_id)
    [run] = world.executions(world.ana)
    assert run["status"] == "failed"
    assert run["error"]["type"] == "ModelUnavailable"
    assert run["error"]["message"].startswith("CallModel: ")
    assert run["note"] == notes.failure_note("ModelUnavailable")
    assert "reads this evidence again" in run["note"]


# --- sessions' and agents' learning ---------------------------------------------------------


@pytest.fixture
def held() -> HeldWorkflow:
    return HeldWorkflow()


@pytest.fixture
def session_services(settings: Any, adapters: Any, held: HeldWorkflow) -> Any:
    return wired_services(settings, adapters, workflow=held)


@pytest.fixture
def people(session_services: Any) -> Any:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    with TestClient(create_app(lambda: session_services), raise_server_exceptions=False) as c:
        api = Api(c)
        org = api.org()
        yield api, org, Client(api, api.user(org, user_id="ana"))


def _run_of(held: HeldWorkflow, kind: str) -> HeldRun:
    [run] = [r for r in held.started.values() if r.state["pool"]["kind"] == kind]
    return run


def _steps(held: HeldWorkflow, run: HeldRun) -> None:
    for step in ("LoadEvidence", "CallModel", "ApplyLearning"):
        held.step(run, step)


def test_a_session_run_after_generate_was_switched_off_says_so(
    people: Any, held: HeldWorkflow
) -> None:
    _api, _org, ana = people
    session = ana.session()["id"]
    assert ana.turn(session, "My budget is 1500 EUR.").json()["turn"]["learning"] == "started"
    assert ana.command(session, {"_tag": "Configure", "generate": False}).status_code == 200
    _steps(held, _run_of(held, "session"))
    answer = ana.get(f"/v1/sessions/{session}/learning")
    [run] = answer.json()["executions"]
    assert (run["status"], run["note"]) == ("skipped", notes.GENERATE_OFF)
    assert "1500" not in str(run)


def test_an_agent_run_after_its_helper_was_removed_says_so(people: Any, held: HeldWorkflow) -> None:
    api, org, ana = people
    patch = {"helperModel": "local/rules"}
    answer = api.client.patch(f"/v1/organizations/{org}/settings", json=patch, headers=api.admin)
    assert answer.status_code == 200, answer.text
    agent = ana.agent()
    session = ana.session(agent)["id"]
    assert ana.turn(session, "I like short answers.").json()["turn"]["agentLearning"] == "started"
    patch = {"helperModel": None}
    answer = api.client.patch(f"/v1/organizations/{org}/settings", json=patch, headers=api.admin)
    assert answer.status_code == 200, answer.text
    _steps(held, _run_of(held, "agent"))
    [run] = ana.get(f"/v1/agents/{agent}/learning").json()["executions"]
    assert (run["status"], run["note"], run["sessionId"]) == (
        "skipped",
        agent_rules.NO_HELPER,
        session,
    )


def test_a_session_run_with_nothing_unread_says_so(people: Any, held: HeldWorkflow) -> None:
    _api, _org, ana = people
    session = ana.session()["id"]
    ana.turn(session, "My budget is 1500 EUR.")
    ana.turn(session, "My hotel is the Ritz.")
    first, second = [r for r in held.started.values() if r.state["pool"]["kind"] == "session"]
    _steps(held, second)  # reads both turns' items
    _steps(held, first)  # nothing left through its turn
    runs = ana.get(f"/v1/sessions/{session}/learning").json()["executions"]
    assert sorted((r["status"], r.get("note")) for r in runs) == [
        ("skipped", notes.NOTHING_NEW),
        ("succeeded", None),
    ]


def test_a_thread_title_run_after_the_thread_was_titled_says_so(
    people: Any, held: HeldWorkflow
) -> None:
    api, org, _ana = people
    owner = api.user(org)
    threads = ThreadWorld(api, owner, owner, agent_of(api, owner, []))
    thread = threads.thread()
    for n in range(2):  # two saves with an answer: two title runs, held
        saved = threads.save(thread, user(f"Plan trip {n} to Lisbon."), assistant("Sure."))
        assert saved.status_code == 200, saved.text
    first, second = [r for r in held.started.values() if r.state["pool"]["kind"] == "thread-title"]
    _steps(held, first)
    _steps(held, second)
    runs = threads.get(f"/v1/threads/{thread}/learning").json()["executions"]
    assert sorted((r["status"], r.get("note")) for r in runs) == [
        ("skipped", notes.ALREADY_TITLED),
        ("succeeded", None),
    ]
