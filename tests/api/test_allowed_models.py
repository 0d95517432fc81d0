"""ALLOWED_MODELS and an organization's `allowedModels` (API.md, "Local run" / Models and the
organization settings): a model outside them, wherever a model is named, is a 400 at that
field; an organization can only narrow the deployment's list."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, User

DEPLOYMENT = "local/*, openai/gpt-4o-mini, bedrock/*"


@pytest.fixture
def settings(settings: Any) -> Any:
    # An OpenAI-compatible endpoint is configured: every provider named here can run.
    endpoint = "http://127.0.0.1:9/v1"
    return settings.model_copy(update={"allowed_models": DEPLOYMENT, "openai_base_url": endpoint})


@pytest.fixture
def admin(api: Api) -> tuple[Api, User]:
    return api, api.user(api.org(), role="admin", user_id="ana")


def _post(caller: tuple[Api, User], url: str, body: Any) -> Any:
    api, user = caller
    return api.client.post(url, json=body, headers=user.headers)


def _patch(caller: tuple[Api, User], body: Any) -> Any:
    api, user = caller
    return api.client.patch(
        f"/v1/organizations/{user.org_id}/settings", json=body, headers=user.headers
    )


def _agent(caller: tuple[Api, User]) -> str:
    answer = _post(caller, "/v1/agents", {"name": "Trip planner"})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["agent"]["id"])


def _error(answer: Any) -> tuple[int, str, list[Any]]:
    body = answer.json()["error"]
    return answer.status_code, body["_tag"], body["path"]


@pytest.mark.parametrize(
    "model",
    ["openai/gpt-4o", "anthropic/claude-haiku-4-5", "nope/model", "bedrock/../../etc", "local"],
)
def test_a_session_with_a_model_the_deployment_does_not_allow_is_a_400(
    admin: tuple[Api, User], model: str
) -> None:
    answer = _post(admin, "/v1/sessions", {"agentId": _agent(admin), "model": model})
    assert _error(answer) == (400, "ValidationError", ["model"])


def test_allowed_models_and_patterns_pass(admin: tuple[Api, User]) -> None:
    agent = _agent(admin)
    for model in ("local/rules", "openai/gpt-4o-mini", "bedrock/amazon.nova-lite-v1:0"):
        answer = _post(admin, "/v1/sessions", {"agentId": agent, "model": model})
        assert answer.status_code == 201, answer.text
        assert answer.json()["session"]["model"] == model


def test_a_turn_naming_a_model_outside_the_list_is_a_400_and_stores_nothing(
    admin: tuple[Api, User],
) -> None:
    session = _post(admin, "/v1/sessions", {"agentId": _agent(admin)}).json()["session"]
    body = {"model": "openai/gpt-4o", "items": [{"role": "user", "content": "Hi"}]}
    answer = _post(admin, f"/v1/sessions/{session['id']}/turns", body)
    assert _error(answer) == (400, "ValidationError", ["model"])
    api, user = admin
    after = api.client.get(f"/v1/sessions/{session['id']}", headers=user.headers)
    assert after.json()["session"]["head"] == session["head"]


def test_the_organization_narrows_the_deployments_list(admin: tuple[Api, User]) -> None:
    answer = _patch(admin, {"allowedModels": ["local/*", "openai/gpt-4o-mini"]})
    assert answer.status_code == 200, answer.text
    assert answer.json()["allowedModels"] == ["local/*", "openai/gpt-4o-mini"]

    # Allowed by the organization but not by the deployment: still a 400.
    assert _error(_patch(admin, {"helperModel": "openai/gpt-4o"})) == (
        400,
        "ValidationError",
        ["helperModel"],
    )
    # Allowed by the deployment but not by the organization.
    bedrock = "bedrock/amazon.nova-lite-v1:0"
    assert _error(_patch(admin, {"botMemoryModel": bedrock}))[2] == ["botMemoryModel"]
    session = _post(admin, "/v1/sessions", {"agentId": _agent(admin), "model": bedrock})
    assert _error(session) == (400, "ValidationError", ["model"])
    assert _patch(admin, {"helperModel": "openai/gpt-4o-mini"}).status_code == 200

    # null gives the deployment's list back.
    reset = _patch(admin, {"allowedModels": None})
    assert reset.json()["allowedModels"] is None
    assert _patch(admin, {"helperModel": bedrock}).status_code == 200


def test_a_patch_checks_its_model_against_the_list_it_sets(admin: tuple[Api, User]) -> None:
    body = {"allowedModels": ["local/*"], "helperModel": "openai/gpt-4o-mini"}
    assert _error(_patch(admin, body)) == (400, "ValidationError", ["helperModel"])
    # Nothing was saved.
    api, user = admin
    got = api.client.get(f"/v1/organizations/{user.org_id}/settings", headers=user.headers)
    assert got.json()["allowedModels"] is None


@pytest.mark.parametrize(
    ("patterns", "path"),
    [
        (["local/*", "nope/*"], ["allowedModels", 1]),
        (["openai"], ["allowedModels", 0]),
        (["bedrock/../x"], ["allowedModels", 0]),
    ],
)
def test_allowed_models_holds_names_or_provider_patterns(
    admin: tuple[Api, User], patterns: list[str], path: list[Any]
) -> None:
    assert _error(_patch(admin, {"allowedModels": patterns})) == (400, "ValidationError", path)
