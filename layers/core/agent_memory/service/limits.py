"""Per-caller limits: one mechanism, `Limiter`, and the two limits built on it.

- `RequestLimits`: `RATE_LIMIT_PER_MINUTE` requests per token (API.md "Local run"); over it
  a request is 429 `Throttled` with `Retry-After`. Checked after the token is known
  (api/deps.py), so a request with an unknown token writes nothing.
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

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.identity import hash_token
from agent_memory.domain.limits import Limit, RateLimited, Refused, retry_after_s, window_at
from agent_memory.persistence.limits import Counters
from agent_memory.ports import Clock

log = logging.getLogger(__name__)

REQUESTS_SCOPE = "requests"
MODEL_CALLS_SCOPE = "model-calls"
# Enough of the token's SHA-256 to tell tokens apart; the key never holds the token.
_SUBJECT_HEX = 32


class Limiter:
    """Fixed-window counting of uses per scope and subject (domain/limits.py), in the
    table (`BatchedCounters` over `TableCounters`) or, where one process serves everything,
    in memory."""

    def __init__(self, counters: Counters, clock: Clock) -> None:
        self._counters = counters
        self._clock = clock

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


class RequestLimits:
    """`per_minute` requests per token; 0 turns it off. The admin token counts too."""

    def __init__(self, limiter: Limiter, per_minute: int) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)

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
            raise RateLimited(self.limit.per_window, refused)


class ModelCallQuota:
    """`per_minute` model-invoking starts per organization; 0 turns it off."""

    def __init__(self, limiter: Limiter, per_minute: int) -> None:
        self._limiter = limiter
        self.limit = Limit(per_minute)

    def take(self, org_id: str) -> Refused | None:
        """Count one model call of `org_id`; `Refused` when its minute is spent."""
        return self._limiter.take(MODEL_CALLS_SCOPE, self.limit, org_id)
