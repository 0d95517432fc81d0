"""Shared instruments of the benchmarks: AWS call counting (with items read and estimated
request units), time spent inside the embedded AWS (moto), counting models, the embedded
AWS with the service's settings, and bulk seeding of session memory.

Counting uses botocore's event hooks on a botocore session, so it sees every client built
from that session after `install` (the Encryption SDK's KMS client included).
"""

from __future__ import annotations

import functools
import json
import math
import random
import statistics
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from bench.counting import CountingCipher

ADMIN_TOKEN = "amk_admin_bench-token-0123456789"
__all__ = ["ADMIN_TOKEN", "AwsCalls", "CountingCatalog", "CountingCipher", "Emulator", "Env"]
_READ_UNIT = 4096
_WRITE_UNIT = 1024


def median(samples: list[float]) -> float:
    return round(statistics.median(samples), 2) if samples else 0.0


# --- DynamoDB item sizes (for request-unit estimates) -----------------------------------


# A sealed value is an Encryption SDK message whose header holds the data key as AWS KMS
# wrapped it. moto's GenerateDataKey answers a 96-byte CiphertextBlob for an AES_256 key;
# AWS KMS answers 167 bytes (the AWS CLI reference, `kms generate-data-key`, example 1:
# its CiphertextBlob decodes to 167 bytes; read 2026-12-02). Sizes are counted as in AWS.
_AWS_KMS_BLOB = 167
_ESDK_V2 = b"\x02\x04\x78"  # message format 2, suite AES_256_GCM_HKDF_SHA512_COMMIT_KEY


def _kms_blobs(message: bytes) -> list[int]:
    """Lengths of the KMS-wrapped data keys in an Encryption SDK message's header (format
    2: version, suite, 32-byte message id, the encryption context, the data keys)."""
    try:
        at = 35
        at += 2 + int.from_bytes(message[at : at + 2], "big")
        count = int.from_bytes(message[at : at + 2], "big")
        at += 2
        blobs = []
        for _ in range(count):
            fields = []
            for _part in range(3):
                length = int.from_bytes(message[at : at + 2], "big")
                fields.append(message[at + 2 : at + 2 + length])
                at += 2 + length
            if fields[0] == b"aws-kms":
                blobs.append(len(fields[2]))
        return blobs
    except (IndexError, ValueError):
        return []


def _binary_size(inner: bytes) -> int:
    """A binary value's size, a sealed one with AWS KMS's wrapped data keys (see above)."""
    size = len(inner)
    if inner[:3] == _ESDK_V2:
        size += sum(max(0, _AWS_KMS_BLOB - blob) for blob in _kms_blobs(inner))
    return size


def _value_size(value: Mapping[str, Any]) -> int:
    """Approximate stored size of one typed attribute value (DynamoDB's sizing rules)."""
    (kind, inner), *_ = value.items()
    if kind == "B":
        return _binary_size(bytes(inner))
    if kind == "S":
        return len(inner.encode() if isinstance(inner, str) else inner)
    if kind == "N":
        return len(str(inner)) // 2 + 2
    if kind in {"BOOL", "NULL"}:
        return 1
    if kind == "M":
        return 3 + sum(len(k.encode()) + _value_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in inner)
    if kind in {"SS", "BS", "NS"}:
        return sum(len(str(v)) for v in inner)
    return 1


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes of an item in DynamoDB's low-level shape: attribute names plus values."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


# --- AWS calls ---------------------------------------------------------------------------


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
        units = _write_units(operation, params)
        checked = _checked_items(operation, params)
        if checked:
            sizes = [self._sizes.size(t, k) for t, k in checked] if self._sizes else []
            read = sum(2 * _units(size, _READ_UNIT) for size in sizes) or 2.0 * len(checked)
            with self._lock:
                self.rru += read
        if self._sizes is not None:
            # Billed on the items' sizes: the estimate is replaced after the call.
            written = _written_items(operation, params)
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
            rru = _units(size, _READ_UNIT) * (0.5 if context.get("bench_index") else 1.0)
        elif name == "GetItem":
            found = parsed.get("Item")
            items = 1 if found else 0
            rru = _units(item_size(found) if found else 0, _READ_UNIT)
        elif name == "BatchGetItem":
            for rows in parsed.get("Responses", {}).values():
                items += len(rows)
                rru += sum(_units(item_size(r), _READ_UNIT) for r in rows)
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


# A written item: (table, key in the low-level shape, times billed: 2 in a transaction,
# the size the request writes when the item is new: a Put's item, else 0).
Written = tuple[str, dict[str, Any], int, int]


def _written_items(operation: str, body: Mapping[str, Any]) -> list[Written]:
    """The items a write request writes or deletes (a ConditionCheck writes none)."""
    table = str(body.get("TableName", ""))
    if operation == "PutItem":
        item = body.get("Item", {})
        return [(table, _key_of(item), 1, item_size(item))]
    if operation in {"UpdateItem", "DeleteItem"}:
        return [(table, dict(body.get("Key", {})), 1, 0)]
    if operation == "BatchWriteItem":
        found: list[Written] = []
        for name, rows in body.get("RequestItems", {}).items():
            for row in rows:
                if "PutRequest" in row:
                    item = row["PutRequest"]["Item"]
                    found.append((name, _key_of(item), 1, item_size(item)))
                else:
                    found.append((name, dict(row["DeleteRequest"]["Key"]), 1, 0))
        return found
    if operation == "TransactWriteItems":
        found = []
        for action in body.get("TransactItems", []):
            kind, inner = next(iter(action.items()))
            if kind == "Put":
                item = inner["Item"]
                found.append((str(inner["TableName"]), _key_of(item), 2, item_size(item)))
            elif kind in {"Update", "Delete"}:
                found.append((str(inner["TableName"]), dict(inner["Key"]), 2, 0))
        return found
    return []


def _key_of(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: item[k] for k in ("pk", "sk") if k in item}


class ItemSizes:
    """Item sizes looked up in the embedded AWS with a client of its own (not counted, not
    hooked), for billing writes on the larger of the item before and after."""

    def __init__(self, region: str | None) -> None:
        self._region = region or "us-east-1"
        self._client: Any = None
        self._lock = threading.Lock()

    @staticmethod
    def embedded() -> bool:
        """Whether moto's in-process mock is active (a lookup costs no real AWS call)."""
        import os

        return os.environ.get("AWS_ENDPOINT_URL") is None and _mock_active()

    def _get(self, table: str, key: dict[str, Any]) -> int:
        with Emulator.aside():  # the benchmark's own lookup: not the service's time
            return self._size(table, key)

    def _size(self, table: str, key: dict[str, Any]) -> int:
        with self._lock:
            if self._client is None:
                import boto3

                self._client = boto3.session.Session(region_name=self._region).client("dynamodb")
        try:
            item = self._client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        except Exception:
            return 0
        return item_size(item) if item else 0

    def size(self, table: str, key: dict[str, Any]) -> int:
        """An item's size now (0 when absent)."""
        return self._get(table, key)

    def before(self, written: list[Written]) -> list[int]:
        return [self._get(table, key) for table, key, _times, _new in written]

    def billed(self, written: list[Written], before: list[int]) -> float:
        """WRU of the items written: each on the larger of its size before and after."""
        units = 0.0
        for (table, key, times, new), old in zip(written, before, strict=True):
            after = self._get(table, key)
            units += times * _units(max(old, after, 0 if after or old else new), _WRITE_UNIT)
        return units


def _mock_active() -> bool:
    """moto's mock is patching botocore in this process (embedded_aws)."""
    try:
        from moto.core.models import botocore_stubber
    except ImportError:
        return False
    return bool(getattr(botocore_stubber, "enabled", False))


def json_copy(value: Any) -> Any:
    """A deep copy of request parameters (bytes stay bytes)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def _write_units(operation: str, body: Mapping[str, Any]) -> float:
    """WRU of one request, estimated from what it writes (a transaction's twice)."""
    if operation == "PutItem":
        return _units(item_size(body.get("Item", {})), _WRITE_UNIT)
    if operation in {"UpdateItem", "DeleteItem"}:
        return _units(_update_size(body), _WRITE_UNIT)
    if operation == "BatchWriteItem":
        requests = [r for rows in body.get("RequestItems", {}).values() for r in rows]
        return sum(
            _units(item_size(r["PutRequest"]["Item"]), _WRITE_UNIT) if "PutRequest" in r else 1
            for r in requests
        )
    if operation == "TransactWriteItems":
        units = 0.0
        for action in body.get("TransactItems", []):
            if "Put" in action:
                units += 2 * _units(item_size(action["Put"]["Item"]), _WRITE_UNIT)
            elif "Update" in action or "Delete" in action:
                units += 2 * _units(_update_size(next(iter(action.values()))), _WRITE_UNIT)
        return units  # a ConditionCheck writes nothing: `_checked_items` bills its read
    return 0.0


def _checked_items(operation: str, body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The items a transaction's ConditionChecks read: each a transactional read, 2 RRU per
    4 KB of the item ("reads for condition checks, writes for mutations")."""
    if operation != "TransactWriteItems":
        return []
    return [
        (str(action["ConditionCheck"]["TableName"]), dict(action["ConditionCheck"]["Key"]))
        for action in body.get("TransactItems", [])
        if "ConditionCheck" in action
    ]


def _update_size(request: Mapping[str, Any]) -> int:
    values = request.get("ExpressionAttributeValues", {})
    return item_size(request.get("Key", {})) + sum(_value_size(v) for v in values.values())


# --- Time inside the embedded AWS --------------------------------------------------------


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


# --- Models ------------------------------------------------------------------------------


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


# --- The embedded AWS with the service's settings ----------------------------------------


@dataclass
class Env:
    """A provisioned embedded AWS (in-process moto) and the settings that point at it."""

    root: Any
    local: Any
    settings: Any
    # The environment variables the settings were read from (for code that reads os.environ).
    environment: dict[str, str]

    def services(
        self,
        calls: AwsCalls | None = None,
        *,
        models: Any = None,
        cipher: Callable[[Any], Any] | None = None,
        learning: bool = True,
    ) -> Any:
        """Services on a new boto3 session (a cold start: new clients, a new key cache)."""
        import boto3

        from agent_memory.bootstrap import aws_adapters, build_services
        from infra.local import aws

        session = boto3.session.Session(region_name=aws.REGION)
        if calls is not None:
            calls.install(session._session)
        adapters = aws_adapters(self.settings, session)
        if models is not None:
            adapters = replace(adapters, models=models)
        if cipher is not None:
            adapters = replace(adapters, cipher=cipher(adapters.cipher))
        if not learning:
            adapters = replace(adapters, orchestrator=None)
        return build_services(self.settings, adapters)


@contextmanager
def embedded(default_model: str = "local/rules") -> Iterator[Env]:
    """In-process moto provisioned from template.yaml, and settings for it."""
    import os

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import hash_token
    from infra.local.aws import embedded_aws, provision

    with embedded_aws() as root:
        local = provision(root)
        environment = {
            **local.environment(),
            "MEMORY_ADMIN_TOKEN_SHA256": hash_token(ADMIN_TOKEN),
            "DEFAULT_MODEL": default_model,
        }
        Emulator.install()
        yield Env(root, local, load_settings(environment), environment)


# --- Seeding -----------------------------------------------------------------------------


def seed_entries(services: Any, env: Env, session_id: str, start: int, count: int) -> None:
    """Entries `start..start+count-1`, sealed as the service seals them, written with
    BatchWriteItem (setup only: what is measured is the read that follows)."""
    load_entries(
        services,
        env.root.client("dynamodb"),
        env.settings.table_name,
        session_id,
        range(start, start + count),
        seed=start,
    )


def load_entries(
    services: Any, client: Any, table: str, session_id: str, numbers: range, *, seed: int
) -> None:
    """Facts `fact-<n>` of random length (each with its recency copy), loaded in bulk."""
    from agent_memory.adapters.dynamodb.store import serialize
    from agent_memory.domain.session_memory import fact, item_sources

    repo = services.sessions._repo
    session = repo.get(session_id)
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for n in numbers:
        content = f"Fact {n}: " + "detail " * rng.randrange(2, 30)
        meta = fact(
            f"fact-{n:05d}", "fact", content, item_sources(["i-01"]), 1_700_000_000_000 + n, 1
        )
        for action in repo.entry_put(session, meta, content, None):
            items.append({"PutRequest": {"Item": serialize(action.record)}})
    for first in range(0, len(items), 25):
        request: dict[str, Any] = {table: items[first : first + 25]}
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}


# --- One request, cold and warm ----------------------------------------------------------


def _http_report(calls: AwsCalls, cipher: CountingCipher, answer: Any, ms: float) -> dict[str, Any]:
    shot = calls.snapshot()
    report = {
        k: shot[k]
        for k in ("dynamodb", "kms", "by_operation", "items_read", "rru_estimate", "wru_estimate")
    }
    # A request path never calls a model; it may start learning (StartExecution).
    report.update(
        stepfunctions=shot["stepfunctions"], model=0, decrypts=cipher.opens, own_ms=round(ms, 1)
    )
    report["status"] = answer.status_code
    if answer.status_code >= 300:
        report["error"] = answer.text[:300]
    return report


def cold_warm(
    env: Env, token: str, prepare: Callable[[], tuple[str, str, Any]], *, learning: bool = False
) -> dict[str, Any]:
    """One request through the app twice, on cold services then warm: AWS calls, decrypts
    and the time outside the emulator of each (`prepare` gives method, path and body).
    With `learning`, the deployment's workflow is on (its StartExecution calls count)."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    calls = AwsCalls()
    ciphers: list[CountingCipher] = []

    def count(cipher: Any) -> CountingCipher:
        ciphers.append(CountingCipher(cipher))
        return ciphers[-1]

    services = env.services(calls, cipher=count, learning=learning)
    report: dict[str, Any] = {}
    with TestClient(served(create_app(lambda: services)), raise_server_exceptions=False) as http:
        for phase in ("cold", "warm"):
            method, path, body = prepare()
            calls.reset()
            ciphers[0].opens = 0
            answer, spent = timed(
                lambda m=method, p=path, b=body: http.request(
                    m, p, json=b, headers={"Authorization": f"Bearer {token}"}
                )
            )
            report[phase] = _http_report(calls, ciphers[0], answer, spent.own_ms)
    return report


# --- The API and the learning steps, each on its own counted session -------------------


@dataclass
class LearningRig:
    """The embedded AWS with the API's services and the learning steps' services, each on
    its own boto3 session with its own `AwsCalls` (what a request costs, what the workflow
    costs); moto's Step Functions runs learning.asl.json and dispatches every Lambda task
    to the step handlers in this process (`tasks[0]` counts them)."""

    root: Any
    local: Any
    settings: Any
    api: Any
    steps: Any
    api_calls: AwsCalls
    step_calls: AwsCalls
    tasks: list[int]
    sfn: Any
    models: Any
    # The step tasks' own time (outside moto), summed, in milliseconds.
    task_ms: list[float]
    # Set: step tasks run when moto dispatches them. Cleared by `held`.
    gate: threading.Event

    @contextmanager
    def held(self) -> Iterator[None]:
        """Step tasks wait while the block runs: a request that starts a run is timed
        without the run's work beside it in this process (on AWS it runs elsewhere), whose
        own time is counted in `task_ms` apart."""
        self.gate.clear()
        try:
            yield
        finally:
            self.gate.set()

    def executions(self) -> list[dict[str, Any]]:
        """Every execution of the learning state machine, once none is running."""
        deadline = time.monotonic() + 60.0
        arn = self.local.state_machine_arn
        while time.monotonic() < deadline:
            listed = self.sfn.list_executions(stateMachineArn=arn)["executions"]
            if all(e["status"] != "RUNNING" for e in listed):
                return list(listed)
            time.sleep(0.05)
        raise RuntimeError("executions still running after 60 s")

    def transitions(self, arn: str) -> int:
        """States entered by one execution (what Step Functions Standard bills)."""
        events = self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        return sum(1 for e in events if str(e["type"]).endswith("StateEntered"))

    def reset(self) -> set[str]:
        """Zero the counters; the executions so far (to tell the next ones apart)."""
        self.api_calls.reset()
        self.step_calls.reset()
        self.tasks[0] = 0
        self.task_ms[0] = 0.0
        return {e["executionArn"] for e in self.executions()}


@contextmanager
def learning_rig(
    models: Any = None, environment: Mapping[str, str] | None = None, **adapters: Any
) -> Iterator[LearningRig]:
    """A `LearningRig` whose services resolve models from `models` (both sides; None: the
    deployment's catalog, counted in `rig.models`), with the settings `environment` adds,
    and any adapter replaced by `adapters` (e.g. an embedder both sides share)."""
    import boto3

    from agent_memory.bootstrap import aws_adapters, build_services, model_catalog, step_services
    from agent_memory.config import load_settings
    from bench.dispatch import dispatch_hook
    from infra.local import aws

    with aws.embedded_aws() as root:
        local = aws.provision(root)
        Emulator.install()  # own time: outside moto
        values = {**local.environment(), "DEFAULT_MODEL": "local/rules", **(environment or {})}
        settings = load_settings(values)
        if models is None:
            models = CountingCatalog(model_catalog(settings))

        def services(calls: AwsCalls) -> Any:
            session = boto3.session.Session(region_name=aws.REGION)
            calls.install(session._session)
            built = replace(aws_adapters(settings, session), models=models, **adapters)
            return build_services(settings, built)

        api_calls, step_calls = AwsCalls(), AwsCalls()
        api, steps = services(api_calls), services(step_calls)
        step_services.use(steps)
        tasks = [0]
        task_ms = [0.0]
        dispatch = dispatch_hook(tasks)

        gate = threading.Event()
        gate.set()

        def hook(logical_id: str, event: dict[str, Any]) -> Any:
            gate.wait(60.0)
            # Each task's own time (outside moto), on the thread moto runs it on.
            result, spent = timed(lambda: dispatch(logical_id, event), this_thread=True)
            task_ms[0] += spent.own_ms
            return result

        remove_hook = aws.add_invoke_hook(hook)
        try:
            yield LearningRig(
                root,
                local,
                settings,
                api,
                steps,
                api_calls,
                step_calls,
                tasks,
                root.client("stepfunctions"),
                models,
                task_ms,
                gate,
            )
        finally:
            remove_hook()
            step_services.reset()


# --- Semantic recall, counted -------------------------------------------------------------


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


# --- Round trips ---------------------------------------------------------------------------


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
