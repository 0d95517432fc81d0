"""Test doubles for the learning workflow: a small pool over the Store, and scripted models.

`NotesPool` is a minimal `LearningPool` (kind "session"): items and entries in one partition,
a head row with the read position and a version that every change bumps. It follows the
contract of service/learning_pools.py: `change` re-reads the newest memory, checks every
change, and answers the entries, the read position, a change record and `finish(outcome)` as
one write, conditional on the head's version (so on the read position too).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_memory.domain.evidence import EvidenceItem, KnownEntry
from agent_memory.domain.proposals import (
    MEMORY_KINDS,
    ProposedChange,
    ProposedForget,
    ProposedRemember,
)
from agent_memory.domain.tasks.base import Ask, ModelRequest
from agent_memory.domain.tasks.memory_changes import LearningRequest, consolidation
from agent_memory.ports import (
    Absent,
    Action,
    Equals,
    KeyRange,
    LearningModel,
    ModelFailure,
    ModelReply,
    Put,
    Store,
    Update,
)
from agent_memory.service.learning import LearningService
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolDefaults,
    PoolRef,
)
from tests.support.workflow import step_event

MODEL = "test/model"


def _pk(pool: PoolRef) -> str:
    return f"NOTES#{pool.pool_id}"


@dataclass(frozen=True)
class NotesDetail:
    version: int


class NotesPool(PoolDefaults):
    """A tiny session-like pool: enough rules to tell applied from rejected changes."""

    kind = "session"

    def __init__(self, store: Store, model: str | None = MODEL) -> None:
        self.store = store
        self.model = model

    def detail_of(self, data: Any) -> NotesDetail:
        return NotesDetail(**data)

    # -- what a session route would do ----------------------------------------------------

    def create(self, pool: PoolRef) -> None:
        head = {"pk": _pk(pool), "sk": "HEAD", "position": 0, "version": 0, "items": 0}
        self.store.write([Put(head, Absent())])

    def head(self, pool: PoolRef) -> dict[str, Any]:
        row = self.store.get(_pk(pool), "HEAD")
        assert row is not None
        return row

    def add_turn(self, pool: PoolRef, *texts: str, role: str = "user") -> int:
        """Append items (one turn); returns the last item's number (the turn's `upto`)."""
        head = self.head(pool)
        first = int(head["items"]) + 1
        actions: list[Action] = [
            Put({"pk": _pk(pool), "sk": f"ITEM#{seq:04d}", "role": role, "content": text})
            for seq, text in enumerate(texts, start=first)
        ]
        last = first + len(texts) - 1
        actions.append(
            Update(
                _pk(pool),
                "HEAD",
                set={"items": last, "version": int(head["version"]) + 1},
                condition=Equals("version", head["version"]),
            )
        )
        self.store.write(actions)
        return last

    def remember(self, pool: PoolRef, key: str, content: str) -> None:
        """A person's Remember: replaces the entry; the read position does not move."""
        head = self.head(pool)
        version = int(head["version"]) + 1
        self.store.write(
            [
                Put(self._entry(pool, key, content, "fact", "active", [], version, "person")),
                Update(
                    _pk(pool),
                    "HEAD",
                    set={"version": version},
                    condition=Equals("version", head["version"]),
                ),
            ]
        )

    def entries(self, pool: PoolRef) -> dict[str, dict[str, Any]]:
        rows = self.store.query(_pk(pool), KeyRange(prefix="MEM#")).records
        return {str(r["key"]): r for r in rows}

    def changes(self, pool: PoolRef) -> list[dict[str, Any]]:
        return self.store.query(_pk(pool), KeyRange(prefix="LOG#")).records

    # -- LearningPool ----------------------------------------------------------------------

    def task(self, evidence: Evidence) -> Ask[LearningRequest, tuple[ProposedChange, ...]]:
        return consolidation(self.kind, evidence)

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None:
        head = self.head(pool)
        position = int(head["position"])
        last = int(head["items"]) if upto is None else min(upto, int(head["items"]))
        if last <= position:
            return None
        rows = self.store.query(
            _pk(pool), KeyRange(low=f"ITEM#{position + 1:04d}", high=f"ITEM#{last:04d}")
        ).records
        items = tuple(
            EvidenceItem(id=_item_id(r["sk"]), role=r["role"], content=r["content"]) for r in rows
        )
        memory = tuple(
            KnownEntry(key=k, content=r["content"], kind=r["kind"], status=r["status"])
            for k, r in sorted(self.entries(pool).items())
        )
        return Evidence(
            pool=pool,
            position=position,
            upto=last,
            items=items,
            memory=memory,
            model=self.model,
            allowed_kinds=MEMORY_KINDS,
            detail=NotesDetail(int(head["version"])),
        )

    def change(self, evidence: Evidence, changes: Sequence[Any], finish: FinishActions) -> Change:
        pool = evidence.pool
        head = self.head(pool)
        if int(head["position"]) != evidence.position:
            raise AlreadyApplied()
        entries = self.entries(pool)
        unprocessed = {item.id for item in evidence.items}
        keys = [change.key for change in changes]
        version = int(head["version"]) + 1
        applied: list[dict[str, str]] = []
        rejected: list[dict[str, Any]] = []
        writes: list[Action] = []
        for change in changes:
            reason = self._reason(change, keys, unprocessed, entries.get(change.key), evidence)
            if reason:
                rejected.append({"change": as_proposed(change), "reason": reason})
                continue
            if isinstance(change, ProposedRemember):
                writes.append(
                    Put(
                        self._entry(
                            pool,
                            change.key,
                            change.content,
                            change.kind,
                            "active",
                            list(change.sources),
                            version,
                            "learning",
                        )
                    )
                )
                applied.append({"key": change.key, "op": "remember"})
            else:
                writes.append(Update(_pk(pool), f"MEM#{change.key}", set={"status": "retracted"}))
                applied.append({"key": change.key, "op": "forget"})
        outcome = Outcome(applied=applied, rejected=rejected)
        log = {"pk": _pk(pool), "sk": f"LOG#{version:06d}", "keys": [a["key"] for a in applied]}
        head_move = Update(
            _pk(pool),
            "HEAD",
            set={"position": evidence.upto, "version": version},
            condition=Equals("version", head["version"]),
        )
        return Change([head_move, *writes, Put(log, Absent()), *finish(outcome)], outcome)

    @staticmethod
    def _reason(
        change: ProposedRemember | ProposedForget,
        keys: list[str],
        unprocessed: set[str],
        entry: dict[str, Any] | None,
        evidence: Evidence,
    ) -> str | None:
        if not set(change.sources) & unprocessed:
            return "no unprocessed source"
        if keys.count(change.key) > 1:
            return "more than one change for this key"
        if (
            entry is not None
            and entry["by"] == "person"
            and entry["version"] > evidence.detail.version
        ):
            return "a person changed this entry while the model worked"
        if isinstance(change, ProposedForget) and (entry is None or entry["status"] != "active"):
            return "no active entry with this key"
        if isinstance(change, ProposedRemember) and entry and entry["status"] == "retracted":
            return "a retracted entry stays retracted"
        return None

    @staticmethod
    def _entry(
        pool: PoolRef,
        key: str,
        content: str,
        kind: str,
        status: str,
        sources: list[str],
        version: int,
        by: str,
    ) -> dict[str, Any]:
        return {
            "pk": _pk(pool),
            "sk": f"MEM#{key}",
            "key": key,
            "content": content,
            "kind": kind,
            "status": status,
            "sources": sources,
            "version": version,
            "by": by,
        }


def _item_id(sk: str) -> str:
    return f"i-{int(sk.removeprefix('ITEM#')):02d}"


def as_proposed(change: ProposedChange) -> dict[str, Any]:
    """The change as the model proposed it (API.md's shape, content included)."""
    if isinstance(change, ProposedForget):
        return {"op": "forget", "key": change.key, "sources": list(change.sources)}
    return {
        "op": "remember",
        "key": change.key,
        "content": change.content,
        "kind": change.kind,
        "sources": list(change.sources),
    }


def remember_reply(key: str, content: str, *sources: str) -> str:
    change = {"op": "remember", "key": key, "content": content, "kind": "fact"}
    return json.dumps({"changes": [change | {"sources": list(sources)}]})


# Every task sends its model a `ModelRequest`: a script that reads the task's input reads it there.
Script = Callable[[ModelRequest], ModelReply | str]


@dataclass
class ScriptedModel:
    """A `LearningModel` whose answer a test chooses: by default the real `local/rules`."""

    name: str = MODEL
    script: Script | None = None
    calls: list[ModelRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def propose(self, request: ModelRequest) -> ModelReply:
        with self._lock:
            self.calls.append(request)
        if self.script is None:
            from agent_memory.adapters.rules_model import RulesModel

            return RulesModel().propose(request)
        answer = self.script(request)
        return ModelReply(text=answer, model=self.name) if isinstance(answer, str) else answer


@dataclass
class Catalog:
    """A `ModelCatalog` with the test's models."""

    models: dict[str, LearningModel]

    def resolve(self, name: str | None) -> LearningModel | None:
        return self.models.get(name or "")

    def providers(self) -> tuple[str, ...]:
        """The providers of the test's models, in the port's order."""
        from agent_memory.domain.model_name_bounds import PROVIDERS

        named = {name.partition("/")[0] for name in self.models}
        return tuple(p for p in PROVIDERS if p in named)


def failing(kind: str, retryable: bool, message: str = "the model failed") -> Script:
    def script(request: ModelRequest) -> ModelReply:
        raise ModelFailure(kind, message, retryable=retryable)  # type: ignore[arg-type]

    return script


def drive(service: LearningService, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """LoadEvidence -> CallModel -> ApplyLearning, any error -> RecordFailure (no retries):
    the state machine played in-process (the real ASL runs in the integration tests)."""
    state = dict(payload)
    steps = [
        ("LoadEvidence", service.load_evidence, "evidence"),
        ("CallModel", service.call_model, "model"),
        ("ApplyLearning", service.apply_learning, "result"),
    ]
    for step, run, path in steps:
        try:
            state[path] = run(step_event(name, state, step))
        except Exception as error:
            cause = json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)})
            state["error"] = {"Error": type(error).__name__, "Cause": cause}
            state["failure"] = service.record_failure(step_event(name, state, "RecordFailure"))
            return state
    return state


def recorded_writes(store: Any, monkeypatch: Any) -> list[list[Action]]:
    """Every write `store` makes from now on, in order (each still made)."""
    seen: list[list[Action]] = []
    real = store.write

    def write(actions: Sequence[Action]) -> None:
        seen.append(list(actions))
        real(actions)

    monkeypatch.setattr(store, "write", write)
    return seen


def written_key(action: Action) -> str:
    """The sort key an action writes."""
    return str(action.record["sk"]) if isinstance(action, Put) else str(getattr(action, "sk"))
