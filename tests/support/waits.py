"""The recorded waits' harness as a fixture (tests/support/learning.py `WaitHarness`)."""

from __future__ import annotations

import pytest

from tests.support.learning import WaitHarness


@pytest.fixture
def h() -> WaitHarness:
    return WaitHarness()
