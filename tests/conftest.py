"""Shared fixtures: the embedded AWS (in-process moto), the wired services, an HTTP client.

The embedded AWS is fresh for every test (`local_aws`). Where a module's tests share one
world built once (tests/reliability, whose world is restored before every run; the observer's
stack; the access matrix and schemathesis), it is one per module, through
tests/support/aws.py's `embedded_settings`.

`api` gives tests a client plus helpers to create organizations and users through the
admin routes, as a real client would.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
# One BLAS thread (set before numpy loads): local/minilm's small matmuls on threads cost ~15x
# more on 2 busy cores (0.06 s an embed against 0.9 s).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ADMIN_TOKEN = "amk_admin_test-token-0123456789"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="run tests marked slow (schemathesis with a large budget)",
    )


@pytest.fixture(autouse=True)
def _skip_slow(request: pytest.FixtureRequest) -> None:
    """Tests marked `slow` run only with `--run-slow`."""
    if request.node.get_closest_marker("slow") and not request.config.getoption("--run-slow"):
        pytest.skip("slow: run with --run-slow")


@pytest.fixture
def local_aws() -> Iterator[tuple[Any, Any]]:
    """A fresh embedded AWS provisioned from template.yaml: (boto3 session, LocalAws)."""
    from infra.local.aws import embedded_aws, provision

    with embedded_aws() as session:
        yield session, provision(session)


@pytest.fixture
def settings(local_aws: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import hash_token

    _session, local = local_aws
    environment = {
        **local.environment(),
        "MEMORY_ADMIN_TOKEN_SHA256": hash_token(ADMIN_TOKEN),
        "DEFAULT_MODEL": "local/rules",
    }
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    return load_settings()


@pytest.fixture
def adapters(local_aws: tuple[Any, Any], settings: Any) -> Any:
    from agent_memory.bootstrap import aws_adapters
    from agent_memory.persistence.limits import ProcessCounters

    session, _local = local_aws
    # Rate counters in process: the table path (one conditional write a request) is
    # tested by tests/api/test_rate_limits.py; here it would only slow every request.
    return replace(aws_adapters(settings, session), counters=ProcessCounters())


@pytest.fixture
def services(settings: Any, adapters: Any) -> Iterator[Any]:
    """The wired services; the learning step handlers (run by the embedded Step Functions
    in this process) use the same ones, as a warm Lambda would."""
    from agent_memory.bootstrap import build_services, step_services

    built = build_services(settings, adapters)
    step_services.use(built)
    yield built
    step_services.reset()


@dataclass
class Api:
    """An HTTP client of the app with helpers for identities."""

    client: Any
    admin: dict[str, str] = field(
        default_factory=lambda: {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )

    def org(self, org_id: str | None = None, name: str = "Acme") -> str:
        body = {"name": name} | ({"id": org_id} if org_id else {})
        answer = self.client.post("/v1/admin/organizations", json=body, headers=self.admin)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["id"])

    def user(self, org_id: str, role: str = "member", user_id: str | None = None) -> User:
        body = {"organizationId": org_id, "role": role} | ({"id": user_id} if user_id else {})
        answer = self.client.post("/v1/admin/users", json=body, headers=self.admin)
        assert answer.status_code == 201, answer.text
        data = answer.json()
        return User(data["id"], org_id, data["token"], data["tokenPrefix"])


@dataclass(frozen=True)
class User:
    id: str
    org_id: str
    token: str
    token_prefix: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def api(services: Any) -> Iterator[Api]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
        yield Api(client)


@dataclass(frozen=True)
class SharedApp:
    """A module's one embedded AWS and app: its client, its services and its rate counters."""

    api: Api
    services: Any
    counters: Any


@pytest.fixture(scope="module")
def shared_app() -> Iterator[SharedApp]:
    """One embedded AWS and one app for a module, wired as `api` is: provisioning a fresh
    one per case cost most of each case. The modules that take it build their own
    organizations and objects in every case (or only read what the module built once)."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters, build_services, step_services
    from agent_memory.persistence.limits import ProcessCounters
    from tests.support.aws import embedded_settings

    with embedded_settings() as (session, _local, settings):
        counters = ProcessCounters()
        adapters = replace(aws_adapters(settings, session), counters=counters)
        services = build_services(settings, adapters)
        step_services.use(services)
        try:
            with TestClient(create_app(lambda: services), raise_server_exceptions=False) as c:
                yield SharedApp(Api(c), services, counters)
        finally:
            step_services.reset()


def fresh_counters(shared: SharedApp) -> Api:
    """The module's app, with rate counters as fresh as a new process's (the admin token
    would otherwise count every case's calls against one limit): a module's `api`."""
    shared.counters._windows.clear()
    return shared.api
