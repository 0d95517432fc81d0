"""Rate limits and quotas: fixed windows, what a refusal tells the caller, the notes clients see.

A limit allows `per_window` uses of something (requests of one token, model calls of one
organization) in each window of `window_ms`. Windows are fixed and aligned on the epoch
(every minute starts at a multiple of 60,000 ms), so every process computes the same
window from the clock alone and one counter row per subject and window suffices.
ADR 0047.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.domain.errors import Throttled

MINUTE_MS = 60_000
# A counter row outlives its window by this much (DynamoDB deletes expired rows late anyway;
# the window's arithmetic never reads a row of a past window).
COUNTER_GRACE_S = 120


@dataclass(frozen=True)
class Limit:
    """`per_window` uses in each window of `window_ms`; 0 (or less) turns the limit off."""

    per_window: int
    window_ms: int = MINUTE_MS

    @property
    def enabled(self) -> bool:
        return self.per_window > 0


@dataclass(frozen=True)
class Window:
    """One fixed window: its number since the epoch and where it starts and ends (ms)."""

    index: int
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class Refused:
    """Over the limit: the window frees up in `retry_after_s` seconds."""

    retry_after_s: int


def window_at(now_ms: int, window_ms: int = MINUTE_MS) -> Window:
    """The window that holds `now_ms`: `start_ms <= now_ms < end_ms`."""
    index = now_ms // window_ms
    return Window(index, index * window_ms, (index + 1) * window_ms)


def retry_after_s(now_ms: int, window: Window) -> int:
    """Whole seconds until `window` ends, rounded up (at least 1: `Retry-After: 0` would
    invite an immediate retry that is still refused)."""
    remaining_ms = max(window.end_ms - now_ms, 0)
    return max(1, -(-remaining_ms // 1000))


def expires_at_s(window: Window) -> int:
    """The counter row's `ttl` (epoch seconds): a little after its window ends."""
    return -(-window.end_ms // 1000) + COUNTER_GRACE_S


class RateLimited(Throttled):
    """429 `Throttled` with when to retry (`Retry-After`): `why` is the limit passed."""

    def __init__(self, why: str, refused: Refused) -> None:
        super().__init__(f"{why}; retry after {refused.retry_after_s} s")
        self.retry_after_s = refused.retry_after_s


def too_many_requests(per_window: int, refused: Refused) -> RateLimited:
    return RateLimited(f"over {per_window} requests per minute for this token", refused)


def too_many_failures(per_window: int, refused: Refused) -> RateLimited:
    why = f"over {per_window} failed authentications per minute from this address"
    return RateLimited(why, refused)


def quota_note(reason: str, refused: Refused) -> str:
    """Why a learning run did not start because the organization's model calls for this
    minute are spent, as clients read it on the execution (`note`). A turn's items stay
    unprocessed, so the next turn learns them; any other start is the caller's to repeat."""
    spent = (
        "the organization's model calls for this minute are spent"
        f" (ORG_MODEL_CALLS_PER_MINUTE); they free up in {refused.retry_after_s} s"
    )
    if reason == "turn":
        return f"{spent}; the next turn learns these items"
    return f"{spent}; ask again then"
