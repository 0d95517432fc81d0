"""`make run` and Bedrock (docs/adr/0020): on one machine, `bedrock/...` models run only when
AWS credentials are at hand (a profile, the environment); without them a session naming one
is a 400 saying so, and `GET /v1/capabilities` lists Bedrock among what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.threads import make_run_world

NOVA = "bedrock/amazon.nova-lite-v1:0"
CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


@pytest.fixture(autouse=True)
def no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))


def test_without_aws_credentials_a_bedrock_model_is_refused(tmp_path: Path) -> None:
    with make_run_world(tmp_path / "data") as local:
        client, headers = local.api.client, local.owner.headers
        answer = client.post(
            "/v1/sessions", json={"agentId": local.agent, "model": NOVA}, headers=headers
        )
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["path"] == ["model"]
        assert error["message"].startswith(
            f"{NOVA}: this deployment has no AWS credentials for Amazon Bedrock configured"
        )
        models = client.get("/v1/capabilities", headers=headers).json()["models"]
        assert "bedrock" not in models["providers"]
        assert "bedrock" in [u["provider"] for u in models["unconfigured"]]


def test_with_aws_credentials_a_bedrock_model_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with make_run_world(tmp_path / "data") as local:
        client, headers = local.api.client, local.owner.headers
        answer = client.post(
            "/v1/sessions", json={"agentId": local.agent, "model": NOVA}, headers=headers
        )
        assert answer.status_code == 201, answer.text
        models = client.get("/v1/capabilities", headers=headers).json()["models"]
        assert "bedrock" in models["providers"]
        assert "bedrock/*" in models["allowed"]
