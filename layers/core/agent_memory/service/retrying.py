"""Writes without a client's precondition: re-read and retry until they land.

A Turn without `expected`/`revision`, a PATCH or DELETE of an agent memory and a Fork ask
for no state: when another writer wins the race (`WriteConflict`), the use case reads the
newest state and writes again. Retries back off with full jitter (a random wait up to a
doubling ceiling), so writers that collided spread out instead of colliding again in step,
and they stop only when a time budget is spent, not after a count that 20 concurrent
writers use up (docs/decisions.md, "Concurrent writers").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from agent_memory.domain.errors import Conflict, WriteConflict

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """How long a losing writer waits before it reads again, and when it gives up."""

    first_s: float = 0.004
    ceiling_s: float = 0.128
    # Far below the API function's 29 s timeout; only a writer that keeps losing for this
    # long (hundreds of winners before it) answers 409.
    budget_s: float = 8.0

    def wait(self, retry: int) -> float:
        """The wait before retry `retry` (1-based): uniform in [0, min(ceiling, first * 2^n))."""
        # Jitter spreads writers apart; it guards nothing, so any generator serves.
        return random.uniform(0.0, min(self.ceiling_s, self.first_s * 2**retry))  # noqa: S311


BACKOFF = Backoff()


def until_it_lands(
    attempt: Callable[[], T],
    gave_up: Callable[[], Conflict],
    *,
    backoff: Backoff = BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """Run `attempt` (a read, then a conditional write) until its write holds.

    A `WriteConflict` means another writer changed the object first: wait a jittered moment
    and run `attempt` again on what it reads then. Once `backoff.budget_s` is spent, raise
    `gave_up()` (a 409 for the client). Any other error passes through at once.
    """
    deadline = monotonic() + backoff.budget_s
    retries = 0
    while True:
        try:
            return attempt()
        except WriteConflict:
            retries += 1
            wait = backoff.wait(retries)
            if monotonic() + wait > deadline:
                raise gave_up() from None
        sleep(wait)


def once(attempt: Callable[[], T], gave_up: Callable[[], Conflict]) -> T:
    """Run `attempt` once: a write with the client's precondition is not retried, a lost
    race is `gave_up()` (the client's state is stale)."""
    try:
        return attempt()
    except WriteConflict:
        raise gave_up() from None
