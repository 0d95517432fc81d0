"""A new kind of pool is its rules, its repository and one wiring line; the engine
(service/learning_pools.apply_cycle, persistence/retrying.until_it_lands) is not touched.

The toy pool here is a glossary: the model proposes terms from a run's items, the rules
accept a term that is not defined yet and cites an item of the run, and each term is a row
beside a head row (the glossary's version) and a read position row. It runs through the
whole workflow (LoadEvidence, CallModel, ApplyLearning) on the in-memory adapters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.proposals import MEMORY_KINDS, ProposedChange, ProposedRemember
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.memory_changes import LearningRequest, consolidation
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.keys import READ_POSITION
from agent_memory.ports import Action, Equals, KeyRange, Put, Update
from agent_memory.service.learning import LearningService
from agent_memory.service.learning_pools import (
    APPLY_TRIES,
    AlreadyApplied,
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolDefaults,
    PoolRef,
    apply_cycle,
)
from tests.support.in_memory import (
    FakeCipher,
    FixedClock,
    InMemoryStore,
    RecordingOrchestrator,
    SequentialIds,
)
from tests.support.learning_doubles import (
    MODEL,
    Catalog,
    ScriptedModel,
    as_proposed,
    drive,
    remember_reply,
)

REF = PoolRef("glossary", "o-1", "g-1")

# --- the rules (pure: what a domain module of the pool would hold) ---------------------------

NO_ITEM = "cites no item of this run"
DEFINED = "the term is defined already"
NOT_A_TERM = "a glossary only defines terms"


def decide(
    terms: Mapping[str, str], proposed: Sequence[ProposedChange], readable: frozenset[str]
) -> tuple[dict[str, str], list[tuple[ProposedChange, str]]]:
    """The terms to define, and each refused change with its one reason."""
    accepted: dict[str, str] = {}
    refused: list[tuple[ProposedChange, str]] = []
    for change in proposed:
        if not isinstance(change, ProposedRemember):
            refused.append((change, NOT_A_TERM))
        elif not set(change.sources) & readable:
            refused.append((change, NO_ITEM))
        elif change.key in terms or change.key in accepted:
            refused.append((change, DEFINED))
        else:
            accepted[change.key] = change.content
    return accepted, refused


# --- the repository (rows: what a persistence module of the pool would hold) -----------------

GLOSSARY_VERSION = "glossary-version"


@dataclass(frozen=True)
class Glossary:
    version: int
    position: int
    items: int
    terms: dict[str, str]


class GlossaryRepository:
    def __init__(self, store: InMemoryStore) -> None:
        self.store = store

    @staticmethod
    def _pk(ref: PoolRef) -> str:
        return f"GLOSSARY#{ref.pool_id}"

    def create(self, ref: PoolRef) -> None:
        pk = self._pk(ref)
        self.store.write(
            [
                Put({"pk": pk, "sk": "HEAD", "version": 0, "items": 0}),
                Put({"pk": pk, "sk": "POS", "position": 0}),
            ]
        )

    def read(self, ref: PoolRef) -> Glossary:
        rows = {r["sk"]: r for r in self.store.query(self._pk(ref)).records}
        terms = {r["term"]: r["text"] for sk, r in rows.items() if sk.startswith("TERM#")}
        head = rows["HEAD"]
        return Glossary(head["version"], rows["POS"]["position"], head["items"], terms)

    def add(self, ref: PoolRef, text: str) -> int:
        seq = self.read(ref).items + 1
        item = {"pk": self._pk(ref), "sk": f"ITEM#{seq:04d}", "text": text}
        self.store.write([Put(item), Update(self._pk(ref), "HEAD", set={"items": seq})])
        return seq

    def items(self, ref: PoolRef, after: int, last: int) -> list[EvidenceItem]:
        low, high = f"ITEM#{after + 1:04d}", f"ITEM#{last:04d}"
        rows = self.store.query(self._pk(ref), KeyRange(low=low, high=high)).records
        return [EvidenceItem(r["sk"].removeprefix("ITEM#"), "user", r["text"]) for r in rows]

    def define(self, ref: PoolRef, glossary: Glossary, terms: Mapping[str, str]) -> list[Action]:
        """The terms with the glossary's next version (conditional on the one read)."""
        pk = self._pk(ref)
        head = Update(
            pk,
            "HEAD",
            set={"version": glossary.version + 1},
            condition=Equals("version", glossary.version, name=GLOSSARY_VERSION),
        )
        return [
            head,
            *(Put({"pk": pk, "sk": f"TERM#{t}", "term": t, "text": x}) for t, x in terms.items()),
        ]

    def move(self, ref: PoolRef, position: int, upto: int) -> Action:
        condition = Equals("position", position, name=READ_POSITION)
        return Update(self._pk(ref), "POS", set={"position": upto}, condition=condition)


# --- the pool (what the workflow calls) ----------------------------------------------------


@dataclass(frozen=True)
class GlossaryDetail:
    version: int


class GlossaryPool(PoolDefaults):
    kind = "glossary"

    def __init__(self, repo: GlossaryRepository) -> None:
        self.repo = repo

    def task(self, evidence: Evidence[Any]) -> Ask[LearningRequest, tuple[ProposedChange, ...]]:
        return consolidation(self.kind, evidence)

    def detail_of(self, data: Any) -> GlossaryDetail:
        return GlossaryDetail(**data)

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[GlossaryDetail] | None:
        glossary = self.repo.read(pool)
        last = glossary.items if upto is None else min(upto, glossary.items)
        if last <= glossary.position:
            return None
        items = tuple(self.repo.items(pool, glossary.position, last))
        detail = GlossaryDetail(glossary.version)
        return Evidence(pool, glossary.position, last, items, (), MODEL, MEMORY_KINDS, detail)

    def change(
        self, evidence: Evidence[GlossaryDetail], changes: Any, finish: FinishActions
    ) -> Change:
        glossary = self.repo.read(evidence.pool)
        if glossary.position != evidence.position:
            raise AlreadyApplied("another run read these items")
        readable = frozenset(item.id for item in evidence.items)
        accepted, refused = decide(glossary.terms, changes, readable)
        outcome = Outcome(
            applied=[{"key": term, "op": "define"} for term in accepted],
            rejected=[{"change": as_proposed(c), "reason": reason} for c, reason in refused],
        )
        actions = [
            *(self.repo.define(evidence.pool, glossary, accepted) if accepted else []),
            self.repo.move(evidence.pool, evidence.position, evidence.upto),
            *finish(outcome),
        ]
        return Change(actions, outcome)

    def lost(self, error: WriteConflict) -> bool:
        return error.condition == GLOSSARY_VERSION


# --- the tests ----------------------------------------------------------------------------


@dataclass
class World:
    store: InMemoryStore
    repo: GlossaryRepository
    pool: GlossaryPool
    model: ScriptedModel
    service: LearningService
    orchestrator: RecordingOrchestrator

    def run(self, *texts: str) -> dict[str, Any]:
        upto = 0
        for text in texts:
            upto = self.repo.add(REF, text)
        assert self.service.start(REF, upto=upto, reason="turn") == "started"
        name = list(self.orchestrator.started)[-1]
        return drive(self.service, name, dict(self.orchestrator.started[name]))


@pytest.fixture
def world() -> World:
    store, model, orchestrator = InMemoryStore(), ScriptedModel(), RecordingOrchestrator()
    repo = GlossaryRepository(store)
    pool = GlossaryPool(repo)
    service = LearningService(
        store,
        ExecutionRepository(store, FakeCipher()),
        FixedClock(step_ms=1),
        SequentialIds(),
        orchestrator,
        Catalog({MODEL: model}),
        [],
    )
    service.register(pool)  # the one wiring line of a new kind of pool
    repo.create(REF)
    return World(store, repo, pool, model, service, orchestrator)


def _proposes(world: World, *changes: str) -> None:
    replies = iter(changes)
    world.model.script = lambda request: next(replies)


def test_a_new_pool_kind_learns_through_the_whole_workflow(world: World) -> None:
    _proposes(world, _changes(("serverless", "0001"), ("lambda", "0009")))
    state = world.run("Serverless means no servers to manage.")

    assert state["result"] == {"status": "succeeded", "applied": 1, "rejected": 1}
    glossary = world.repo.read(REF)
    assert glossary.terms == {"serverless": "the serverless text"}
    assert (glossary.version, glossary.position) == (1, 1)
    [execution] = world.service.executions(REF)
    assert execution.applied == [{"key": "serverless", "op": "define"}]
    assert [r["reason"] for r in execution.rejected] == [NO_ITEM]


def test_a_writer_that_wins_the_race_makes_the_pool_decide_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    _proposes(world, _changes(("latency", "0001")))
    real_read, reads = world.repo.read, []

    def read(ref: PoolRef) -> Glossary:
        glossary = real_read(ref)
        reads.append(glossary.version)
        if len(reads) == 2:  # the apply's first read: a person defines the term meanwhile
            world.store.write(world.repo.define(ref, glossary, {"latency": "a person's text"}))
        return glossary

    monkeypatch.setattr(world.repo, "read", read)
    state = world.run("Latency is the time a request waits.")

    assert state["result"] == {"status": "succeeded", "applied": 0, "rejected": 1}
    assert reads[1:] == [0, 1]  # decided again on the newest version
    assert world.repo.read(REF).terms == {"latency": "a person's text"}
    [execution] = world.service.executions(REF)
    assert [r["reason"] for r in execution.rejected] == [DEFINED]


def test_a_read_position_another_run_moved_writes_nothing(world: World) -> None:
    world.repo.add(REF, "Throughput is work per second.")
    evidence = world.pool.load_evidence(REF, None)
    assert evidence is not None
    world.store.write([world.repo.move(REF, 0, 1)])  # another run applied these items
    proposed = [ProposedRemember("throughput", "work per second", "fact", ("0001",))]

    with pytest.raises(AlreadyApplied):
        apply_cycle(world.store, world.pool, evidence, proposed, lambda outcome: ())
    assert world.repo.read(REF).terms == {}


def test_a_pool_that_keeps_losing_gives_up_and_writes_nothing_of_its_own(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.repo.add(REF, "Jitter spreads retries.")
    evidence = world.pool.load_evidence(REF, None)
    assert evidence is not None
    real_read, lost = world.repo.read, []

    def read(ref: PoolRef) -> Glossary:
        glossary = real_read(ref)
        lost.append(glossary.version)
        world.store.write(world.repo.define(ref, glossary, {f"t{len(lost)}": "a person's"}))
        return glossary

    monkeypatch.setattr(world.repo, "read", read)
    proposed = [ProposedRemember("jitter", "spreads retries", "fact", ("0001",))]

    with pytest.raises(Unavailable):
        apply_cycle(world.store, world.pool, evidence, proposed, lambda outcome: ())
    assert len(lost) == APPLY_TRIES
    glossary = real_read(REF)
    assert "jitter" not in glossary.terms
    assert glossary.position == 0


def _changes(*terms: tuple[str, str]) -> str:
    """The model's answer: a Remember per (term, cited item)."""
    import json

    changes = [
        json.loads(remember_reply(t, f"the {t} text", item))["changes"][0] for t, item in terms
    ]
    return json.dumps({"changes": changes})
