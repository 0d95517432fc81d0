"""Real clock and id generator (the fakes live in tests/support/in_memory.py)."""

from __future__ import annotations

import secrets
import time


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class RandomIds:
    """Ids that sort by creation time: a ms timestamp in base 36, then random bits."""

    def new(self, prefix: str) -> str:
        stamp = _base36(time.time_ns() // 1_000_000).rjust(9, "0")
        return f"{prefix}{stamp}{secrets.token_hex(5)}"


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while value:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
    return out or "0"
