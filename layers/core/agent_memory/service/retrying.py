"""The one retry of the service: read, decide, write conditionally; on a lost race, again.

Every use case that writes on what it read (a Turn without `expected`, a bot memory change,
a learning apply, a link of a Bot) runs its attempt through `until_it_lands`. An attempt
loses a race when its conditional write raises `WriteConflict` that `lost` recognises as
another writer's (any other condition is the caller's error and passes through), or when it
answers `AGAIN` (its read saw a state moving under it). Retries back off with full jitter (a
random wait up to a doubling ceiling), so writers that collided spread out instead of
colliding again in step; they stop when the time budget is spent or after `tries` attempts,
and then raise `gave_up()` (a 409 or 503 for the client, a retried step for a workflow).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from agent_memory.domain.errors import WriteConflict

T = TypeVar("T")


class Again:
    """What an attempt answers when its read saw the state move: read and decide again."""


AGAIN: Final = Again()


def any_race(_error: WriteConflict) -> bool:
    return True


@dataclass(frozen=True)
class Backoff:
    """How long a losing writer waits before it reads again, and when it gives up."""

    first_s: float = 0.004
    ceiling_s: float = 0.128
    # Far below the API function's 29 s timeout; only a writer that keeps losing for this
    # long (hundreds of winners before it) gives up.
    budget_s: float = 8.0

    def wait(self, retry: int) -> float:
        """The wait before retry `retry` (1-based): uniform in [0, min(ceiling, first * 2^n))."""
        # Jitter spreads writers apart; it guards nothing, so any generator serves.
        return random.uniform(0.0, min(self.ceiling_s, self.first_s * 2**retry))  # noqa: S311


BACKOFF = Backoff()


def until_it_lands(
    attempt: Callable[[], T | Again],
    gave_up: Callable[[], Exception],
    *,
    tries: int | None = None,
    lost: Callable[[WriteConflict], bool] = any_race,
    backoff: Backoff = BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """Run `attempt` until it answers something other than `AGAIN` without losing a race.

    `tries` bounds the attempts (a use case whose caller retries itself, such as a workflow
    step, gives up early); without it only `backoff.budget_s` does.
    """
    deadline = monotonic() + backoff.budget_s
    retries = 0
    while True:
        try:
            result = attempt()
        except WriteConflict as error:
            if not lost(error):
                raise
        else:
            if not isinstance(result, Again):
                return result
        retries += 1
        wait = backoff.wait(retries)
        if (tries is not None and retries >= tries) or monotonic() + wait > deadline:
            raise gave_up() from None
        sleep(wait)


def once(attempt: Callable[[], T], gave_up: Callable[[], Exception]) -> T:
    """Run `attempt` once: a write with the client's precondition is not retried, a lost
    race is `gave_up()` (the client's state is stale)."""
    try:
        return attempt()
    except WriteConflict:
        raise gave_up() from None
