"""The Clock and Ids ports' contract, run against the real adapters and the test fakes.

Rows are keyed and ordered by what these answer (log versions, newest-first lists, expiry), so
a fake that breaks a rule here would let a test pass that fails in AWS. To run it against
another adapter, add one entry to `CLOCKS` or `IDS`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from agent_memory.adapters.clock import RandomIds, SystemClock
from agent_memory.ports import Clock, Ids
from tests.support.in_memory import FixedClock, SequentialIds

CLOCKS: dict[str, Callable[[], Clock]] = {
    "system": SystemClock,
    "fixed": FixedClock,
    "fixed-stepping": lambda: FixedClock(step_ms=7),
}
IDS: dict[str, Callable[[], Ids]] = {"random": RandomIds, "sequential": SequentialIds}

# Ids go into DynamoDB keys, URLs and cursors: a safe, unambiguous alphabet only.
SAFE_ID = re.compile(r"[a-z0-9_-]+")


@pytest.fixture(params=sorted(CLOCKS))
def clock(request: pytest.FixtureRequest) -> Clock:
    return CLOCKS[request.param]()


@pytest.fixture(params=sorted(IDS))
def ids(request: pytest.FixtureRequest) -> Ids:
    return IDS[request.param]()


def test_a_clock_never_goes_back(clock: Clock) -> None:
    readings = [clock.now_ms() for _ in range(200)]
    assert readings == sorted(readings)


def test_a_clock_reads_milliseconds_since_the_epoch(clock: Clock) -> None:
    # 2020-01-01 .. 2100-01-01: a clock in seconds or nanoseconds would fall outside.
    assert 1_577_836_800_000 < clock.now_ms() < 4_102_444_800_000


def test_the_system_clock_follows_real_time() -> None:
    assert abs(SystemClock().now_ms() - time.time() * 1000) < 1_000


def test_ids_are_unique_and_carry_their_prefix(ids: Ids) -> None:
    made = [ids.new("e-") for _ in range(2_000)]
    assert len(set(made)) == len(made)
    assert all(one.startswith("e-") and SAFE_ID.fullmatch(one) for one in made)


def test_ids_made_later_sort_later(ids: Ids) -> None:
    first = ids.new("x")
    time.sleep(0.002)  # past the next millisecond: ids order by their time, then at random
    assert ids.new("x") > first
