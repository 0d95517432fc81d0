"""The one retry of the service: read, decide, write conditionally; on a lost race, again.

An attempt loses when its write raises a `WriteConflict` that `lost` recognises as another
writer's (others pass through) or when it answers `AGAIN`. Retries back off with full jitter
until the time budget or `tries` is spent, then raise `gave_up()`.
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
    # Far below the API function's 29 s timeout.
    budget_s: float = 8.0

    def wait(self, retry: int) -> float:
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
    """Run `attempt` until it answers other than `AGAIN` without losing a race."""
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
    """Run `attempt` once (the client's precondition): a lost race is `gave_up()`."""
    try:
        return attempt()
    except WriteConflict:
        raise gave_up() from None
