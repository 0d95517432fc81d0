"""One embedded AWS and one reproducible World per module: the base state is built once
through the API, saved, and restored before every run (tests/reliability/world.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import ADMIN_TOKEN
from tests.reliability.world import World, reproducible_world


@pytest.fixture(scope="module")
def module_aws() -> Iterator[tuple[Any, Any, Any]]:
    """(boto3 session, LocalAws, Settings) of an embedded AWS kept for the whole module."""
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import hash_token
    from infra.local.aws import embedded_aws, provision

    with pytest.MonkeyPatch.context() as patch, embedded_aws() as session:
        local = provision(session)
        environment = {
            **local.environment(),
            "MEMORY_ADMIN_TOKEN_SHA256": hash_token(ADMIN_TOKEN),
            "DEFAULT_MODEL": "local/rules",
        }
        for name, value in environment.items():
            patch.setenv(name, value)
        yield session, local, load_settings()


@pytest.fixture(scope="module")
def world(module_aws: tuple[Any, Any, Any]) -> Iterator[World]:
    session, local, settings = module_aws
    with (
        pytest.MonkeyPatch.context() as patch,
        reproducible_world((session, local), settings, patch) as built,
    ):
        yield built
