"""Failed authentications are throttled per source address: after `AUTH_FAILURES_PER_MINUTE`
failed bearer-token checks from one address, a token from it that the service has not found
good yet answers 429 `Throttled` with `Retry-After` until the minute ends, unlooked-up; other
addresses, and tokens already found good, are never held up by them.

The deployment runs on the embedded AWS with a clock the test moves and a limit of 3.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from agent_memory.bootstrap import build_services
from agent_memory.domain.limits import MINUTE_MS
from agent_memory.persistence.limits import ProcessCounters
from tests.conftest import ADMIN_TOKEN, Api, User
from tests.support.in_memory import FixedClock

# A minute boundary: 2026-10-20T00:00:00Z.
T0 = 1_792_454_400_000
FAILURES = 3
ATTACKER, NEIGHBOUR = "203.0.113.9", "198.51.100.4"


def forged(n: int) -> dict[str, str]:
    return {"Authorization": f"Bearer amk_{n:012x}_" + "0" * 40}


class Deployment:
    """One app (its services, its clock) and an HTTP client per source address."""

    def __init__(self, services: Any, clock: FixedClock) -> None:
        self.services, self.clock = services, clock
        self.app = create_app(lambda: services)
        self._clients: dict[str, TestClient] = {}

    def at(self, offset_ms: int) -> None:
        self.clock.ms = T0 + offset_ms

    def from_(self, address: str) -> TestClient:
        if address not in self._clients:
            self._clients[address] = TestClient(
                self.app, raise_server_exceptions=False, client=(address, 50000)
            )
        return self._clients[address]

    def person(self) -> User:
        """A member of a new organization, made from an address of its own."""
        admin = Api(self.from_("192.0.2.1"))
        return admin.user(admin.org())

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


Deploy = Callable[..., Deployment]


@pytest.fixture
def deploy(settings: Any, adapters: Any) -> Iterator[Deploy]:
    made: list[Deployment] = []

    def build(counters: Any = None, failures: int = FAILURES) -> Deployment:
        configured = settings.model_copy(update={"auth_failures_per_minute": failures})
        clock = FixedClock(T0)
        wired = replace(adapters, clock=clock, counters=counters, orchestrator=None)
        deployment = Deployment(build_services(configured, wired), clock)
        made.append(deployment)
        return deployment

    yield build
    for deployment in made:
        deployment.close()


@pytest.mark.parametrize("counted_in", ["table", "process"])
def test_failures_from_one_address_are_throttled_for_the_rest_of_the_minute(
    deploy: Deploy, counted_in: str
) -> None:
    # AWS counts in the table; `make run`, one process, counts in memory.
    world = deploy(counters=ProcessCounters() if counted_in == "process" else None)
    ana = world.person()
    attacker, neighbour = world.from_(ATTACKER), world.from_(NEIGHBOUR)
    world.at(15_000)

    assert [attacker.get("/v1/me", headers=forged(n)).status_code for n in range(FAILURES)] == [
        401
    ] * FAILURES
    over = attacker.get("/v1/me", headers=forged(99))

    assert over.status_code == 429
    assert over.headers["Retry-After"] == "45"
    assert over.json() == {
        "error": {
            "_tag": "Throttled",
            "message": (
                f"over {FAILURES} failed authentications per minute from this address;"
                " retry after 45 s"
            ),
            "path": [],
        }
    }
    # No token from that address is looked up meanwhile: not one this process has not seen
    # good yet (Ana's first request), nor the admin token.
    assert attacker.get("/v1/me", headers=ana.headers).status_code == 429
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert attacker.get("/v1/me", headers=admin).status_code == 429
    # Another address is not held up: its good token works, its bad one is a plain 401.
    assert neighbour.get("/v1/me", headers=ana.headers).status_code == 200
    assert neighbour.get("/v1/me", headers=forged(7)).status_code == 401
    # A token found good here goes on working from the throttled address (people who share
    # an address with a guesser are not held up once known); guesses stay refused.
    assert attacker.get("/v1/me", headers=ana.headers).status_code == 200
    assert attacker.get("/v1/me", headers=forged(9)).status_code == 429
    # Later in the minute the wait is shorter; the next minute, tokens are checked again.
    world.at(59_500)
    assert attacker.get("/v1/me", headers=forged(8)).headers["Retry-After"] == "1"
    world.at(MINUTE_MS)
    assert attacker.get("/v1/me", headers=forged(10)).status_code == 401
    answer = attacker.get("/v1/me", headers=admin)
    assert answer.status_code == 200, answer.text
    assert answer.json()["user"]["role"] == "service-admin"


def test_a_good_token_new_to_the_process_works_after_the_minute(deploy: Deploy) -> None:
    world = deploy()
    ana = world.person()
    attacker = world.from_(ATTACKER)
    world.at(30_000)
    # The failure that fills the minute is a 401; the very next request is refused.
    codes = [attacker.get("/v1/me", headers=forged(n)).status_code for n in range(FAILURES)]
    assert codes == [401] * FAILURES
    assert attacker.get("/v1/me", headers=ana.headers).status_code == 429

    world.at(MINUTE_MS)

    answer = attacker.get("/v1/me", headers=ana.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["user"]["id"] == ana.id


def test_good_requests_are_never_counted_as_failures(deploy: Deploy) -> None:
    world = deploy()
    ana = world.person()
    office = world.from_(ATTACKER)
    world.at(1_000)
    assert all(office.get("/v1/me", headers=ana.headers).status_code == 200 for _ in range(10))
    # Nor are requests that send no token, or a forbidden or unknown object.
    for _ in range(FAILURES + 2):
        assert office.get("/v1/me").status_code == 401
        assert office.get("/v1/sessions/s_missing", headers=ana.headers).status_code == 404
    assert office.get("/v1/me", headers=ana.headers).status_code == 200


def test_another_process_refuses_the_address_from_the_shared_count(deploy: Deploy) -> None:
    """Two API containers over one table: failures counted by one refuse guesses at the other."""
    first = deploy()
    second = deploy()
    first.at(5_000)
    second.at(5_000)
    for n in range(FAILURES):
        assert first.from_(ATTACKER).get("/v1/me", headers=forged(n)).status_code == 401

    assert second.from_(ATTACKER).get("/v1/me", headers=forged(50)).status_code == 429
    assert second.from_(ATTACKER).get("/v1/me", headers=forged(51)).status_code == 429


def test_zero_turns_the_throttle_off(deploy: Deploy) -> None:
    world = deploy(failures=0)
    ana = world.person()
    attacker = world.from_(ATTACKER)
    assert all(attacker.get("/v1/me", headers=forged(n)).status_code == 401 for n in range(20))
    assert attacker.get("/v1/me", headers=ana.headers).status_code == 200


def _event(path: str, token: str, source: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"authorization": f"Bearer {token}"},
        "requestContext": {
            "http": {"method": "GET", "path": path, "sourceIp": source, "protocol": "HTTP/1.1"},
            "requestId": "req-1",
            "stage": "$default",
        },
        "body": None,
        "isBase64Encoded": False,
    }


class _Context:
    function_name = "ApiFunction"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ApiFunction"
    aws_request_id = "lambda-req-1"


def test_in_lambda_the_source_is_the_api_gateway_source_ip(settings: Any, adapters: Any) -> None:
    import functions.api.handler as module

    module = importlib.reload(module)
    configured = settings.model_copy(update={"auth_failures_per_minute": FAILURES})
    wired = replace(adapters, clock=FixedClock(T0 + 1_000), orchestrator=None)
    module.services.use(build_services(configured, wired))
    try:
        handler = module.handler
        bad = "amk_000000000000_" + "0" * 40
        codes = [
            handler(_event("/v1/me", bad, ATTACKER), _Context())["statusCode"]
            for _ in range(FAILURES + 1)
        ]
        assert codes == [401] * FAILURES + [429]
        refused = handler(_event("/v1/me", ADMIN_TOKEN, ATTACKER), _Context())
        assert refused["statusCode"] == 429
        assert int(refused["headers"]["retry-after"]) >= 1
        assert json.loads(refused["body"])["error"]["_tag"] == "Throttled"
        fine = handler(_event("/v1/me", ADMIN_TOKEN, NEIGHBOUR), _Context())
        assert fine["statusCode"] == 200
    finally:
        module.services.reset()


def test_a_service_key_found_good_goes_on_from_a_throttled_address(deploy: Deploy) -> None:
    world = deploy(counters=ProcessCounters())
    neighbour, attacker = world.from_(NEIGHBOUR), world.from_(ATTACKER)
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    org = neighbour.post("/v1/admin/organizations", json={"name": "P"}, headers=admin).json()
    made = neighbour.post(
        f"/v1/organizations/{org['id']}/service-keys", json={"name": "web"}, headers=admin
    )
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    world.at(15_000)
    for n in range(FAILURES):
        attacker.get("/v1/me", headers=forged(n))
    # Not yet seen good by this process: refused unread, like a token.
    assert attacker.get("/v1/me", headers=key).status_code == 429
    assert neighbour.get("/v1/me", headers=key).status_code == 200
    # Found good: the key's backend shares the address with a guesser and is not held up.
    assert attacker.get("/v1/me", headers=key).status_code == 200
