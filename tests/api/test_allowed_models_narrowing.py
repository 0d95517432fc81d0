"""An organization's `allowedModels` that narrows: no model named in its settings stays
outside it, and no run calls a model it no longer allows (ADR 0020)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.service.learning_runs import NoModel
from tests.conftest import Api
from tests.support.agents import remember, replying
from tests.support.held_workflow import HeldWorkflow
from tests.support.learning_doubles import ScriptedModel
from tests.support.sessions import Client
from tests.support.workflow import wired_services

HELPER = "openai/helper-x"
CHAT = "openai/gpt-x"
LOCAL = "local/rules"
BUDGET = "My budget is 1500 EUR."


@pytest.fixture
def models() -> dict[str, ScriptedModel]:
    return {
        name: ScriptedModel(name=name, script=replying(remember("budget", BUDGET, "fact", "i-01")))
        for name in (HELPER, CHAT, LOCAL)
    }


@pytest.fixture
def services(settings: Any, adapters: Any, models: dict[str, ScriptedModel]) -> Any:
    return wired_services(settings, adapters, models)


@pytest.fixture
def org(api: Api) -> str:
    return api.org()


@pytest.fixture
def ana(api: Api, org: str) -> Client:
    return Client(api, api.user(org, user_id="ana"))


def patch(api: Api, org: str, body: dict[str, Any]) -> Any:
    return api.client.patch(f"/v1/organizations/{org}/settings", json=body, headers=api.admin)


def current(api: Api, org: str) -> dict[str, Any]:
    answer = api.client.get(f"/v1/organizations/{org}/settings", headers=api.admin)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


@pytest.mark.parametrize("field", ["helperModel", "botMemoryModel"])
def test_narrowing_past_a_model_of_the_settings_is_a_400_at_that_field(
    api: Api, org: str, field: str
) -> None:
    assert patch(api, org, {field: HELPER}).status_code == 200
    before = current(api, org)

    answer = patch(api, org, {"allowedModels": ["local/*"], "autoProvisionUsers": True})

    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["_tag"], error["path"]) == ("ValidationError", [field])
    assert HELPER in error["message"]
    assert "allowedModels" in error["message"]
    assert current(api, org) == before


@pytest.mark.parametrize("field", ["helperModel", "botMemoryModel"])
def test_narrowing_with_an_allowed_model_or_a_reset_in_the_same_request_is_saved(
    api: Api, org: str, field: str
) -> None:
    assert patch(api, org, {field: HELPER}).status_code == 200

    assert patch(api, org, {"allowedModels": ["local/*"], field: LOCAL}).status_code == 200
    assert current(api, org)[field] == LOCAL
    assert patch(api, org, {"allowedModels": None, field: HELPER}).status_code == 200
    assert patch(api, org, {"allowedModels": ["local/*"], field: None}).status_code == 200
    assert current(api, org)[field] is None
    assert current(api, org)["allowedModels"] == ["local/*"]


def test_a_session_model_the_organization_no_longer_allows_is_never_called(
    api: Api, org: str, ana: Client, models: dict[str, ScriptedModel]
) -> None:
    assert patch(api, org, {"helperModel": HELPER}).status_code == 200
    agent = ana.agent()
    session = ana.session(agent, model=CHAT)["id"]
    narrowing = {"allowedModels": ["local/*"], "helperModel": LOCAL}
    assert patch(api, org, narrowing).status_code == 200

    answer = ana.turn(session, BUDGET)

    assert answer.status_code == 200, answer.text
    assert models[CHAT].calls == []
    assert models[HELPER].calls == []
    [run] = ana.get(f"/v1/sessions/{session}/learning").json()["executions"]
    assert run["status"] == "skipped"
    assert run["note"] == (
        f"the model {CHAT} is not in the organization's allowedModels; it is not called"
    )
    assert ana.get(f"/v1/sessions/{session}/memory").json()["entries"] == {}
    assert ana.view(session)["model"] == CHAT
    # The items stay unread: once the organization allows the model again, they teach.
    assert patch(api, org, {"allowedModels": None}).status_code == 200
    assert ana.turn(session, "thanks").status_code == 200
    [request] = models[CHAT].calls
    assert [item.id for item in request.input.items] == ["i-01", "i-02"]


def test_a_helper_the_organization_no_longer_allows_is_never_called(
    api: Api, services: Any, org: str, ana: Client, models: dict[str, ScriptedModel]
) -> None:
    agent = ana.agent()
    session = ana.session(agent, model=None)["id"]
    # Settings that no PATCH accepts, as a write racing the check could leave them.
    stored = services.org_settings.repo.get_org(org)
    overrides = {"helperModel": HELPER, "allowedModels": ["local/*"]}
    services.org_settings.repo.save_settings(stored, overrides)

    turn = ana.turn(session, BUDGET).json()["turn"]

    assert turn["agentLearning"] == "skipped"
    assert models[HELPER].calls == []
    [run] = ana.get(f"/v1/agents/{agent}/learning").json()["executions"]
    assert run["note"] == (
        f"the model {HELPER} is not in the organization's allowedModels; it is not called"
    )
    assert ana.get(f"/v1/agents/{agent}/memory").json()["entries"] == {}


def test_a_run_that_began_before_the_narrowing_never_calls_its_model(
    settings: Any, adapters: Any, models: dict[str, ScriptedModel]
) -> None:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    held = HeldWorkflow()
    built = wired_services(settings, adapters, models, workflow=held)
    with TestClient(create_app(lambda: built), raise_server_exceptions=False) as client:
        api = Api(client)
        org = api.org()
        ana = Client(api, api.user(org, user_id="ana"))
        session = ana.session(model=CHAT)["id"]
        assert ana.turn(session, BUDGET).json()["turn"]["learning"] == "started"
        [run] = [r for r in held.started.values() if r.state["pool"]["kind"] == "session"]
        held.step(run, "LoadEvidence")
        assert patch(api, org, {"allowedModels": ["local/*"]}).status_code == 200

        with pytest.raises(NoModel, match="not in the organization's allowedModels"):
            held.step(run, "CallModel")

        assert models[CHAT].calls == []
        assert ana.get(f"/v1/sessions/{session}/memory").json()["entries"] == {}
