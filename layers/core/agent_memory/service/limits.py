"""Per-caller limits: one mechanism, `Limiter`, and the limits built on it.

When the table cannot count, the use is admitted: a limiter never makes the service less
available than its table already is.
"""

from __future__ import annotations

import logging
import threading

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.identity import hash_token
from agent_memory.domain.limits import (
    Limit,
    Refused,
    retry_after_s,
    too_many_failures,
    too_many_requests,
    window_at,
)
from agent_memory.persistence.limits import Counters
from agent_memory.ports import Clock

log = logging.getLogger(__name__)

REQUESTS_SCOPE = "requests"
MODEL_CALLS_SCOPE = "model-calls"
AUTH_FAILURES_SCOPE = "auth-failures"
# Past this many refused addresses, the oldest is forgotten (the table still refuses it).
KNOWN_REFUSED = 4096
# Enough of the token's SHA-256 to tell tokens apart; the key never holds the token.
_SUBJECT_HEX = 32


class Limiter:
    """Fixed-window counting of uses per scope and subject (domain/limits.py)."""

    def __init__(self, counters: Counters, clock: Clock) -> None:
        self._counters = counters
        self._clock = clock

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def used(self, scope: str, limit: Limit, subject: str) -> int:
        """Uses in the current window (0 when the table cannot answer)."""
        try:
            return self._counters.count(scope, subject, window_at(self.now_ms(), limit.window_ms))
        except Unavailable:
            return 0

    def take(self, scope: str, limit: Limit, subject: str) -> Refused | None:
        """Count one use; a `Refused` when its window is full. An off limit writes nothing."""
        if not limit.enabled:
            return None
        now = self._clock.now_ms()
        window = window_at(now, limit.window_ms)
        try:
            if self._counters.take(scope, subject, window, limit.per_window):
                return None
        except Unavailable:
            log.warning("limit not counted: the table is unavailable", extra={"scope": scope})
            return None
        return Refused(retry_after_s(now, window))


class FailedAuthentications:
    """`per_minute` failed bearer-token checks per source address; 0 turns it off.

    A full address is refused every token this process has not found good before, with no
    read (a right guess would not tell); people sharing the address with a guesser go on
    working (docs/adr/0010).
    """

    def __init__(self, limiter: Limiter, per_minute: int) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)
        self._refused: dict[str, int] = {}  # address -> end of its full minute (ms)
        self._lock = threading.Lock()

    def check(self, source: str) -> None:
        """Raise RateLimited when this process knows `source`'s minute is full (no I/O)."""
        if not self.limit.enabled:
            return
        now = self._limiter.now_ms()
        with self._lock:
            until = self._refused.get(source)
            if until is not None and until <= now:
                del self._refused[source]
                until = None
        if until is not None:
            window = window_at(now, self.limit.window_ms)
            raise too_many_failures(self.limit.per_window, Refused(retry_after_s(now, window)))

    def failed(self, source: str) -> None:
        """Count one failed check; RateLimited when its minute was already full."""
        if not self.limit.enabled:
            return
        refused = self._limiter.take(AUTH_FAILURES_SCOPE, self.limit, source)
        # The failure that fills the minute is a 401 still; the next request is refused here.
        full = refused is not None or (
            self._limiter.used(AUTH_FAILURES_SCOPE, self.limit, source) >= self.limit.per_window
        )
        if full:
            window = window_at(self._limiter.now_ms(), self.limit.window_ms)
            self._remember(source, window.end_ms)
        if refused is not None:
            raise too_many_failures(self.limit.per_window, refused)

    def _remember(self, source: str, until_ms: int) -> None:
        with self._lock:
            if source not in self._refused and len(self._refused) >= KNOWN_REFUSED:
                self._refused.pop(next(iter(self._refused)))
            self._refused[source] = until_ms


class RequestLimits:
    """Requests per token (the admin's too) and failed authentications per address."""

    def __init__(
        self,
        limiter: Limiter,
        per_minute: int,
        failures_per_minute: int = 0,
        key_per_minute: int = 0,
    ) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)
        # A service key serves many people: its own limit, beside each person's.
        self.key_limit = Limit(key_per_minute)
        self.failures = FailedAuthentications(limiter, failures_per_minute)

    def admit(self, token: str) -> None:
        """Count one request of an authenticated `token`; RateLimited when its minute is full."""
        self._take(self.limit, token)

    def admit_key(self, key: str) -> None:
        self._take(self.key_limit, key)

    def _take(self, limit: Limit, token: str) -> None:
        subject = hash_token(token)[:_SUBJECT_HEX]
        refused = self._limiter.take(REQUESTS_SCOPE, limit, subject)
        if refused is not None:
            raise too_many_requests(limit.per_window, refused)


class ModelCallQuota:
    """`per_minute` model-invoking starts per organization; 0 turns it off."""

    def __init__(self, limiter: Limiter, per_minute: int) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)

    def take(self, org_id: str) -> Refused | None:
        return self._limiter.take(MODEL_CALLS_SCOPE, self.limit, org_id)
