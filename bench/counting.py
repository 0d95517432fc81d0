"""Counters of the benchmarks: AWS calls by operation (with items read and request units),
round trips, cipher seals and opens, model and embedder calls."""

from __future__ import annotations

import functools
import json
import math
import threading
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.sizes import (
    READ_UNIT,
    ItemSizes,
    checked_items,
    item_size,
    json_copy,
    request_units,
    write_units,
    written_items,
)
from bench.timing import Emulator


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


def _bench_work(hook: Callable[..., None]) -> Callable[..., None]:
    """A botocore hook of the benchmark's own bookkeeping: its time is counted as the
    emulator's (`Emulator.aside`), not as the service's own CPU time, which the cost model
    bills as Lambda time."""

    @functools.wraps(hook)
    def counted_aside(*args: Any, **kwargs: Any) -> None:
        with Emulator.aside():
            hook(*args, **kwargs)

    return counted_aside


class AwsCalls:
    """AWS calls by service and operation, DynamoDB items read and request units.

    Units follow DynamoDB's published rules ("Capacity unit consumption for write
    operations", DynamoDB Developer Guide): a consistent read is 1 RRU per 4 KB (a Query
    sums the items it reads), an index read half that, a write 1 WRU per 1 KB of the item,
    and every action of a transaction twice as much. A Put that replaces an item, an
    Update and a Delete are billed on the LARGER of the item's size before and after (a
    refused conditional write too): the request does not show it, so against the embedded
    AWS (moto, in this process) each written item's size is looked up before and after the
    call with an uncounted client (`ItemSizes`). Elsewhere the units fall back to the size
    the request writes (low for updates of large items)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.items_read = 0
        self.rru = 0.0
        self.wru = 0.0
        self.params: list[tuple[str, dict[str, Any]]] = []
        self.record_params = False
        self._lock = threading.Lock()
        self._sizes: ItemSizes | None = None

    def install(self, botocore_session: Any) -> AwsCalls:
        botocore_session.register("before-parameter-build.dynamodb", self._parameters)
        botocore_session.register("before-call", self._before)
        botocore_session.register("after-call.dynamodb", self._after_dynamodb)
        region = botocore_session.get_config_variable("region")
        self._sizes = ItemSizes(region) if ItemSizes.embedded() else None
        return self

    @_bench_work
    def _parameters(
        self, event_name: str, params: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        _, service, operation = event_name.split(".", 2)
        if service != "dynamodb":
            return
        context["bench_index"] = "IndexName" in params
        units = write_units(operation, params)
        checked = checked_items(operation, params)
        if checked:
            sizes = [self._sizes.size(t, k) for t, k in checked] if self._sizes else []
            read = sum(2 * request_units(size, READ_UNIT) for size in sizes) or 2.0 * len(checked)
            with self._lock:
                self.rru += read
        if self._sizes is not None:
            # Billed on the items' sizes: the estimate is replaced after the call.
            written = written_items(operation, params)
            if written:
                context["bench_written"] = (units, written, self._sizes.before(written))
        with self._lock:
            self.wru += units
            if self.record_params:
                self.params.append((operation, json_copy(params)))

    @_bench_work
    def _before(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        with self._lock:
            key = f"{service}.{operation}"
            self.counts[key] = self.counts.get(key, 0) + 1

    @_bench_work
    def _after_dynamodb(
        self, model: Any, parsed: Mapping[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        name = model.name
        found = context.get("bench_written")
        if found is not None and self._sizes is not None:
            estimated, written, before = found
            billed = self._sizes.billed(written, before)
            with self._lock:
                self.wru += billed - estimated
        rru = 0.0
        items = 0
        if name in {"Query", "Scan"}:
            items = int(parsed.get("ScannedCount", 0))
            size = sum(item_size(i) for i in parsed.get("Items", []))
            rru = request_units(size, READ_UNIT) * (0.5 if context.get("bench_index") else 1.0)
        elif name == "GetItem":
            found = parsed.get("Item")
            items = 1 if found else 0
            rru = request_units(item_size(found) if found else 0, READ_UNIT)
        elif name == "BatchGetItem":
            for rows in parsed.get("Responses", {}).values():
                items += len(rows)
                rru += sum(request_units(item_size(r), READ_UNIT) for r in rows)
        with self._lock:
            self.items_read += items
            self.rru += rru

    def reset(self) -> None:
        with self._lock:
            self.counts, self.items_read, self.rru, self.wru, self.params = {}, 0, 0.0, 0.0, []

    def total(self, service: str) -> int:
        return sum(v for k, v in self.counts.items() if k.startswith(f"{service}."))

    def snapshot(self) -> dict[str, Any]:
        """The counts since the last reset, in the shape results.json uses."""
        with self._lock:
            by_operation = dict(sorted(self.counts.items()))
            return {
                "dynamodb": self.total("dynamodb"),
                "kms": self.total("kms"),
                "stepfunctions": self.total("sfn"),
                "by_operation": by_operation,
                "items_read": self.items_read,
                "rru_estimate": round(self.rru, 1),
                "wru_estimate": round(self.wru, 1),
            }


@dataclass
class CountingCatalog:
    """A model catalog whose models count their calls and the size of what they are asked
    and answer (characters of the Bedrock Converse request the same call would send)."""

    inner: Any
    calls: int = 0
    prompt_chars: int = 0
    reply_chars: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def resolve(self, name: str | None) -> Any:
        model = self.inner.resolve(name)
        return None if model is None else _CountingModel(model, self)

    def providers(self) -> tuple[str, ...]:
        providers: tuple[str, ...] = self.inner.providers()
        return providers

    def reset(self) -> None:
        with self._lock:
            self.calls = self.prompt_chars = self.reply_chars = 0

    def record(self, request: Any, reply: Any) -> None:
        from agent_memory.adapters.bedrock import BedrockModel

        converse = BedrockModel("anthropic.claude-haiku", client=object()).converse_request(request)
        with self._lock:
            self.calls += 1
            self.prompt_chars += len(json.dumps(converse, ensure_ascii=False))
            self.reply_chars += len(reply.text)


@dataclass
class _CountingModel:
    model: Any
    catalog: CountingCatalog

    @property
    def name(self) -> str:
        return str(self.model.name)

    def propose(self, request: Any) -> Any:
        reply = self.model.propose(request)
        self.catalog.record(request, reply)
        return reply


class CountingEmbedder:
    """A deterministic embedder (a hash of each text's words: no model to load) that counts
    its calls, the texts it embeds and their characters (what a provider bills as tokens)."""

    model = "bench/hash"

    def __init__(self, dimension: int = 1024) -> None:
        self.dimension = dimension
        self.calls = self.texts = self.chars = 0
        self._lock = threading.Lock()

    def embed(self, texts: Any) -> list[list[float]]:
        with self._lock:
            self.calls += 1
            self.texts += len(texts)
            self.chars += sum(len(t) for t in texts)
        vectors = []
        for text in texts:
            vector = [0.0] * self.dimension
            for word in str(text).lower().split():
                vector[zlib.crc32(word.encode()) % self.dimension] += 1.0
            norm = math.sqrt(sum(v * v for v in vector)) or 1.0
            vectors.append([v / norm for v in vector])
        return vectors

    def reset(self) -> None:
        with self._lock:
            self.calls = self.texts = self.chars = 0


class CountingVectors:
    """A vector index (the in-process one) that counts its writes, their vectors and its
    queries: what S3 Vectors bills per call."""

    def __init__(self, dimension: int = 1024) -> None:
        from agent_memory.adapters.vector_index import InProcessVectorIndex

        self.inner = InProcessVectorIndex(dimension)
        self.puts = self.vectors = self.queries = self.deletes = 0

    def put(self, records: Any) -> None:
        self.puts += 1
        self.vectors += len(records)
        self.inner.put(records)

    def delete(self, keys: Any) -> None:
        self.deletes += 1
        self.inner.delete(keys)

    def query(self, vector: Any, top_k: int, **scope: Any) -> Any:
        self.queries += 1
        return self.inner.query(vector, top_k, **scope)

    def reset(self) -> None:
        self.puts = self.vectors = self.queries = self.deletes = 0


class RoundTrips:
    """DynamoDB calls grouped into round trips: while `of` runs, each call waits
    `latency_s` before it is sent (as a network would), so calls made one after the other
    and calls made side by side are told apart by their times (a round trip is a group of
    calls whose spans overlap). Install before the clients are built."""

    def __init__(self, botocore_session: Any, latency_s: float = 0.02) -> None:
        self.latency_s = latency_s
        self._spans: list[tuple[float, float, str]] = []
        self._open: dict[int, tuple[float, str]] = {}
        self._timing = False
        self._lock = threading.Lock()
        botocore_session.register("before-call.dynamodb", self._before)
        botocore_session.register("after-call.dynamodb", self._after)

    def _before(self, model: Any, **_: Any) -> None:
        if not self._timing:
            return
        with self._lock:
            self._open[threading.get_ident()] = (time.perf_counter(), model.name)
        time.sleep(self.latency_s)

    def _after(self, **_: Any) -> None:
        ended = time.perf_counter()
        with self._lock:
            opened = self._open.pop(threading.get_ident(), None)
            if opened is not None:
                self._spans.append((opened[0], ended, opened[1]))

    def of(self, action: Callable[[], Any]) -> tuple[Any, list[list[str]]]:
        """What `action` answers, and the DynamoDB operations it sent, one list per round
        trip in order."""
        self._spans, self._timing = [], True
        try:
            answer = action()
        finally:
            self._timing = False
        trips: list[list[str]] = []
        last_end = -1.0
        for started, ended, name in sorted(self._spans):
            if started >= last_end:
                trips.append([])
            trips[-1].append(name)
            last_end = max(last_end, ended)
        return answer, [sorted(t) for t in trips]
