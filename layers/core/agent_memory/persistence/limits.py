"""Where fixed-window limits keep their counts: the table (many processes) or this process.

`TableCounters` (AWS, the embedded AWS): one row per limit, subject and window.
- pk `RATE#<scope>#<subject>#<window index>`, sk `COUNT`: `n` uses counted so far, `ttl` a
  couple of minutes after the window ends. A use is ONE UpdateItem (`add n 1`) under
  `AbsentOrLessThan(n, limit)`: the window's first use creates the row, a use at the limit
  fails its condition, which is the refusal (a failed conditional write still costs its
  write unit, and it writes nothing).
- A row per window rather than one row per subject that is reset: resetting would need a
  read or a second write, and a past window's row is never read again (TTL removes it).

`ProcessCounters` (`make run`: one process serves every request of its data directory):
the same counts in memory, exact there and free (the SQLite table would fsync a row per
request). Never for Lambda, where each instance would count only its own requests.

The subject is hashed by the caller when it is a secret (a token): never a token here.
"""

from __future__ import annotations

import threading
from typing import Protocol

from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.limits import Window, expires_at_s
from agent_memory.ports import AbsentOrLessThan, Store, Update

COUNTER_SK = "COUNT"
# The name of the counter's condition: a conflict on it means the window is full.
WINDOW_FULL = "limit-window-full"


class Counters(Protocol):
    def take(self, scope: str, subject: str, window: Window, limit: int) -> bool:
        """Count one use if fewer than `limit` were counted in `window`; False when full."""
        ...

    def count(self, scope: str, subject: str, window: Window) -> int:
        """Uses counted in `window` (0 before its first)."""
        ...


def counter_pk(scope: str, subject: str, window: Window) -> str:
    return f"RATE#{scope}#{subject}#{window.index}"


class TableCounters:
    """Counts in the single table, shared by every process (one conditional write a use)."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def take(self, scope: str, subject: str, window: Window, limit: int) -> bool:
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
        row = self._store.get(counter_pk(scope, subject, window), COUNTER_SK)
        return int(row["n"]) if row else 0


class ProcessCounters:
    """Counts in this process's memory; windows that ended are dropped as time moves on."""

    def __init__(self) -> None:
        # window end (ms) -> (scope, subject, window start) -> uses
        self._windows: dict[int, dict[tuple[str, str, int], int]] = {}
        self._lock = threading.Lock()

    def take(self, scope: str, subject: str, window: Window, limit: int) -> bool:
        with self._lock:
            counts = self._windows.get(window.end_ms)
            if counts is None:
                # A new window: every window that ended before it started is past.
                for end in [end for end in self._windows if end <= window.start_ms]:
                    del self._windows[end]
                counts = self._windows[window.end_ms] = {}
            key = (scope, subject, window.start_ms)
            used = counts.get(key, 0)
            if used >= limit:
                return False
            counts[key] = used + 1
            return True

    def count(self, scope: str, subject: str, window: Window) -> int:
        with self._lock:
            return self._windows.get(window.end_ms, {}).get((scope, subject, window.start_ms), 0)
