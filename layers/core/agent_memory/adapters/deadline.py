"""The one deadline every model adapter keeps: a call answered after it is a `timeout`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from agent_memory.ports.models import ModelFailure

T = TypeVar("T")


def late(who: str, deadline_s: float) -> ModelFailure:
    """The retryable `timeout` of a call that `who` did not answer within `deadline_s`."""
    return ModelFailure("timeout", f"no answer from {who} within {deadline_s:g} s", retryable=True)


def within_deadline(call: Callable[[], T], deadline_s: float, who: str) -> tuple[T, float]:
    """`call()`'s answer and its latency in ms. A deadline already passed is not called; an
    answer after it is `late` (a client's timeout bounds each read, not the whole call)."""
    if deadline_s <= 0:
        raise late(who, deadline_s)
    started = time.monotonic()
    answer = call()
    latency_s = time.monotonic() - started
    if latency_s > deadline_s:
        raise late(who, deadline_s)
    return answer, latency_s * 1000
