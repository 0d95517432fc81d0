"""A deployment with rate limits of the test's choosing, on a clock the test moves."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from agent_memory.bootstrap import build_services
from agent_memory.domain.limits import MINUTE_MS
from tests.conftest import Api, User
from tests.support.in_memory import FixedClock, RecordingOrchestrator

# A minute boundary: 2026-10-20T00:00:00Z.
T0 = 1_792_454_400_000


class World:
    """One deployment: its HTTP client, its clock, and helpers to use it."""

    def __init__(
        self, services: Any, store: Any, clock: FixedClock, orchestrator: RecordingOrchestrator
    ) -> None:
        self.services = services
        self.store = store
        self.clock = clock
        self.orchestrator = orchestrator
        self.http = TestClient(create_app(lambda: services), raise_server_exceptions=False)
        self.api = Api(self.http)

    def at(self, offset_ms: int) -> None:
        """Move the clock to `offset_ms` after T0."""
        self.clock.ms = T0 + offset_ms

    def get(self, user: User, url: str = "/v1/agent_memories") -> Any:
        return self.http.get(url, headers=user.headers)


Serve = Callable[..., World]


@pytest.fixture
def serve(settings: Any, adapters: Any) -> Iterator[Serve]:
    """Build a deployment with `RATE_LIMIT_PER_MINUTE=rate`, `ORG_MODEL_CALLS_PER_MINUTE=calls`."""
    worlds: list[World] = []

    def build(
        rate: int = 1200, calls: int = 600, counters: Any = None, key_rate: int = 60_000
    ) -> World:
        configured = settings.model_copy(
            update={
                "rate_limit_per_minute": rate,
                "org_model_calls_per_minute": calls,
                "service_key_requests_per_minute": key_rate,
            }
        )
        clock, orchestrator = FixedClock(T0), RecordingOrchestrator()
        wired = replace(adapters, clock=clock, orchestrator=orchestrator, counters=counters)
        world = World(build_services(configured, wired), adapters.store, clock, orchestrator)
        worlds.append(world)
        return world

    yield build
    for world in worlds:
        world.http.close()


def people(world: World, count: int = 2) -> list[User]:
    """Members of one new organization, created at the start of the minute before T0, so
    the admin requests that made them count in a window of their own."""
    world.at(-MINUTE_MS)
    org = world.api.org()
    users = [world.api.user(org) for _ in range(count)]
    world.at(0)
    return users
