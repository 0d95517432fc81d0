"""A container that knows a token and its organization's settings (a warm read takes them in
one batch: the round trips are bench/session_memory.py's figures) still sees a revocation or
a settings change made through another container on its very next request."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from agent_memory.bootstrap import aws_adapters, build_services
from agent_memory.persistence.limits import TableCounters
from tests.conftest import Api, User


@pytest.fixture
def deployment(local_aws: tuple[Any, Any], settings: Any) -> Iterator[tuple[Api, Api]]:
    """Two API containers of one deployment (rate limits in the table)."""
    session, _local = local_aws
    adapters = aws_adapters(settings, session)
    table = replace(adapters, counters=TableCounters(adapters.store), orchestrator=None)
    first, second = build_services(settings, table), build_services(settings, table)
    with (
        TestClient(create_app(lambda: first), raise_server_exceptions=False) as a,
        TestClient(create_app(lambda: second), raise_server_exceptions=False) as b,
    ):
        yield Api(a), Api(b)


def _session(api: Api, user: User) -> str:
    agent = api.client.post("/v1/agents", json={"name": "Bench"}, headers=user.headers)
    assert agent.status_code == 201, agent.text
    created = api.client.post(
        "/v1/sessions", json={"agentId": agent.json()["agent"]["id"]}, headers=user.headers
    )
    assert created.status_code == 201, created.text
    return str(created.json()["session"]["id"])


def test_revocation_and_settings_changed_elsewhere_apply_at_once(
    deployment: tuple[Api, Api],
) -> None:
    api, other = deployment
    org = api.org()
    admin = api.user(org, role="admin")
    path = f"/v1/sessions/{_session(api, admin)}/memory"
    assert api.client.get(path, headers=admin.headers).json()["settings"]["use"] is True

    # Another container changes the organization's default: this one sees it next request.
    changed = other.client.patch(
        f"/v1/organizations/{org}/settings", json={"memory": {"use": False}}, headers=admin.headers
    )
    assert changed.status_code == 200, changed.text
    assert api.client.get(path, headers=admin.headers).json()["settings"]["use"] is False

    # Revoked through the other container: the known token is refused on its next request.
    revoked = other.client.delete(f"/v1/admin/tokens/{admin.token_prefix}", headers=other.admin)
    assert revoked.status_code == 204
    refused = api.client.get(path, headers=admin.headers)
    assert refused.status_code == 401
    assert refused.json()["error"]["_tag"] == "Unauthorized"
