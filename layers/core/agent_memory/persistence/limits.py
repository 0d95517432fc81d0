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

`BatchedCounters` (AWS, in front of `TableCounters`): far below a limit, a process writes its
uses in batches; from half the limit on, every use is one exact conditional write as above.
Its docstring gives the rule and the bound (ADR 0047).

The subject is hashed by the caller when it is a secret (a token): never a token here.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.limits import Window, expires_at_s
from agent_memory.persistence import keys
from agent_memory.persistence.keys import COUNTER_SK
from agent_memory.persistence.rows import StoreRows
from agent_memory.ports import AbsentOrLessThan, Update

T = TypeVar("T")
# What a process keeps per window: window end (ms) -> (scope, subject, window start) -> T.
Windows = dict[int, dict[tuple[str, str, int], T]]

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
    return f"{keys.RATE_PREFIX}{scope}#{subject}#{window.index}"


class TableCounters(StoreRows):
    """Counts in the single table, shared by every process (one conditional write a use)."""

    def take(self, scope: str, subject: str, window: Window, limit: int) -> bool:
        return self.add(scope, subject, window, 1, limit)

    def add(self, scope: str, subject: str, window: Window, uses: int, at_most: int) -> bool:
        """Count `uses` uses in ONE conditional write if the count stays at most `at_most`
        (`n + uses <= at_most`); False, with nothing written, when it would not."""
        if uses > at_most:
            # `AbsentOr...` passes on a missing row: the ceiling is checked here instead.
            return False
        update = Update(
            counter_pk(scope, subject, window),
            COUNTER_SK,
            set={"ttl": expires_at_s(window)},
            add={"n": uses},
            condition=AbsentOrLessThan("n", at_most - uses + 1, name=WINDOW_FULL),
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
        self._windows: Windows[int] = {}
        self._lock = threading.Lock()

    def take(self, scope: str, subject: str, window: Window, limit: int) -> bool:
        with self._lock:
            counts = _of_window(self._windows, window)
            key = (scope, subject, window.start_ms)
            used = counts.get(key, 0)
            if used >= limit:
                return False
            counts[key] = used + 1
            return True

    def count(self, scope: str, subject: str, window: Window) -> int:
        with self._lock:
            return self._windows.get(window.end_ms, {}).get((scope, subject, window.start_ms), 0)


# Uses a process may admit unwritten between two writes of one window, plus the write's own.
BATCH = 8
# A limit is batched from this many batches on; below, every use is written exactly, as by
# `TableCounters`: a batch would save a few writes a window where exactness matters most.
BATCHES_PER_LIMIT = 4


@dataclass
class _Tally:
    """What this process knows of one scope, subject and window."""

    # Uses this process has written in the window: the table holds at least as many.
    written: int = 0
    # Uses admitted and not written yet: they ride on the window's next write.
    pending: int = 0
    # The window passed half its limit: every use is written, under the limit itself.
    exact: bool = False
    # One use at a time per tally (a process decides and writes in order, as a Lambda does).
    lock: threading.Lock = field(default_factory=threading.Lock)


class BatchedCounters:
    """`TableCounters` that write in batches while a window is far below its limit.

    Per scope, subject and window this process keeps a tally. A use is WRITTEN (one
    conditional UpdateItem adding the pending uses and itself) when the process has not yet
    written in this window, when it would make `BATCH` uses, or when what the process has
    written plus its pending uses plus this one would pass half the limit. Otherwise it is
    admitted and only counted as pending. A write below half the limit is conditioned on the
    table's count staying at most half (`n + uses <= limit // 2`): the store's write returns
    no values, so this condition is how a process learns that other processes took the
    window past half. When it fails, or the process's own uses reach half, the window turns
    exact for this process: every use is then one write under the limit (`n + uses <=
    limit`), as `TableCounters` does, and the first use over the limit is refused.

    Bound: the table never counts more than the limit, and each process holds at most
    `BATCH - 1` admitted uses it has not written (pending at the window's end are lost, and
    so are those of an exact write that is refused). With P warm processes a window admits
    at most `limit + P * (BATCH - 1)` uses, and one process alone is exact (it knows the
    table's count). Limits under `BATCHES_PER_LIMIT * BATCH` (32) are always written
    exactly. A write the table cannot take (`Unavailable`) raises as before (the `Limiter`
    admits) and its uses go uncounted. Memory: tallies of windows that ended are dropped
    when a later window starts.
    """

    def __init__(self, table: TableCounters) -> None:
        self._table = table
        self._windows: Windows[_Tally] = {}
        self._lock = threading.Lock()

    def take(self, scope: str, subject: str, window: Window, limit: int) -> bool:
        if limit < BATCHES_PER_LIMIT * BATCH:
            return self._table.take(scope, subject, window, limit)
        half = limit // 2
        tally = self._tally(scope, subject, window)
        with tally.lock:
            after = tally.written + tally.pending + 1
            if (
                not tally.exact
                and tally.written > 0
                and tally.pending + 1 < BATCH
                and after <= half
            ):
                tally.pending += 1
                return True
            uses, tally.pending = tally.pending + 1, 0
            below_half = not tally.exact and after <= half
            if below_half and self._table.add(scope, subject, window, uses, half):
                tally.written += uses
                return True
            # Past half (by this process's count or the table's): every use is exact.
            tally.exact = True
            if self._table.add(scope, subject, window, uses, limit):
                tally.written += uses
                return True
            return False

    def count(self, scope: str, subject: str, window: Window) -> int:
        """Uses the table counted in `window` plus those this process has not written yet."""
        with self._lock:
            tally = self._windows.get(window.end_ms, {}).get((scope, subject, window.start_ms))
            pending = tally.pending if tally else 0
        return self._table.count(scope, subject, window) + pending

    def _tally(self, scope: str, subject: str, window: Window) -> _Tally:
        with self._lock:
            tallies = _of_window(self._windows, window)
            return tallies.setdefault((scope, subject, window.start_ms), _Tally())


def _of_window(windows: Windows[T], window: Window) -> dict[tuple[str, str, int], T]:
    """What `windows` keeps of `window`; a new window drops every window that ended before
    it started. The caller holds its lock."""
    kept = windows.get(window.end_ms)
    if kept is None:
        for end in [end for end in windows if end <= window.start_ms]:
            del windows[end]
        kept = windows[window.end_ms] = {}
    return kept
