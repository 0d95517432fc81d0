"""Time: the service's own CPU time apart from the time spent inside the embedded AWS (moto)."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


def median(samples: list[float]) -> float:
    return round(statistics.median(samples), 2) if samples else 0.0


class Emulator:
    """Time spent inside moto (the in-process AWS): what real AWS replaces with its own
    latency. In all threads together, as wall time while at least one call is inside (calls
    made side by side, e.g. the token read and the rate-limit count, overlap: summing them
    would count their time twice), and per thread (for work that runs beside other AWS
    traffic)."""

    _installed = False
    _total = 0.0
    _active = 0
    _since = 0.0
    _by_thread: dict[int, float] = {}
    # CPU seconds spent inside moto, per thread (its emulation is AWS's work, not ours).
    _cpu_by_thread: dict[int, float] = {}
    _lock = threading.Lock()

    @classmethod
    def install(cls) -> None:
        if cls._installed:
            return
        from moto.core.botocore_stubber import BotocoreStubber

        original = BotocoreStubber.__call__

        def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            cpu = time.thread_time()
            with cls._lock:
                if cls._active == 0:
                    cls._since = started
                cls._active += 1
            try:
                return original(self, *args, **kwargs)
            finally:
                ended = time.perf_counter()
                spent_cpu = time.thread_time() - cpu
                ident = threading.get_ident()
                with cls._lock:
                    cls._active -= 1
                    if cls._active == 0:
                        cls._total += ended - cls._since
                    cls._by_thread[ident] = cls._by_thread.get(ident, 0.0) + ended - started
                    cls._cpu_by_thread[ident] = cls._cpu_by_thread.get(ident, 0.0) + spent_cpu

        BotocoreStubber.__call__ = timed  # type: ignore[method-assign]
        cls._installed = True

    @classmethod
    @contextmanager
    def aside(cls) -> Iterator[None]:
        """The block is the benchmark's own work around a call (an uncounted lookup): its
        time outside moto is counted as the emulator's too, so no one's own time grows."""
        started = time.perf_counter()
        inside = cls.seconds(this_thread=True)
        cpu, inside_cpu = time.thread_time(), cls.cpu_seconds()
        try:
            yield
        finally:
            outside = time.perf_counter() - started - (cls.seconds(this_thread=True) - inside)
            outside_cpu = time.thread_time() - cpu - (cls.cpu_seconds() - inside_cpu)
            ident = threading.get_ident()
            with cls._lock:
                cls._total += outside
                cls._by_thread[ident] = cls._by_thread.get(ident, 0.0) + outside
                cls._cpu_by_thread[ident] = cls._cpu_by_thread.get(ident, 0.0) + outside_cpu

    @classmethod
    def cpu_seconds(cls) -> float:
        """CPU seconds this thread spent inside moto."""
        with cls._lock:
            return cls._cpu_by_thread.get(threading.get_ident(), 0.0)

    @classmethod
    def seconds(cls, *, this_thread: bool = False) -> float:
        with cls._lock:
            if this_thread:
                return cls._by_thread.get(threading.get_ident(), 0.0)
            busy = time.perf_counter() - cls._since if cls._active else 0.0
            return cls._total + busy


@dataclass
class Timed:
    ms: float
    emulator_ms: float
    # CPU time of the work itself outside moto, when measured (see `timed`).
    cpu_ms: float | None = None

    @property
    def own_ms(self) -> float:
        """The service's own time: its CPU time when measured (what a Lambda bills at its
        CPU share, bench/cost_model.py), else the wall time outside moto."""
        return self.cpu_ms if self.cpu_ms is not None else self.ms - self.emulator_ms


class ServedCpu:
    """An ASGI app that counts the CPU time each HTTP request takes in the thread serving
    it, outside moto: the service's own work, without the client's side, moto's emulation,
    or a workflow run the request started beside it in this process (on AWS those run
    elsewhere; a run's steps are counted apart). The app runs a request's use cases inline
    (`offload_blocking_calls` off, as in Lambda), so one thread serves it."""

    _lock = threading.Lock()
    total_ms = 0.0
    requests = 0

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        cpu, inside = time.thread_time(), Emulator.cpu_seconds()
        try:
            await self.app(scope, receive, send)
        finally:
            own = (time.thread_time() - cpu) - (Emulator.cpu_seconds() - inside)
            with ServedCpu._lock:
                ServedCpu.total_ms += own * 1000
                ServedCpu.requests += 1

    @classmethod
    def read(cls) -> tuple[float, int]:
        with cls._lock:
            return cls.total_ms, cls.requests


def served(app: Any) -> ServedCpu:
    """`app` counting its requests' own CPU time (`ServedCpu`), for `timed`."""
    return ServedCpu(app)


def scaling_row(
    spent: Timed, shot: Mapping[str, Any], decrypts: int, **size: Any
) -> dict[str, Any]:
    """One measured request of a scaling benchmark: its size (e.g. `entries=1000`), times,
    DynamoDB counts from an `AwsCalls.snapshot()` and the decrypts it made."""
    return {
        **size,
        "ms": round(spent.ms, 1),
        "own_ms": round(spent.own_ms, 1),
        "dynamodb_requests": shot["dynamodb"],
        "by_operation": shot["by_operation"],
        "items_read": shot["items_read"],
        "rru_estimate": shot["rru_estimate"],
        "decrypts": decrypts,
    }


def timed(action: Callable[[], Any], *, this_thread: bool = False) -> tuple[Any, Timed]:
    """Run `action`; its wall time and the part spent inside moto meanwhile (in any thread,
    or only in this one), and its own CPU time: with `this_thread`, this thread's outside
    moto; otherwise that of the requests a `served` app handled meanwhile, if any."""
    before = Emulator.seconds(this_thread=this_thread)
    served_before = ServedCpu.read()
    cpu, inside = time.thread_time(), Emulator.cpu_seconds()
    started = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - started
    spent = Emulator.seconds(this_thread=this_thread) - before
    cpu_ms: float | None = None
    if this_thread:
        cpu_ms = ((time.thread_time() - cpu) - (Emulator.cpu_seconds() - inside)) * 1000
    else:
        total, requests = ServedCpu.read()
        if requests > served_before[1]:
            cpu_ms = total - served_before[0]
    return result, Timed(elapsed * 1000, spent * 1000, cpu_ms)
