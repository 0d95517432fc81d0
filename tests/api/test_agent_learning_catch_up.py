"""Agent learning reads what a Turn said while no helper model could run (ADR 0036).

A skip for lack of a helper model is a lack, not a choice: the Session's read mark stays, so
the first Turn that may teach reads those items too. A skip the organization or the Session
chose (`agentMemory` off, `generate` off, a review) passes over its items for good.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain import agent_memory as rules
from tests.conftest import Api
from tests.support.agents import remember, replying
from tests.support.learning_doubles import ScriptedModel
from tests.support.sessions import Client
from tests.support.workflow import wired_services

HELPER = "local/rules"
TESTS_FIRST = "Always run the tests before you report that work is done."


@pytest.fixture
def helper() -> ScriptedModel:
    return ScriptedModel(
        name=HELPER, script=replying(remember("tests-first", TESTS_FIRST, "procedure", "i-01"))
    )


@pytest.fixture
def services(settings: Any, adapters: Any, helper: ScriptedModel) -> Any:
    return wired_services(settings, adapters, {HELPER: helper})


@pytest.fixture
def org(api: Api) -> str:
    org_id = api.org()
    settings_patch(api, org_id, {"helperModel": None})
    return org_id


@pytest.fixture
def ana(api: Api, org: str) -> Client:
    return Client(api, api.user(org, user_id="ana"))


def settings_patch(api: Api, org: str, body: dict[str, Any]) -> None:
    answer = api.client.patch(f"/v1/organizations/{org}/settings", json=body, headers=api.admin)
    assert answer.status_code == 200, answer.text


def said(client: Client, session: str, text: str) -> dict[str, Any]:
    answer = client.turn(session, text)
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["turn"])


def entries(client: Client, agent: str) -> dict[str, Any]:
    answer = client.get(f"/v1/agents/{agent}/memory")
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["entries"])


def learning(client: Client, agent: str) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/agents/{agent}/learning")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["executions"])


def test_a_turn_said_without_a_helper_model_teaches_once_one_is_set(
    api: Api, org: str, ana: Client, helper: ScriptedModel
) -> None:
    agent = ana.agent()
    session = ana.session(agent, model=None)["id"]

    first = said(ana, session, TESTS_FIRST)
    assert first["agentLearning"] == "skipped"
    [skipped] = learning(ana, agent)
    assert (skipped["status"], skipped["itemIds"], skipped["note"]) == (
        "skipped",
        [],
        rules.NO_HELPER,
    )
    settings_patch(api, org, {"helperModel": HELPER})

    assert said(ana, session, "thanks")["agentLearning"] == "started"

    [request] = helper.calls
    assert [item.id for item in request.input.items] == ["i-01", "i-02"]
    assert entries(ana, agent)["tests-first"]["sources"] == [{"session": session, "item": "i-01"}]
    assert learning(ana, agent)[0]["itemIds"] == ["i-01", "i-02"]


@pytest.mark.parametrize("setup", ["agent-memory-off", "generate-off"])
def test_a_turn_said_while_learning_was_switched_off_never_teaches(
    api: Api, org: str, ana: Client, helper: ScriptedModel, setup: str
) -> None:
    settings_patch(api, org, {"helperModel": HELPER})
    agent = ana.agent()
    session = ana.session(agent, model=None)["id"]
    if setup == "agent-memory-off":
        settings_patch(api, org, {"agentMemory": False})
    else:
        assert ana.command(session, {"_tag": "Configure", "generate": False}).status_code == 200

    assert said(ana, session, TESTS_FIRST)["agentLearning"] == "skipped"
    if setup == "agent-memory-off":
        settings_patch(api, org, {"agentMemory": None})
    else:
        assert ana.command(session, {"_tag": "Configure", "generate": None}).status_code == 200

    assert said(ana, session, "thanks")["agentLearning"] == "started"

    [request] = helper.calls
    assert [item.id for item in request.input.items] == ["i-02"]
    assert entries(ana, agent) == {}
