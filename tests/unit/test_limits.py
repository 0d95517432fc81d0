"""Fixed-window limits: the window arithmetic and Retry-After (properties), the limiter over
the in-memory store, and the model-call quota where learning starts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.limits import (
    MINUTE_MS,
    Limit,
    RateLimited,
    Refused,
    expires_at_s,
    quota_note,
    retry_after_s,
    window_at,
)
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.limits import ProcessCounters, TableCounters
from agent_memory.ports import KeyRange
from agent_memory.service.learning import LearningService
from agent_memory.service.learning_pools import PoolRef
from agent_memory.service.limits import Limiter, ModelCallQuota, RequestLimits
from tests.support.in_memory import (
    FakeCipher,
    FixedClock,
    InMemoryStore,
    RecordingOrchestrator,
    SequentialIds,
)
from tests.support.learning_doubles import MODEL, Catalog, NotesPool, ScriptedModel

# A minute boundary: 2026-10-20T00:00:00Z.
T0 = 1_792_454_400_000
assert T0 % MINUTE_MS == 0

instants = st.integers(min_value=0, max_value=2**45)
windows = st.integers(min_value=1, max_value=3_600_000)


# --- the window arithmetic ----------------------------------------------------------------


@given(instants, windows)
def test_the_window_holds_the_instant_and_lasts_its_length(now: int, length: int) -> None:
    window = window_at(now, length)
    assert window.start_ms <= now < window.end_ms
    assert window.end_ms - window.start_ms == length
    # Every process computes the same window: it depends on the clock alone.
    assert window_at(window.start_ms, length) == window == window_at(window.end_ms - 1, length)
    assert window_at(window.end_ms, length).index == window.index + 1


@given(instants, windows)
def test_retry_after_is_the_first_whole_second_at_or_after_the_window_end(
    now: int, length: int
) -> None:
    window = window_at(now, length)
    wait = retry_after_s(now, window)
    assert wait >= 1
    # Retrying after `wait` seconds lands in a later window, and a second sooner would not
    # (unless the window ends within the first second).
    assert window_at(now + wait * 1000, length).index > window.index
    if wait > 1:
        assert window_at(now + (wait - 1) * 1000, length).index == window.index


def test_retry_after_within_a_minute() -> None:
    minute = window_at(T0 + 1)
    assert retry_after_s(T0, window_at(T0)) == 60
    assert retry_after_s(T0 + 59_001, minute) == 1
    assert retry_after_s(T0 + 59_999, minute) == 1
    assert retry_after_s(T0 + 30_500, minute) == 30
    # A clock read after the window ended (a slow request) still says "retry", never 0.
    assert retry_after_s(T0 + 61_000, minute) == 1


@given(instants, windows)
def test_a_counter_row_outlives_its_window(now: int, length: int) -> None:
    window = window_at(now, length)
    assert expires_at_s(window) * 1000 > window.end_ms


def test_a_limit_of_zero_is_off() -> None:
    assert not Limit(0).enabled
    assert Limit(1).enabled


def test_the_notes_say_why_and_what_happens_next() -> None:
    turn = quota_note("turn", Refused(12))
    assert "ORG_MODEL_CALLS_PER_MINUTE" in turn
    assert "12 s" in turn
    assert "next turn" in turn
    assert "next turn" not in quota_note("refresh", Refused(3))


# --- the limiter --------------------------------------------------------------------------


def rows(store: InMemoryStore) -> list[dict[str, Any]]:
    return [row for (pk, _sk), row in store.rows.items() if pk.startswith("RATE#")]


COUNTERS = {
    "table": lambda: TableCounters(InMemoryStore()),
    "process": ProcessCounters,
}


@pytest.mark.parametrize("kind", COUNTERS)
def test_the_limit_passes_then_refuses_until_the_window_frees(kind: str) -> None:
    clock = FixedClock(T0 + 15_000)
    limiter = Limiter(COUNTERS[kind](), clock)
    three = Limit(3)
    assert [limiter.take("requests", three, "a") for _ in range(3)] == [None] * 3
    assert limiter.take("requests", three, "a") == Refused(45)
    clock.ms = T0 + 59_999
    assert limiter.take("requests", three, "a") == Refused(1)
    # Another subject has its own window.
    assert limiter.take("requests", three, "b") is None
    # The same subject in another scope too.
    assert limiter.take("model-calls", three, "a") is None
    clock.ms = T0 + MINUTE_MS
    assert limiter.take("requests", three, "a") is None


def test_the_table_keeps_one_expiring_row_per_scope_subject_and_window() -> None:
    store, clock = InMemoryStore(), FixedClock(T0 + 15_000)
    limiter = Limiter(TableCounters(store), clock)
    for subject in ("a", "a", "a", "a", "b"):
        limiter.take("requests", Limit(3), subject)
    clock.ms = T0 + MINUTE_MS
    limiter.take("requests", Limit(3), "a")
    assert sorted(row["n"] for row in rows(store)) == [1, 1, 3]
    assert all(row["ttl"] > (T0 + MINUTE_MS) // 1000 for row in rows(store))


uses = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(min_value=0, max_value=30_000)),
    max_size=60,
)


@given(uses, st.integers(min_value=1, max_value=5))
def test_both_counters_answer_alike(steps: list[tuple[str, int]], per_window: int) -> None:
    """Whatever the order of uses and the clock's steps, memory and the table agree."""
    clock = FixedClock(T0)
    table = Limiter(TableCounters(InMemoryStore()), clock)
    process = Limiter(ProcessCounters(), clock)
    limit = Limit(per_window, window_ms=20_000)
    for subject, step in steps:
        clock.ms += step
        assert table.take("s", limit, subject) == process.take("s", limit, subject)


def test_process_counters_forget_windows_that_ended() -> None:
    counters = ProcessCounters()
    for minute in range(100):
        assert counters.take("requests", "a", window_at(T0 + minute * MINUTE_MS), 1)
    assert len(counters._windows) == 1
    assert counters.count("requests", "a", window_at(T0 + 99 * MINUTE_MS)) == 1
    assert counters.count("requests", "a", window_at(T0)) == 0


@pytest.mark.parametrize("kind", COUNTERS)
def test_concurrent_uses_never_pass_the_limit(kind: str) -> None:
    counters = COUNTERS[kind]()
    window = window_at(T0)
    with ThreadPoolExecutor(8) as pool:
        taken = list(pool.map(lambda _n: counters.take("r", "a", window, 50), range(200)))
    assert taken.count(True) == 50
    assert counters.count("r", "a", window) == 50


def test_a_limit_that_is_off_writes_nothing() -> None:
    store = InMemoryStore()
    limiter = Limiter(TableCounters(store), FixedClock(T0))
    assert all(limiter.take("requests", Limit(0), "a") is None for _ in range(50))
    RequestLimits(limiter, 0).admit("amk_x")
    assert store.requests == 0


class DownStore(InMemoryStore):
    def write(self, actions: Any) -> None:
        raise Unavailable("the table is throttling")


def test_a_table_that_cannot_count_admits() -> None:
    limiter = Limiter(TableCounters(DownStore()), FixedClock(T0))
    assert limiter.take("requests", Limit(1), "a") is None
    assert limiter.take("requests", Limit(1), "a") is None


def test_request_limits_raise_throttled_and_never_store_the_token() -> None:
    store, clock = InMemoryStore(), FixedClock(T0 + 20_000)
    limits = RequestLimits(Limiter(TableCounters(store), clock), 2)
    token = "amk_0123456789ab_" + "f" * 40
    limits.admit(token)
    limits.admit(token)
    with pytest.raises(RateLimited) as refused:
        limits.admit(token)
    assert (refused.value.status, refused.value.tag) == (429, "Throttled")
    assert refused.value.retry_after_s == 40
    assert "2 requests per minute" in refused.value.message
    assert not any(token in f"{key}{row}" for key, row in store.rows.items())


# --- the model-call quota where learning starts ------------------------------------------

REF = PoolRef("session", "o-1", "s-1")


def learning(quota_per_minute: int) -> tuple[LearningService, RecordingOrchestrator, FixedClock]:
    store, clock = InMemoryStore(), FixedClock(T0 + 10_000)
    orchestrator = RecordingOrchestrator()
    service = LearningService(
        store,
        ExecutionRepository(store, FakeCipher()),
        clock,
        SequentialIds(),
        orchestrator,
        Catalog({MODEL: ScriptedModel()}),
        [NotesPool(store)],
        quota=ModelCallQuota(Limiter(TableCounters(store), clock), quota_per_minute),
    )
    return service, orchestrator, clock


def test_starts_over_the_quota_are_skipped_with_a_note() -> None:
    service, orchestrator, clock = learning(2)
    assert service.start(REF, upto=1, reason="turn") == "started"
    assert service.start(REF, upto=2, reason="refresh") == "started"
    assert service.start(REF, upto=3, reason="turn") == "throttled"
    assert service.start(REF, upto=3, reason="refresh") == "throttled"
    assert len(orchestrator.started) == 2
    newest = service.executions(REF)
    assert [e.status for e in newest] == ["skipped", "skipped"]
    refresh, turn = newest
    assert "the next turn learns these items" in turn.note
    assert "free up in 50 s" in turn.note
    assert "ask again" in refresh.note
    # Another organization has its own quota; the next minute frees this one.
    other = PoolRef("session", "o-2", "s-9")
    assert service.start(other, upto=1, reason="turn") == "started"
    clock.ms = T0 + MINUTE_MS
    assert service.start(REF, upto=4, reason="turn") == "started"


def test_no_quota_when_it_is_off_or_no_workflow_runs() -> None:
    service, _orchestrator, _clock = learning(0)
    assert all(service.start(REF, upto=n, reason="turn") == "started" for n in range(1, 20))
    store, clock = InMemoryStore(), FixedClock(T0)
    idle = LearningService(
        store,
        ExecutionRepository(store, FakeCipher()),
        clock,
        SequentialIds(),
        None,
        Catalog({}),
        quota=ModelCallQuota(Limiter(TableCounters(store), clock), 1),
    )
    # Without a workflow nothing calls a model: nothing is counted.
    assert idle.start(REF, upto=1, reason="turn") == "skipped"
    assert store.query("LEARN#session#s-1", KeyRange(prefix="EXEC#")).records == []
    assert store.rows == {}
