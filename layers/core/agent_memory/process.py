"""What a Lambda process builds once and keeps for its whole life (the handler's import,
the first wiring of the services): built with the cyclic collector paused, then frozen, as
the collector's passes over objects that live as long as the process find almost nothing to
free (ADR 0071)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.service.registry import Services


@contextmanager
def built_for_good() -> Iterator[None]:
    """No collection while the block builds what the process keeps; then freeze what it
    built, and collect again if the collector was on before."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


class ColdStart:
    """Services built on first use and kept (a Lambda cold start), rebuilt after `reset()`.
    Tests reset it for each fresh embedded AWS (a new KMS key), or pin the services they
    built with `use(services)`."""

    def __init__(self, factory: Callable[[], Services]) -> None:
        self._factory = factory
        self._built: Services | None = None
        self._lock = threading.Lock()
        # Only the process's first build is kept for good: later builds (tests' resets)
        # collect as usual, so what they drop is freed.
        self._first = True

    def __call__(self) -> Services:
        built = self._built
        if built is None:
            with self._lock:
                if self._built is None:
                    self._built = self._build()
                built = self._built
        return built

    def _build(self) -> Services:
        if not self._first:
            return self._factory()
        with built_for_good():
            built = self._factory()
        self._first = False
        return built

    def reset(self) -> None:
        with self._lock:
            self._built = None

    def use(self, services: Services) -> None:
        with self._lock:
            self._built = services
