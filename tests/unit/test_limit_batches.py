"""Limits counted in batches: far below a limit a process writes one counter
write per batch of uses; from half the limit on every use is written and the first over the
limit is refused; several processes on one table never admit more than the limit plus
`batch - 1` a process; small limits are exact as before; an outage admits."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.limits import MINUTE_MS, Limit, Refused, window_at
from agent_memory.persistence.limits import (
    BATCH,
    BatchedCounters,
    ProcessCounters,
    TableCounters,
    counter_pk,
)
from agent_memory.service.limits import Limiter, ModelCallQuota, RequestLimits
from tests.support.in_memory import FixedClock, InMemoryStore

# A minute boundary: 2026-10-20T00:00:00Z.
T0 = 1_792_454_400_000
WINDOW = window_at(T0)


class CountingStore(InMemoryStore):
    """The in-memory table, counting the writes it is asked for (a refused one included:
    DynamoDB bills a failed conditional write too)."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self._counting = threading.Lock()

    def write(self, actions: Any) -> None:
        with self._counting:
            self.writes += 1
        super().write(actions)


class SwitchableStore(CountingStore):
    """A table that can be down: every write is `Unavailable` while `down`."""

    down = False

    def write(self, actions: Any) -> None:
        if self.down:
            raise Unavailable("the table is throttling")
        super().write(actions)


def counted(store: InMemoryStore, scope: str = "r", subject: str = "a") -> int:
    row = store.rows.get((counter_pk(scope, subject, WINDOW), "COUNT"))
    return int(row["n"]) if row else 0


def test_far_below_the_limit_a_process_writes_once_a_batch() -> None:
    store = CountingStore()
    counters = BatchedCounters(TableCounters(store))
    assert all(counters.take("r", "a", WINDOW, 1200) for _ in range(100))
    # Uses 1, 9, 17, ..., 97 write (the first of a window, then every 8th): 13 writes.
    assert store.writes == 13 == 1 + (100 - 1) // BATCH
    # The table holds every use up to the last write; the 3 since ride on the next one.
    assert counted(store) == 97
    assert counters.count("r", "a", WINDOW) == 100


def test_near_the_limit_every_use_writes_and_the_first_over_is_refused() -> None:
    store = CountingStore()
    counters = BatchedCounters(TableCounters(store))
    taken = [counters.take("r", "a", WINDOW, 40) for _ in range(20)]
    below_half = store.writes
    taken += [counters.take("r", "a", WINDOW, 40) for _ in range(21)]
    assert taken == [True] * 40 + [False]
    # Uses 21..41 (past half of 40) write one each, the refused one included.
    assert store.writes - below_half == 21
    assert counted(store) == 40


def test_small_limits_write_every_use_as_before() -> None:
    store = CountingStore()
    limiter = Limiter(BatchedCounters(TableCounters(store)), FixedClock(T0 + 15_000))
    three = Limit(3)
    assert [limiter.take("requests", three, "a") for _ in range(4)] == [None] * 3 + [Refused(45)]
    assert store.writes == 4


@given(
    st.lists(
        # About 100 uses a window, most of one subject: past half and past the limit.
        st.tuples(st.sampled_from(["a", "a", "a", "b"]), st.integers(min_value=0, max_value=400)),
        max_size=200,
    ),
    st.integers(min_value=1, max_value=80),
)
def test_one_process_answers_exactly_as_the_exact_counters(
    steps: list[tuple[str, int]], per_window: int
) -> None:
    """One process alone knows the table's count: batching never changes an answer."""
    clock = FixedClock(T0)
    batched = Limiter(BatchedCounters(TableCounters(InMemoryStore())), clock)
    exact = Limiter(ProcessCounters(), clock)
    limit = Limit(per_window, window_ms=20_000)
    for subject, step in steps:
        clock.ms += step
        assert batched.take("s", limit, subject) == exact.take("s", limit, subject)


@given(st.lists(st.sampled_from([0, 1]), min_size=1, max_size=400), st.sampled_from([32, 100]))
def test_two_processes_on_one_table_stay_within_the_bound(who: list[int], per_window: int) -> None:
    store = InMemoryStore()
    processes = [BatchedCounters(TableCounters(store)) for _ in range(2)]
    admitted = 0
    for process in who:
        if processes[process].take("r", "a", WINDOW, per_window):
            admitted += 1
        else:
            # Nothing is refused before the limit was admitted.
            assert admitted >= per_window
    assert admitted <= per_window + 2 * (BATCH - 1)
    assert counted(store) <= per_window
    if len(who) >= per_window + 2 * BATCH:
        assert admitted >= per_window


def test_two_processes_fill_a_window_together_within_the_bound() -> None:
    """Alternating and random orders, past the limit: both are refused at the end."""
    for seed in range(20):
        order = random.Random(seed)
        store = InMemoryStore()
        processes = [BatchedCounters(TableCounters(store)) for _ in range(2)]
        answers = [processes[order.randrange(2)].take("r", "a", WINDOW, 200) for _ in range(400)]
        assert 200 <= answers.count(True) <= 200 + 2 * (BATCH - 1)
        assert answers[-10:] == [False] * 10
        assert counted(store) == 200


def test_threads_of_one_process_never_pass_the_limit() -> None:
    counters = BatchedCounters(TableCounters(InMemoryStore()))
    with ThreadPoolExecutor(8) as pool:
        taken = list(pool.map(lambda _n: counters.take("r", "a", WINDOW, 50), range(200)))
    assert taken.count(True) == 50


def test_threads_of_two_processes_stay_within_the_bound() -> None:
    store = InMemoryStore()
    processes = [BatchedCounters(TableCounters(store)) for _ in range(2)]
    with ThreadPoolExecutor(8) as pool:
        taken = list(pool.map(lambda n: processes[n % 2].take("r", "a", WINDOW, 100), range(400)))
    assert 100 <= taken.count(True) <= 100 + 2 * (BATCH - 1)
    assert counted(store) == 100


def test_a_new_window_starts_counting_again_and_forgets_the_old_one() -> None:
    store = CountingStore()
    clock = FixedClock(T0 + 1_000)
    limiter = Limiter(BatchedCounters(TableCounters(store)), clock)
    limit = Limit(40)
    for _ in range(40):
        assert limiter.take("r", limit, "a") is None
    assert limiter.take("r", limit, "a") == Refused(59)
    clock.ms = T0 + MINUTE_MS
    writes = store.writes
    # The new window's first use writes (the process knows no count for it yet).
    assert limiter.take("r", limit, "a") is None
    assert store.writes == writes + 1
    assert all(limiter.take("r", limit, "a") is None for _ in range(39))
    assert limiter.take("r", limit, "a") == Refused(60)
    counters = limiter._counters
    assert isinstance(counters, BatchedCounters)
    assert list(counters._windows) == [T0 + 2 * MINUTE_MS]
    # Uses pending at a window's end are lost: below half they undercount, nothing more.
    clock.ms = T0 + 2 * MINUTE_MS
    for _ in range(5):
        limiter.take("r", limit, "a")
    clock.ms = T0 + 3 * MINUTE_MS
    limiter.take("r", limit, "a")
    second = store.rows[(counter_pk("r", "a", window_at(T0 + 2 * MINUTE_MS)), "COUNT")]
    assert second["n"] == 1
    assert len(counters._windows) == 1


def test_an_outage_admits_and_counting_resumes_after_it() -> None:
    store = SwitchableStore()
    limiter = Limiter(BatchedCounters(TableCounters(store)), FixedClock(T0))
    limit = Limit(40)
    assert limiter.take("r", limit, "a") is None
    store.down = True
    # Every use while the table is down is admitted (those that would have written too).
    assert all(limiter.take("r", limit, "a") is None for _ in range(100))
    store.down = False
    answers = [limiter.take("r", limit, "a") for _ in range(60)]
    # The uses the outage swallowed are not counted (up to `BATCH - 1` left pending then
    # ride on the first write after it): the window still has room for at least 32.
    assert answers.count(None) >= 40 - 1 - (BATCH - 1)
    assert answers[-1] is not None
    assert counted(store) == 40


def test_request_limits_and_the_model_call_quota_share_the_batched_rule() -> None:
    store = CountingStore()
    limiter = Limiter(BatchedCounters(TableCounters(store)), FixedClock(T0 + 30_000))
    requests, quota = RequestLimits(limiter, 1200), ModelCallQuota(limiter, 600)
    for _ in range(16):
        requests.admit("amk_0123456789ab_" + "f" * 40)
        assert quota.take("o-1") is None
    # 16 uses of each: a write at the 1st and the 9th, of each.
    assert store.writes == 4
