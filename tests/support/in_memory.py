"""In-memory adapters honouring the same contracts as the AWS ones, for unit tests."""

from __future__ import annotations

import base64
import copy
import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from agent_memory.domain.errors import IntegrityError, Unavailable
from agent_memory.ports import Action, Check, Delete, Execution, KeyRange, Page, Put, Record, Update
from agent_memory.ports.store import (
    Query,
    StoreAdapter,
    action_key,
    check_conditions,
    check_transaction,
    page_of,
    updated,
)


class InMemoryStore(StoreAdapter):
    """`ports.Store` in a dict; writes are atomic under one lock."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], Record] = {}
        self._lock = threading.Lock()
        self.requests = 0

    def get(self, pk: str, sk: str) -> Record | None:
        self.requests += 1
        row = self.rows.get((pk, sk))
        return copy.deepcopy(row) if row is not None else None

    def get_many(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        self.requests += 1
        return [copy.deepcopy(self.rows[k]) for k in dict.fromkeys(keys) if k in self.rows]

    def page(self, query: Query) -> Page:
        self.requests += 1
        rows = sorted(
            (
                r
                for (pk, sk), r in self.rows.items()
                if pk == query.pk and _in_range(sk, query.key_range) and _beyond(sk, query)
            ),
            key=lambda r: str(r["sk"]),
            reverse=query.newest_first,
        )
        if query.limit is not None:
            rows = rows[: query.limit + 1]
        return page_of([copy.deepcopy(r) for r in rows], query.limit, len(rows))

    def write(self, actions: Sequence[Action]) -> None:
        check_transaction(actions)
        self.requests += 1
        with self._lock:
            check_conditions(actions, [self.rows.get(action_key(a)) for a in actions])
            for action in actions:
                self._apply(action)

    def _apply(self, action: Action) -> None:
        key = action_key(action)
        match action:
            case Put(record):
                self.rows[key] = {k: v for k, v in copy.deepcopy(record).items() if v is not None}
            case Update():
                self.rows[key] = copy.deepcopy(updated(self.rows.get(key), action))
            case Delete():
                self.rows.pop(key, None)
            case Check():
                pass


def _beyond(sk: str, query: Query) -> bool:
    if query.after is None:
        return True
    return sk < query.after if query.newest_first else sk > query.after


def _in_range(sk: str, key_range: KeyRange | None) -> bool:
    if key_range is None:
        return True
    if key_range.prefix is not None:
        return sk.startswith(key_range.prefix)
    return str(key_range.low) <= sk <= str(key_range.high)


class FakeCipher:
    """Not encryption: a reversible wrapping that enforces the same scope and row binding."""

    def __init__(self) -> None:
        self.opens = 0

    def seal(self, plaintext: str, *, scope: Mapping[str, str], row: str) -> bytes:
        body = json.dumps({"scope": dict(scope), "row": row, "text": plaintext})
        return b"fake:" + base64.b64encode(body.encode()[::-1])

    def open(self, blob: bytes, *, scope: Mapping[str, str], row: str) -> str:
        self.opens += 1
        body = json.loads(base64.b64decode(blob.removeprefix(b"fake:"))[::-1])
        if body["scope"] != dict(scope) or body["row"] != row:
            raise IntegrityError("stored content belongs elsewhere")
        return str(body["text"])


class FixedClock:
    """A clock that moves only when told to (or by `step_ms` per reading)."""

    def __init__(self, start_ms: int = 1_792_486_800_000, step_ms: int = 0) -> None:
        self.ms = start_ms
        self.step_ms = step_ms

    def now_ms(self) -> int:
        now = self.ms
        self.ms += self.step_ms
        return now


class SequentialIds:
    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def new(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter):06d}"


class RecordingOrchestrator:
    """Records starts; a name seen before is a no-op, as in Step Functions. The next
    `outages` starts fail as a busy workflow service does (Unavailable, nothing started)."""

    def __init__(self) -> None:
        self.started: dict[str, Mapping[str, Any]] = {}
        self.outages = 0

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution:
        if self.outages > 0:
            self.outages -= 1
            raise Unavailable("the workflow service is busy; retry shortly")
        if name in self.started:
            return Execution(name=name, started=False)
        self.started[name] = dict(payload)
        return Execution(name=name, started=True)
