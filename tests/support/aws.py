"""The embedded AWS (in-process moto, provisioned from template.yaml) with the settings it
gives. Most tests take a fresh one per test (`local_aws` in tests/conftest.py); a module
whose tests share one built world takes one per module through `embedded_settings`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_memory.domain.identity import hash_token
from tests.conftest import ADMIN_TOKEN


@contextmanager
def embedded_settings() -> Iterator[tuple[Any, Any, Any]]:
    """(boto3 session, LocalAws, Settings) of a fresh embedded AWS, with the environment the
    settings came from set for as long as it lives (for module-scoped fixtures)."""
    import pytest

    from agent_memory.config import load_settings
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
