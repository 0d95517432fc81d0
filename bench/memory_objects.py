"""Agent memories at 10,000 per organization, on the embedded AWS (in-process moto):

- recall of 10 (organization-wide, by entity, and with expired memories on top): DynamoDB
  requests and items read (ScannedCount), decrypts, compared with the expected answer;
- list pagination under inserts: walk every page (all, and filtered by category) while new
  memories are created through the service; no pre-existing memory is seen twice or missed.

`ms` are in-process moto times (moto's Query is O(table)); the request and item counts are
what DynamoDB would be asked and would read.

    python -m bench.memory_objects      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import random
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from bench.counting import CountingCipher

MEMORIES = 10_000
EXPIRED_ON_TOP = 15  # expired memories with the highest importance: what recall steps over
ENTITIES = 50
PAGE = 100
INSERTS_PER_PAGE = 5
SEED = 4


class Counter:
    """DynamoDB requests and items read, by operation, from botocore's event hooks."""

    def __init__(self, client: Any) -> None:
        self.requests: dict[str, int] = {}
        self.items = 0
        client.meta.events.register("before-call.dynamodb.*", self._before)
        client.meta.events.register("after-call.dynamodb.*", self._after)

    def _before(self, model: Any, **_: Any) -> None:
        self.requests[model.name] = self.requests.get(model.name, 0) + 1

    def _after(self, model: Any, parsed: Mapping[str, Any], **_: Any) -> None:
        if model.name in {"Query", "Scan"}:
            self.items += int(parsed.get("ScannedCount", 0))
        elif model.name == "GetItem":
            self.items += 1 if parsed.get("Item") else 0
        elif model.name == "BatchGetItem":
            self.items += sum(len(v) for v in parsed.get("Responses", {}).values())

    def reset(self) -> None:
        self.requests, self.items = {}, 0

    def snapshot(self) -> dict[str, Any]:
        return {
            "dynamodb_requests": sum(self.requests.values()),
            "by_operation": dict(self.requests),
            "items_read": self.items,
        }


@dataclasses.dataclass
class Bench:
    service: Any
    repo: Any
    client: Any
    table: str
    counter: Counter
    cipher: CountingCipher
    principal: Any


@contextmanager
def _moto_at_scale() -> Iterator[None]:
    """Two costs of moto that real DynamoDB does not have, which at 45,000 rows make the
    bench take many minutes; both are switched off in this process only.

    - A Query sorts every item of the table (`all_items`) before picking its partition: the
      base-table Query here reads its partition directly. Same rows, order, ScannedCount.
    - TransactWriteItems deep-copies the whole table per item (its rollback backup): the
      bench skips it. No bench write is expected to fail; one that does stops the bench.
    """
    import copy

    import moto.dynamodb.models as models
    from moto.dynamodb.models.table import Table

    class _Copy:
        def __getattr__(self, name: str) -> Any:
            return getattr(copy, name)

        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    real_query = Table.query
    signature = inspect.signature(real_query)

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = signature.bind(self, hash_key, *args, **kwargs).arguments.get("index_name")
        if index_name or hash_key is None or not self.range_key_attr:
            return real_query(self, hash_key, *args, **kwargs)
        partition = list(self.items.get(hash_key, {}).values())
        self.all_items = lambda: partition
        try:
            return real_query(self, hash_key, *args, **kwargs)
        finally:
            del self.all_items

    models.copy = _Copy()  # type: ignore[assignment]
    Table.query = query  # type: ignore[method-assign]
    try:
        yield
    finally:
        models.copy = copy
        Table.query = real_query  # type: ignore[method-assign]


@contextmanager
def _bench() -> Iterator[Bench]:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from agent_memory.adapters.dynamodb.store import DynamoStore
    from agent_memory.bootstrap import aws_adapters
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import Principal
    from agent_memory.persistence.memory_objects import MemoryObjectRepository
    from agent_memory.service.memory_objects import MemoryObjectService
    from infra.local.aws import embedded_aws, provision

    with embedded_aws() as session, _moto_at_scale():
        local = provision(session)
        settings = load_settings(local.environment())
        adapters = aws_adapters(settings, session)
        client = session.client("dynamodb")
        counter = Counter(client)
        cipher = CountingCipher(adapters.cipher)
        store = DynamoStore(client, settings.table_name)
        repo = MemoryObjectRepository(store, cipher)
        service = MemoryObjectService(repo, adapters.clock, adapters.ids)
        principal = Principal(user_id="bench", org_id="bench-org", role="member")
        yield Bench(service, repo, client, settings.table_name, counter, cipher, principal)


def _old_id(ms: int) -> str:
    """An id as `RandomIds` makes them (time-sortable), for a creation time in the past."""
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while ms:
        ms, rest = divmod(ms, 36)
        out = digits[rest] + out
    return f"mem_{out.rjust(9, '0')}{secrets.token_hex(5)}"


def _setup(b: Bench, now_ms: int) -> list[Any]:
    """10,000 memories, validated and sealed as the service does, loaded in batches."""
    from agent_memory.adapters.dynamodb.store import serialize
    from agent_memory.domain.memory_objects import (
        Entity,
        NewMemory,
        create_memory,
        format_timestamp,
    )

    rng = random.Random(SEED)
    categories = ("preference", "fact", "instruction")
    memories = []
    start = now_ms - MEMORIES - 60_000
    for n in range(MEMORIES):
        created = start + n
        expires = None
        importance = round(rng.random() * 0.99, 3)
        if n % 50 == 0:
            expires = format_timestamp(now_ms - 1000)  # 2% expired, spread over the order
        elif n % 20 == 0:
            expires = format_timestamp(now_ms + 86_400_000)  # 5% expire tomorrow
        if n < EXPIRED_ON_TOP:
            importance, expires = 1.0, format_timestamp(now_ms - 1000)
        entity = None
        if n % 3 == 0:
            entity = Entity(id=f"cus_{n % ENTITIES}", type="account", name=f"Customer {n}")
        new = NewMemory(
            category=categories[n % 3],
            content=f"Memory {n}: the customer prefers option {rng.randrange(100)}.",
            metadata={"n": n} if n % 4 == 0 else None,
            entity=entity,
            importance=importance,
            expires_at=expires,
        )
        memories.append(create_memory(_old_id(created), b.principal.org_id, new, created))
    batch: list[dict[str, Any]] = []
    for memory in memories:
        for row in b.repo.rows(memory):
            batch.append({"PutRequest": {"Item": serialize(row)}})
            if len(batch) == 25:
                _flush(b, batch)
    _flush(b, batch)
    return memories


def _flush(b: Bench, batch: list[dict[str, Any]]) -> None:
    request = {b.table: list(batch)} if batch else {}
    while request:
        request = b.client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
    batch.clear()


def _measure(b: Bench, call: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    b.counter.reset()
    b.cipher.opens = 0
    started = time.perf_counter()
    page = call()
    elapsed = (time.perf_counter() - started) * 1000
    return page, {
        **b.counter.snapshot(),
        "decrypts": b.cipher.opens,
        "returned": len(page.memories),
        "skipped_expired": page.skipped_expired,
        "has_more": page.has_more,
        "ms": round(elapsed, 1),
    }


def _expected_recall(memories: list[Any], now_ms: int, entity: str | None) -> list[str]:
    live = [
        m
        for m in memories
        if not m.is_expired(now_ms) and (entity is None or (m.entity and m.entity.id == entity))
    ]
    live.sort(key=lambda m: (m.importance, m.id), reverse=True)
    return [m.id for m in live[:10]]


def _recalls(b: Bench, memories: list[Any], now_ms: int) -> dict[str, Any]:
    report = {}
    for name, entity in (("recall_10", None), ("recall_10_for_one_entity", "cus_7")):
        page, stats = _measure(
            b, lambda e=entity: b.service.recall(b.principal, limit=10, entity_id=e)
        )
        stats["matches_expected"] = [m.id for m in page.memories] == _expected_recall(
            memories, now_ms, entity
        )
        report[name] = stats
    return report


def _walk(b: Bench, memories: list[Any], now_ms: int, category: str | None) -> dict[str, Any]:
    """Every page, newest first, with inserts between pages."""
    from agent_memory.domain.memory_objects import NewMemory

    expected = [
        m.id
        for m in sorted(memories, key=lambda m: m.id, reverse=True)
        if not m.is_expired(now_ms) and (category is None or m.category == category)
    ]
    seen: list[str] = []
    inserted: list[Any] = []
    per_page: list[dict[str, Any]] = []
    after = None
    while True:
        page, stats = _measure(
            b,
            lambda a=after: b.service.list_memories(
                b.principal, limit=PAGE, starting_after=a, category=category
            ),
        )
        per_page.append(stats)
        seen += [m.id for m in page.memories]
        for _ in range(INSERTS_PER_PAGE):
            new = NewMemory(category=category or "fact", content="inserted while paging")
            inserted.append(b.service.create(b.principal, new))
        if not page.has_more:
            break
        after = page.memories[-1].id
    # What this walk inserted is pre-existing for the next one.
    memories.extend(inserted)
    new_ids = {m.id for m in inserted}
    old = [i for i in seen if i not in new_ids]
    return {
        "category": category,
        "pages": len(per_page),
        "inserted_while_paging": len(inserted),
        "preexisting_unexpired": len(expected),
        "seen": len(seen),
        "duplicates": len(seen) - len(set(seen)),
        "missed": len(set(expected) - set(seen)),
        "inserted_seen": len(seen) - len(old),
        "newest_first_and_complete": old == expected,
        "max_requests_per_page": max(p["dynamodb_requests"] for p in per_page),
        "max_items_read_per_page": max(p["items_read"] for p in per_page),
        "max_decrypts_per_page": max(p["decrypts"] for p in per_page),
        "total_items_read": sum(p["items_read"] for p in per_page),
    }


def run() -> dict[str, Any]:
    """Build 10,000 memories on the embedded AWS and measure recall and pagination."""
    with _bench() as b:
        now_ms = int(time.time() * 1000)
        started = time.perf_counter()
        memories = _setup(b, now_ms)
        setup_s = time.perf_counter() - started
        # Warm the data-key cache, as a warm Lambda has it: measured reads then cost no KMS call.
        b.service.get(b.principal, memories[-1].id)
        report: dict[str, Any] = {
            "memories": len(memories),
            "expired": sum(m.is_expired(now_ms) for m in memories),
            "expired_on_top_of_recall": EXPIRED_ON_TOP,
            "setup_seconds": round(setup_s, 1),
        }
        report |= _recalls(b, memories, now_ms)
        _, first = _measure(b, lambda: b.service.list_memories(b.principal, limit=10))
        report["list_first_page_of_10"] = first
        report["pagination_under_inserts"] = _walk(b, memories, now_ms, None)
        report["pagination_under_inserts_by_category"] = _walk(b, memories, now_ms, "fact")
        checks = [
            report["recall_10"]["matches_expected"],
            report["recall_10_for_one_entity"]["matches_expected"],
            *(
                w["duplicates"] == 0 and w["missed"] == 0 and w["newest_first_and_complete"]
                for w in (
                    report["pagination_under_inserts"],
                    report["pagination_under_inserts_by_category"],
                )
            ),
        ]
        report["ok"] = all(checks)
        return report


def main() -> None:
    report = run()
    print(json.dumps(report, indent=2))
    if not report["ok"]:
        raise SystemExit("agent memories benchmark: a check failed")


if __name__ == "__main__":
    main()
