"""Models this deployment cannot run are refused where they are named, and
`GET /v1/capabilities` says what it can run (API.md, "Local run" / Models).

The deployment here has no OpenAI or Anthropic configuration (the tests' environment may
hold keys: they are cleared), runs on the embedded AWS (so Bedrock counts as reachable) and
embeds with `local/minilm`.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conftest import Api, User
from tests.support.threads import agent_of

OPENAI_MISSING = (
    "openai/gpt-4o: this deployment has no OpenAI-compatible endpoint configured "
    "(OPENAI_API_KEY / OPENAI_BASE_URL)"
)
ANTHROPIC_MISSING = (
    "anthropic/claude-haiku-4-5: this deployment has no Anthropic key configured "
    "(ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL)"
)


@pytest.fixture
def settings(settings: Any) -> Any:
    return settings.model_copy(
        update={
            "openai_api_key": "",
            "openai_api_key_secret_arn": "",
            "openai_base_url": "https://api.openai.com/v1",
            "anthropic_api_key": "",
            "anthropic_base_url": "https://api.anthropic.com",
        }
    )


@pytest.fixture
def admin(api: Api) -> User:
    return api.user(api.org(), role="admin")


def _error(answer: Any) -> tuple[int, list[Any], str]:
    assert answer.status_code == 400, answer.text
    body = answer.json()["error"]
    assert body["_tag"] == "ValidationError"
    return answer.status_code, body["path"], body["message"]


def _settings(api: Api, admin: User, body: dict[str, Any]) -> Any:
    return api.client.patch(
        f"/v1/organizations/{admin.org_id}/settings", json=body, headers=admin.headers
    )


def test_org_settings_refuse_a_model_of_a_provider_not_configured(api: Api, admin: User) -> None:
    assert _error(_settings(api, admin, {"helperModel": "openai/gpt-4o"})) == (
        400,
        ["helperModel"],
        OPENAI_MISSING,
    )
    answer = _settings(api, admin, {"botMemoryModel": "anthropic/claude-haiku-4-5"})
    assert _error(answer) == (400, ["botMemoryModel"], ANTHROPIC_MISSING)
    # Nothing was saved; models this deployment runs are taken.
    got = api.client.get(f"/v1/organizations/{admin.org_id}/settings", headers=admin.headers)
    assert got.json()["helperModel"] is None
    assert got.json()["botMemoryModel"] is None
    runnable = {"helperModel": "local/rules", "botMemoryModel": "bedrock/amazon.nova-lite-v1:0"}
    assert _settings(api, admin, runnable).status_code == 200


def test_sessions_and_turns_refuse_a_model_nobody_can_run(api: Api, admin: User) -> None:
    agent = agent_of(api, admin)
    created = api.client.post(
        "/v1/sessions",
        json={"agentId": agent, "model": "anthropic/claude-haiku-4-5"},
        headers=admin.headers,
    )
    assert _error(created) == (400, ["model"], ANTHROPIC_MISSING)
    session = api.client.post("/v1/sessions", json={"agentId": agent}, headers=admin.headers)
    assert session.status_code == 201, session.text
    assert session.json()["session"]["model"] == "local/rules"
    turn = api.client.post(
        f"/v1/sessions/{session.json()['session']['id']}/turns",
        json={"model": "openai/gpt-4o", "items": [{"role": "user", "content": "Hi"}]},
        headers=admin.headers,
    )
    assert _error(turn) == (400, ["model"], OPENAI_MISSING)
    # Another local model than local/rules does not exist.
    other = api.client.post(
        "/v1/sessions", json={"agentId": agent, "model": "local/llama"}, headers=admin.headers
    )
    _status, path, message = _error(other)
    assert path == ["model"]
    assert message == "local/llama: this deployment has no such model (local: local/rules)"


@pytest.mark.parametrize(
    ("option", "path"),
    [
        ({"observationalMemory": {"model": "openai/gpt-4o"}}, ["observationalMemory", "model"]),
        (
            {"observationalMemory": {"reflection": {"model": "openai/gpt-4o"}}},
            ["observationalMemory", "reflection", "model"],
        ),
        ({"generateTitle": {"model": "openai/gpt-4o"}}, ["generateTitle", "model"]),
    ],
)
def test_memory_options_refuse_a_model_nobody_can_run(
    api: Api, admin: User, option: dict[str, Any], path: list[str]
) -> None:
    agent = agent_of(api, admin)
    answer = api.client.patch(
        f"/v1/agents/{agent}/draft", json={"memory": {"options": option}}, headers=admin.headers
    )
    assert _error(answer) == (400, ["memory", "options", *path], OPENAI_MISSING)


def test_capabilities_say_what_this_deployment_runs(api: Api, admin: User) -> None:
    member = api.user(admin.org_id)
    for headers in (member.headers, admin.headers, api.admin):
        answer = api.client.get("/v1/capabilities", headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {
            "models": {
                "providers": ["local", "bedrock"],
                "allowed": ["local/rules", "bedrock/*"],
                "default": "local/rules",
                "unconfigured": [
                    {"provider": "openai", "needs": "OPENAI_API_KEY / OPENAI_BASE_URL"},
                    {"provider": "anthropic", "needs": "ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL"},
                ],
            },
            "embedders": [{"name": "local/minilm", "dimensions": 384}],
            "local": ["local/rules", "local/minilm"],
        }
    assert api.client.get("/v1/capabilities").status_code == 401


def test_capabilities_follow_the_organizations_allowed_models(api: Api, admin: User) -> None:
    assert _settings(api, admin, {"allowedModels": ["local/*"]}).status_code == 200
    mine = api.client.get("/v1/capabilities", headers=api.user(admin.org_id).headers)
    assert mine.json()["models"]["allowed"] == ["local/rules"]
    # Another organization keeps the deployment's list.
    other = api.client.get("/v1/capabilities", headers=api.user(api.org()).headers)
    assert other.json()["models"]["allowed"] == ["local/rules", "bedrock/*"]


class TestConfigured:
    """A deployment with an OpenAI-compatible endpoint and an Anthropic key, narrowed by
    ALLOWED_MODELS."""

    KEY = "sk-ant-never-shown-0123456789"

    @pytest.fixture
    def settings(self, settings: Any) -> Any:
        return settings.model_copy(
            update={
                "openai_base_url": "http://127.0.0.1:9/v1",
                "anthropic_api_key": self.KEY,
                "allowed_models": "local/*, openai/*, anthropic/claude-haiku-4-5",
            }
        )

    def test_the_models_it_runs_are_taken_and_named_without_keys(
        self, api: Api, admin: User
    ) -> None:
        agent = agent_of(api, admin)
        for model in ("openai/gpt-4o", "anthropic/claude-haiku-4-5"):
            answer = api.client.post(
                "/v1/sessions", json={"agentId": agent, "model": model}, headers=admin.headers
            )
            assert answer.status_code == 201, answer.text
        # Runnable but outside ALLOWED_MODELS: the list's refusal.
        bedrock = api.client.post(
            "/v1/sessions",
            json={"agentId": agent, "model": "bedrock/amazon.nova-lite-v1:0"},
            headers=admin.headers,
        )
        assert _error(bedrock)[2] == (
            "model 'bedrock/amazon.nova-lite-v1:0' is not allowed in this deployment"
        )
        answer = api.client.get("/v1/capabilities", headers=admin.headers)
        models = answer.json()["models"]
        assert models["providers"] == ["local", "openai", "bedrock", "anthropic"]
        assert models["allowed"] == ["local/rules", "openai/*", "anthropic/claude-haiku-4-5"]
        assert models["unconfigured"] == []
        assert self.KEY not in answer.text
        assert "127.0.0.1" not in answer.text


def test_the_served_document_names_only_the_models_this_deployment_runs(api: Api) -> None:
    document = api.client.get("/openapi.json").json()
    pattern = document["components"]["schemas"]["CreateSession"]["properties"]["model"]["pattern"]
    for runnable in ("local/rules", "bedrock/anthropic.claude-3-haiku"):
        assert re.fullmatch(pattern, runnable), runnable
    # Not configured, or no such local model: the schema already says it is refused.
    for refused in ("openai/gpt-4o", "anthropic/claude-haiku-4-5", "local/0"):
        assert not re.fullmatch(pattern, refused), refused
