"""Per-caller limits: one mechanism, `Limiter`, and the two limits built on it.

- `RequestLimits`: `RATE_LIMIT_PER_MINUTE` requests per token (API.md "Local run"); over it
  a request is 429 `Throttled` with `Retry-After`. Checked after the token is known
  (api/deps.py), so a request with an unknown token writes nothing.
- `FailedAuthentications`: `AUTH_FAILURES_PER_MINUTE` failed bearer-token checks per source
  address; past them a token from the address that this process has not found good before is
  429 `Throttled` with `Retry-After` until the minute ends, before it is looked up
  (docs/adr/0010).
- `ModelCallQuota`: `ORG_MODEL_CALLS_PER_MINUTE` model-invoking starts per organization,
  taken where learning starts (`LearningService.start`); over it, the run is skipped with a
  note and no request fails.

A later route (confide, context) limits something new with `Limiter.take(scope, limit,
subject)` and its own scope name. On AWS the counts are `BatchedCounters`
(persistence/limits.py): far below a limit a process writes one conditional write per batch
of uses, from half the limit on one per use, so a window admits at most `limit + P x
(batch - 1)` uses with P warm processes, and one process is exact. Both limits use the same
rule: the quota guards an organization's model-call rate, not its money (the Bot's budget
does that), and near the quota it is as exact as the request limit. When the table cannot
count (an outage), the use is admitted: a limiter never makes the service less available
than its table already is.
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
# Addresses this process remembers as refused until their minute ends; past this many, the
# oldest is forgotten (its next guess is counted in the table again, and refused there).
KNOWN_REFUSED = 4096
# Enough of the token's SHA-256 to tell tokens apart; the key never holds the token.
_SUBJECT_HEX = 32


class Limiter:
    """Fixed-window counting of uses per scope and subject (domain/limits.py), in the
    table (`BatchedCounters` over `TableCounters`) or, where one process serves everything,
    in memory."""

    def __init__(self, counters: Counters, clock: Clock) -> None:
        self._counters = counters
        self._clock = clock

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def used(self, scope: str, limit: Limit, subject: str) -> int:
        """Uses of `subject` counted in the current window of `limit` (0 when off or when
        the table cannot answer)."""
        if not limit.enabled:
            return 0
        try:
            return self._counters.count(scope, subject, window_at(self.now_ms(), limit.window_ms))
        except Unavailable:
            return 0

    def take(self, scope: str, limit: Limit, subject: str) -> Refused | None:
        """Count one use of `subject` under `limit`; a `Refused` (with when to retry) when
        its window is full. An off limit counts nothing and writes nothing."""
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

    A failure is counted with the other limits' counters (`Limiter`, one row per address and
    minute in the table on AWS). When an address's minute is full, this process remembers it
    until the minute ends and refuses every token from it that the process has not found good
    before, with no read at all (a guess that happened to be right would not tell). Another
    process learns it from the table at its next failed check from that address (its count
    is refused), so an address gets at most `per_minute` answers of 401 a minute and each
    warm process checks at most one more of its unknown tokens. A token the process has
    already found good is never refused here: people who share an address (an office, the
    MCP function) with a guesser go on working. A good token is never counted, and a request
    without a token is no failed check.
    """

    def __init__(self, limiter: Limiter, per_minute: int) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)
        self._refused: dict[str, int] = {}  # address -> end of its full minute (ms)
        self._lock = threading.Lock()

    def check(self, source: str) -> None:
        """Raise RateLimited (429) when this process knows `source`'s minute is full (no I/O)."""
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
        """Count one failed check from `source`; raise RateLimited (429) when its minute was
        already full (the caller's 401 otherwise stands)."""
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
    """What a request meets at the door: `per_minute` requests per token (the admin token
    counts too) and `failures_per_minute` failed authentications per address; 0 turns
    either off."""

    def __init__(self, limiter: Limiter, per_minute: int, failures_per_minute: int = 0) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)
        self.failures = FailedAuthentications(limiter, failures_per_minute)

    @property
    def enabled(self) -> bool:
        return self.limit.enabled

    def admit(self, token: str) -> None:
        """Count one request of an authenticated `token`; raises RateLimited (429) when the
        token's minute is full."""
        if not self.limit.enabled:
            return
        subject = hash_token(token)[:_SUBJECT_HEX]
        refused = self._limiter.take(REQUESTS_SCOPE, self.limit, subject)
        if refused is not None:
            raise too_many_requests(self.limit.per_window, refused)


class ModelCallQuota:
    """`per_minute` model-invoking starts per organization; 0 turns it off."""

    def __init__(self, limiter: Limiter, per_minute: int) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)

    def take(self, org_id: str) -> Refused | None:
        """Count one model call of `org_id`; `Refused` when its minute is spent."""
        return self._limiter.take(MODEL_CALLS_SCOPE, self.limit, org_id)
