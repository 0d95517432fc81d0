"""Counter rows of fixed-window limits: one row per limit, subject and window.

- pk `RATE#<scope>#<subject>#<window index>`, sk `COUNT`: `n` uses counted so far, `ttl` a
  couple of minutes after the window ends. A use is ONE UpdateItem (`add n 1`) under
  `AbsentOrLessThan(n, limit)`: the window's first use creates the row, a use at the limit
  fails its condition, which is the refusal (a failed conditional write still costs its
  write unit, and it writes nothing).
- A row per window rather than one row per subject that is reset: resetting would need a
  read or a second write, and a past window's row is never read again (TTL removes it).
- The subject is hashed by the caller when it is a secret (a token): never a token here.
"""

from __future__ import annotations

from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.limits import Window, expires_at_s
from agent_memory.ports import AbsentOrLessThan, Store, Update

COUNTER_SK = "COUNT"
# The name of the counter's condition: a conflict on it means the window is full.
WINDOW_FULL = "limit-window-full"


def counter_pk(scope: str, subject: str, window: Window) -> str:
    return f"RATE#{scope}#{subject}#{window.index}"


class LimitCounters:
    """Counts uses per scope, subject and window in the single table."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def take(self, scope: str, subject: str, window: Window, limit: int) -> bool:
        """Count one use if fewer than `limit` were counted in `window`; False when full."""
        update = Update(
            counter_pk(scope, subject, window),
            COUNTER_SK,
            set={"ttl": expires_at_s(window)},
            add={"n": 1},
            condition=AbsentOrLessThan("n", limit, name=WINDOW_FULL),
        )
        try:
            self._store.write([update])
        except WriteConflict as conflict:
            if conflict.condition == WINDOW_FULL:
                return False
            raise
        return True

    def count(self, scope: str, subject: str, window: Window) -> int:
        """Uses counted in `window` (0 before its first): for tests and operators."""
        row = self._store.get(counter_pk(scope, subject, window), COUNTER_SK)
        return int(row["n"]) if row else 0
