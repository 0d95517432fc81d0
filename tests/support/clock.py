"""The system clock, moved forward by a test (a budget period rolls over, a turn is left open
for a day)."""

from __future__ import annotations

import time

import pytest


class MovableClock:
    """The system clock plus `offset_ms`, which a test moves forward."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()
