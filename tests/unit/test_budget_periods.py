"""Budget periods and the budget tick's events (domain/memory_bot.py), and the tick of
`make run` (infra/local/runner.Ticker)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from agent_memory.domain.memory_bot import budget_events, next_period_key, period_key
from infra.local.runner import Ticker


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_the_next_period_rolls_over_days_months_and_years() -> None:
    assert next_period_key("day", ms("2026-12-31T23:59:59")) == "day:2027-01-01"
    assert next_period_key("day", ms("2028-02-28T12:00:00")) == "day:2028-02-29"
    assert next_period_key("month", ms("2026-12-15T00:00:00")) == "month:2027-01"
    assert next_period_key("month", ms("2026-01-31T23:59:59")) == "month:2026-02"
    # The next period of now is the one the tick releases once it has begun.
    later = ms("2027-01-01T00:05:00")
    assert next_period_key("day", ms("2026-12-31T22:00:00")) == period_key("day", later)
    assert budget_events(later) == ("budget:day:2027-01-01", "budget:month:2027-01")


def test_the_local_ticker_runs_each_task_at_start_and_then_every_period() -> None:
    ran: list[str] = []
    twice = threading.Event()

    def task(event: dict[str, object]) -> None:
        ran.append(str(event["source"]))
        if len(ran) == 2:
            twice.set()
        if len(ran) == 1:
            raise RuntimeError("a failed tick is retried by the next one")

    ticker = Ticker([("Tick", 0.05, task)])
    ticker.start()
    try:
        assert twice.wait(2.0)
    finally:
        ticker.close()
    assert ran[:2] == ["aws.events", "aws.events"]
