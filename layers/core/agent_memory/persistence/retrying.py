"""The one retry of the service: read, decide, write conditionally; on a lost race, again.

An attempt loses when its write raises a `WriteConflict` that `lost` recognises as another
writer's (others pass through) or when it answers `AGAIN`. Retries back off with full jitter
until the time budget or `tries` is spent, then raise `gave_up()`. It lives beside the
repositories, the lowest layer that may wait, so services and repositories retry alike.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Final, TypeVar

from agent_memory.domain.errors import WriteConflict

T = TypeVar("T")


class Again:
    """What an attempt answers when its read saw the state move: read and decide again."""


AGAIN: Final = Again()


def any_race(_error: WriteConflict) -> bool:
    return True


# A losing writer waits up to FIRST_S * 2**retry (at most CEILING_S) before it reads again,
# and gives up past BUDGET_S, far below the API function's 29 s timeout.
FIRST_S = 0.004
CEILING_S = 0.128
BUDGET_S = 8.0
# Jitter spreads writers apart; it guards nothing, so any generator serves. Its own one: it
# neither draws from nor moves the process's global `random` (a seeded sequence, a property
# test's generator).
_jitter = random.Random()  # noqa: S311


def until_it_lands(
    attempt: Callable[[], T | Again],
    gave_up: Callable[[], Exception],
    *,
    tries: int | None = None,
    lost: Callable[[WriteConflict], bool] = any_race,
) -> T:
    """Run `attempt` until it answers other than `AGAIN` without losing a race."""
    deadline = time.monotonic() + BUDGET_S
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
        wait = _jitter.uniform(0.0, min(CEILING_S, FIRST_S * 2**retries))
        if (tries is not None and retries >= tries) or time.monotonic() + wait > deadline:
            raise gave_up() from None
        time.sleep(wait)


def once(attempt: Callable[[], T], gave_up: Callable[[], Exception]) -> T:
    """Run `attempt` once (the client's precondition): a lost race is `gave_up()`."""
    try:
        return attempt()
    except WriteConflict:
        raise gave_up() from None
