"""Small counters shared by the benchmarks: AWS calls by operation, cipher seals/opens."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any


class Calls:
    """Every AWS call made by clients built after `install`, by service and operation."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def install(self, botocore_session: Any) -> None:
        botocore_session.register("before-call", self._before)

    def _before(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        with self._lock:
            key = f"{service}.{operation}"
            self.counts[key] = self.counts.get(key, 0) + 1

    def reset(self) -> None:
        with self._lock:
            self.counts = {}

    def of(self, service: str) -> dict[str, int]:
        prefix = f"{service}."
        return {k.removeprefix(prefix): v for k, v in self.counts.items() if k.startswith(prefix)}

    def total(self, service: str) -> int:
        return sum(self.of(service).values())


class CountingCipher:
    """The real cipher, counting seals and opens (decrypts)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seals = 0
        self.opens = 0

    def seal(self, plaintext: str, *, scope: Mapping[str, str], row: str) -> bytes:
        self.seals += 1
        return bytes(self.inner.seal(plaintext, scope=scope, row=row))

    def open(self, blob: bytes, *, scope: Mapping[str, str], row: str) -> str:
        self.opens += 1
        return str(self.inner.open(blob, scope=scope, row=row))
