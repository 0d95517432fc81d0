"""One embedded AWS and one reproducible World per module: the base state is built once
through the API, saved, and restored before every run (tests/reliability/world.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.reliability.world import World, reproducible_world
from tests.support.aws import embedded_settings


@pytest.fixture(scope="module")
def module_aws() -> Iterator[tuple[Any, Any, Any]]:
    """(boto3 session, LocalAws, Settings) of an embedded AWS kept for the whole module."""
    with embedded_settings() as made:
        yield made


@pytest.fixture(scope="module")
def world(module_aws: tuple[Any, Any, Any]) -> Iterator[World]:
    session, local, settings = module_aws
    with (
        pytest.MonkeyPatch.context() as patch,
        reproducible_world((session, local), settings, patch) as built,
    ):
        yield built
