"""A memory read in two DynamoDB round trips, with revocation and settings still immediate.

Each AWS call here waits 20 ms before it is sent, as a network would (bench.counting's
RoundTrips), so calls made one after the other and calls made side by side can be told apart
by their times: a round trip is a group of calls whose times overlap. The rate limit
counts in the table, as on AWS.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from agent_memory.bootstrap import aws_adapters, build_services
from agent_memory.persistence.limits import TableCounters
from bench.counting import RoundTrips
from tests.conftest import Api, User


@pytest.fixture
def deployment(local_aws: tuple[Any, Any], settings: Any) -> Iterator[tuple[Api, Api, RoundTrips]]:
    """Two API containers of one deployment (rate limits in the table), the first one's
    DynamoDB calls timed."""
    session, _local = local_aws
    # Before the clients are built: a client copies its session's hooks when it is made.
    trips = RoundTrips(session._session)
    adapters = aws_adapters(settings, session)
    table = replace(adapters, counters=TableCounters(adapters.store), orchestrator=None)
    first, second = build_services(settings, table), build_services(settings, table)
    with (
        TestClient(create_app(lambda: first), raise_server_exceptions=False) as a,
        TestClient(create_app(lambda: second), raise_server_exceptions=False) as b,
    ):
        yield Api(a), Api(b), trips


def _session(api: Api, user: User) -> str:
    agent = api.client.post("/v1/agents", json={"name": "Bench"}, headers=user.headers)
    assert agent.status_code == 201, agent.text
    created = api.client.post(
        "/v1/sessions", json={"agentId": agent.json()["agent"]["id"]}, headers=user.headers
    )
    assert created.status_code == 201, created.text
    return str(created.json()["session"]["id"])


def test_a_warm_memory_read_is_two_round_trips(deployment: tuple[Api, Api, RoundTrips]) -> None:
    api, other, trips = deployment
    org = other.org()
    ana = other.user(org)
    path = f"/v1/sessions/{_session(other, ana)}/memory"

    # The token's first request here reads it alone, then counts it: 3 round trips.
    _answer, first = trips.of(lambda: api.client.get(path, headers=ana.headers))
    assert first == [["GetItem"], ["UpdateItem"], ["Query"], ["GetItem"]]
    # Known now: the token and its organization's settings in one batch, the count beside
    # it, then the session: 2 round trips (was 4: token, count, session, settings).
    answer, warm = trips.of(lambda: api.client.get(path, headers=ana.headers))
    assert answer.status_code == 200, answer.text
    assert warm == [["BatchGetItem", "UpdateItem"], ["Query"]]


def test_revocation_and_settings_changed_elsewhere_apply_at_once(
    deployment: tuple[Api, Api, RoundTrips],
) -> None:
    api, other, _trips = deployment
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
