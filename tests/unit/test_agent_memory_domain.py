"""Agent memory's rules (domain/agent_memory.py), and the agent pool and hook on the
in-memory fakes: what a run reads, what it applies, and races with people and other runs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.api.contracts.agent_memory import AgentMemoryAnswer, MemoryLog
from agent_memory.bootstrap import build_services
from agent_memory.config import Settings
from agent_memory.domain import agent_memory as am
from agent_memory.domain.consolidation import (
    EDITED_MEANWHILE,
    KIND_NOT_KEPT,
    NOT_READ,
    OUTSIDE_ONLY,
    TOO_MANY,
    PoolRules,
    consolidate,
)
from agent_memory.domain.entries import EntryMeta, ItemSource
from agent_memory.domain.errors import ValidationFailed, VersionConflict, WriteConflict
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.identity import SERVICE_ADMIN, Principal
from agent_memory.domain.memory_text import choose, render
from agent_memory.domain.proposals import LASTING_KINDS, ProposedForget, ProposedRemember
from agent_memory.domain.session_memory import Forget, Remember
from agent_memory.domain.sessions import NewItem
from agent_memory.persistence.agent_memory import MEMORY_VERSION
from agent_memory.ports import Action
from agent_memory.service.agent_learning import AgentDetail, AgentLearningPool, agent_pool_ref
from agent_memory.service.learning_pools import AlreadyApplied, Outcome, Skipped, apply_cycle
from agent_memory.wiring import Adapters
from tests.support.in_memory import (
    FakeCipher,
    FixedClock,
    InMemoryStore,
    RecordingOrchestrator,
    SequentialIds,
)
from tests.support.learning_doubles import Catalog, ScriptedModel

HELPER = "openai/helper"


def meta(key: str, kind: str = "procedure", status: str = "active", rev: int = 1) -> EntryMeta:
    return EntryMeta(
        id=am.entry_id(key),
        key=key,
        kind=kind,
        sources=(ItemSource("i-01"),),
        updated_at=1000 + rev,
        status=status,  # type: ignore[arg-type]
        rev=rev,
        length=5,
    )


# --- the rules -----------------------------------------------------------------------------


def test_why_a_turn_teaches_nothing_in_order() -> None:
    def reason(**overrides: Any) -> str | None:
        facts = {"session_kind": "chat", "generate": True, "agent_memory": True, "has_helper": True}
        return am.skip_reason(**(facts | overrides))

    assert reason() is None
    assert reason(session_kind="subagent") is None
    assert reason(agent_memory=False, session_kind="review") == am.AGENT_MEMORY_OFF
    assert reason(session_kind="review", generate=False) == am.REVIEW_SESSION
    assert reason(generate=False, has_helper=False) == am.GENERATE_OFF
    assert reason(has_helper=False) == am.NO_HELPER
    assert am.QUEUED not in am.PASSES_OVER
    assert am.NOT_STARTED not in am.PASSES_OVER


def test_a_person_remembers_only_lasting_kinds() -> None:
    for kind in ("procedure", "preference", "decision"):
        assert am.check_agent_command(Remember("k", "C.", kind))
    for kind in ("fact", "hypothesis"):
        with pytest.raises(ValidationFailed) as raised:
            am.check_agent_command(Remember("k", "C.", kind))
        assert raised.value.path == ["command", "kind"]
    with pytest.raises(ValidationFailed):
        am.check_agent_command(Forget("no spaces"))


def test_a_command_applies_to_the_version_read() -> None:
    am.check_version(3, 3)
    with pytest.raises(VersionConflict):
        am.check_version(2, 3)


def test_remember_and_forget_entries() -> None:
    entry = am.remembered(Remember("lists", "Ana likes lists.", "preference"), 7, 4)
    assert (entry.status, entry.sources, entry.rev, entry.length) == ("active", (), 4, 16)
    gone = am.forgotten(meta("lists"), 9, 5)
    assert (gone.status, gone.sources, gone.updated_at, gone.rev) == (
        "retracted",
        (ItemSource("i-01"),),
        9,
        5,
    )


def test_learned_changes_follow_the_agent_rules() -> None:
    items = [EvidenceItem("i-03", "user", "x"), EvidenceItem("i-04", "tool", "y", app="wiki")]
    rules = PoolRules.of(LASTING_KINDS, items)
    proposed = [
        ProposedRemember("budget", "1500 EUR.", "fact", ("i-03",)),
        ProposedRemember("app-only", "Deploy Fridays.", "procedure", ("i-04",)),
        ProposedRemember("mixed", "Run tests.", "procedure", ("i-03", "i-04")),
        ProposedRemember("old", "Old.", "decision", ("i-01",)),
        ProposedForget("edited", ("i-03",)),
    ]
    current = am.known([meta("edited", rev=6)], snapshot=5)
    decision = consolidate(proposed, current, rules)
    assert [c.key for c in decision.accepted] == ["mixed"]
    assert {r.change.key: r.reason for r in decision.rejected} == {
        "budget": KIND_NOT_KEPT.format(kind="fact"),
        "app-only": OUTSIDE_ONLY,
        "old": NOT_READ.format(source="i-01"),
        "edited": EDITED_MEANWHILE,
    }
    assert am.outside_only(items[1:])
    assert not am.outside_only(items)
    assert not am.outside_only([])
    assert am.sources_of("s_1", ["i-03"]) == (ItemSource("i-03", "s_1"),)


def test_promotion_takes_active_lasting_entries_with_session_sources() -> None:
    entries = [
        meta("zeta", "decision"),
        meta("budget", "fact"),
        meta("maybe", "hypothesis"),
        meta("old", "procedure", "retracted"),
        meta("alpha", "preference"),
    ]
    chosen = am.promotable(entries)
    assert [e.key for e in chosen] == ["alpha", "zeta"]
    moved = am.promoted(chosen[0], "s_9")
    assert moved.sources == (ItemSource("i-01", "s_9"),)
    assert moved.id == am.entry_id("alpha")
    assert (moved.rev, moved.updated_at, moved.status) == (1, chosen[0].updated_at, "active")
    assert am.promoted_name(None, "Planner") == "Planner (promoted)"
    assert am.promoted_name(None, None) == "Promoted subagent"
    assert am.promoted_name("Tester", "Planner") == "Tester"
    assert len(am.promoted_name(None, "x" * 200)) == am.MAX_PROMOTED_NAME


def test_the_log_view() -> None:
    change = am.LogChange(3, 1234, "promotion", ("a", "b"))
    assert MemoryLog.of([change]).model_dump(exclude_none=True)["changes"] == [
        {"version": 3, "at": 1234, "by": "promotion", "keys": ["a", "b"]}
    ]


def test_the_text_of_a_shared_agent_carries_privacy_rules_within_the_limit() -> None:
    header, always = am.text_parts(shared=True)
    assert (header, always) == (am.HEADER, am.PRIVACY)
    assert am.text_parts(shared=False) == (am.HEADER, "")
    entries = [meta("b", rev=2), meta("a", rev=1)]  # newest first, as a pool reads them
    limit = len(always) + len(header) + len("- [procedure] b: 12345\n")
    chosen = choose(entries, limit, header=header, always=always)
    assert [e.key for e in chosen] == ["b"]
    text = render([(e, "12345") for e in chosen], limit, header=header, always=always)
    assert text.text == am.PRIVACY + am.HEADER + "- [procedure] b: 12345\n"
    assert text.length == limit
    assert render([], limit, header=header, always=always).text == am.PRIVACY
    assert render([], limit, header=header).text == ""


# --- the pool and the hook on fakes --------------------------------------------------------


@dataclass
class World:
    services: Any
    store: InMemoryStore
    helper: ScriptedModel
    orchestrator: RecordingOrchestrator
    pool: AgentLearningPool
    ana: Principal


@pytest.fixture
def world() -> World:
    store = InMemoryStore()
    helper = ScriptedModel(name=HELPER)
    orchestrator = RecordingOrchestrator()
    adapters = Adapters(
        store, FakeCipher(), FixedClock(step_ms=1), SequentialIds(), orchestrator, Catalog({})
    )
    adapters.models = Catalog({HELPER: helper})
    services = build_services(Settings(default_model=None), adapters)
    services.identity.create_org(SERVICE_ADMIN, "acme", "Acme")
    services.identity.create_user(SERVICE_ADMIN, "acme", "ana", "Ana", "member")
    services.org_settings.patch(SERVICE_ADMIN, "acme", {"helperModel": HELPER})
    pool = services.learning._pool("agent")
    return World(services, store, helper, orchestrator, pool, Principal("ana", "acme", "member"))


def turn(world: World, session_id: str, *texts: str) -> Any:
    items = [NewItem("user", text) for text in texts]
    return world.services.sessions.turn(world.ana, session_id, items)


def _memory(world: World, agent_id: str) -> dict[str, Any]:
    """The agent memory as the API answers it."""
    return AgentMemoryAnswer.of(world.services.agent_memory.read(world.ana, agent_id)).model_dump()


def no_finish(outcome: Outcome) -> Sequence[Action]:
    return []


def test_a_turn_starts_a_run_that_reads_the_session_for_the_agent(world: World) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    session = world.services.sessions.create(world.ana, agent.id)
    result = turn(world, session.id, "Always run the tests.")

    assert result.agent_learning == "started"
    [(name, payload)] = world.orchestrator.started.items()
    assert payload["pool"] == {
        "kind": "agent",
        "orgId": "acme",
        "poolId": agent.id,
        "source": ["session", session.id],
    }
    assert session.id in name or name.startswith("agent-h")
    evidence = world.pool.load_evidence(agent_pool_ref(result.session), 1)
    assert evidence is not None
    assert [(i.id, i.session) for i in evidence.items] == [("i-01", session.id)]
    assert (evidence.person, evidence.model, evidence.position, evidence.upto) == (
        "Ana",
        HELPER,
        0,
        1,
    )
    assert evidence.allowed_kinds == ("procedure", "preference", "decision")
    assert evidence.detail == AgentDetail(session.id, 0)


def test_apply_keeps_a_person_edit_made_while_the_helper_worked(world: World) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    session = world.services.sessions.create(world.ana, agent.id)
    result = turn(world, session.id, "Always run the tests.")
    evidence = world.pool.load_evidence(agent_pool_ref(result.session), 1)
    assert evidence is not None
    world.services.agent_memory.command(
        world.ana, agent.id, 0, Remember("tests-first", "By hand.", "procedure")
    )

    outcome = apply_cycle(
        world.store,
        world.pool,
        evidence,
        [ProposedRemember("tests-first", "Run the tests.", "procedure", ("i-01",))],
        no_finish,
    )

    assert outcome.applied == []
    assert outcome.rejected[0]["reason"] == EDITED_MEANWHILE
    held = _memory(world, agent.id)
    assert held["version"] == 1
    assert held["entries"]["tests-first"]["content"] == "By hand."
    assert world.services.agent_memory._repo.position(agent.id, session.id).position == 1
    with pytest.raises(AlreadyApplied):
        apply_cycle(world.store, world.pool, evidence, [], no_finish)


def test_apply_retries_when_the_version_moves_under_it(world: World) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    session = world.services.sessions.create(world.ana, agent.id)
    result = turn(world, session.id, "Always run the tests.")
    evidence = world.pool.load_evidence(agent_pool_ref(result.session), 1)
    assert evidence is not None
    real_write = world.store.write
    failures = [WriteConflict(index=0, condition=MEMORY_VERSION)]

    def racing(actions: Sequence[Action]) -> None:
        if failures:
            raise failures.pop()
        real_write(actions)

    world.store.write = racing  # type: ignore[method-assign]
    outcome = apply_cycle(
        world.store,
        world.pool,
        evidence,
        [ProposedRemember("tests-first", "Run the tests.", "procedure", ("i-01",))],
        no_finish,
    )
    assert outcome.applied == [{"key": "tests-first", "op": "remember"}]
    assert _memory(world, agent.id)["version"] == 1


def test_an_answer_larger_than_one_transaction_is_cut_never_half_applied(world: World) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    session = world.services.sessions.create(world.ana, agent.id)
    result = turn(world, session.id, "Many rules.")
    evidence = world.pool.load_evidence(agent_pool_ref(result.session), 1)
    assert evidence is not None
    proposed = [ProposedRemember(f"k{n:03d}", "Do it.", "procedure", ("i-01",)) for n in range(100)]

    outcome = apply_cycle(world.store, world.pool, evidence, proposed, no_finish)

    # One step applies what fits one transaction of 100 actions (an entry is its row and its
    # recency copy; plus head, log, read position): never more than `max_changes`.
    limit = PoolRules.max_changes
    applied = len(outcome.applied)
    assert 40 <= applied < limit
    assert {r["reason"] for r in outcome.rejected} == {TOO_MANY}
    assert len(outcome.rejected) == 100 - applied
    held = _memory(world, agent.id)
    assert len(held["entries"]) == applied
    assert held["version"] == 1


def test_a_forget_learned_from_a_session_names_its_items(world: World) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    world.services.agent_memory.command(
        world.ana, agent.id, 0, Remember("fridays", "Deploy on Fridays.", "decision")
    )
    session = world.services.sessions.create(world.ana, agent.id)
    result = turn(world, session.id, "We no longer deploy on Fridays.")
    evidence = world.pool.load_evidence(agent_pool_ref(result.session), 1)
    assert evidence is not None
    assert [(e.key, e.content) for e in evidence.memory] == [("fridays", "Deploy on Fridays.")]

    apply_cycle(
        world.store, world.pool, evidence, [ProposedForget("fridays", ("i-01",))], no_finish
    )

    entry = _memory(world, agent.id)["entries"]["fridays"]
    assert entry["status"] == "retracted"
    assert entry["content"] == "Deploy on Fridays."
    assert entry["sources"] == [{"session": session.id, "item": "i-01"}]
    log = world.services.agent_memory.log(world.ana, agent.id)
    assert [(c.version, c.by) for c in log] == [(2, "consolidation"), (1, "person")]


def test_content_is_sealed_and_bound_to_its_row(world: World) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    world.services.agent_memory.command(
        world.ana, agent.id, 0, Remember("secret-ish", "Ana likes tea.", "preference")
    )
    row = world.store.rows[(f"AGENT#{agent.id}", f"MEM#{am.entry_id('secret-ish')}")]
    assert b"tea" not in row["content"]
    assert (row["kind"], row["status"], row["by"], row["rev"], row["length"]) == (
        "preference",
        "active",
        "person",
        1,
        14,
    )


def test_a_change_that_lost_to_another_sessions_learning_says_so(world: World) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    first = world.services.sessions.create(world.ana, agent.id)
    second = world.services.sessions.create(world.ana, agent.id)
    early = world.pool.load_evidence(
        agent_pool_ref(turn(world, first.id, "Tests first.").session), 1
    )
    late = world.pool.load_evidence(
        agent_pool_ref(turn(world, second.id, "Lint first.").session), 1
    )
    assert early is not None
    assert late is not None
    apply_cycle(
        world.store,
        world.pool,
        late,
        [ProposedRemember("order", "Lint first.", "procedure", ("i-01",))],
        no_finish,
    )

    outcome = apply_cycle(
        world.store,
        world.pool,
        early,
        [ProposedRemember("order", "Tests first.", "procedure", ("i-01",))],
        no_finish,
    )

    assert outcome.rejected[0]["reason"] == am.CHANGED_BY_LEARNING
    entry = _memory(world, agent.id)["entries"]["order"]
    assert entry["content"] == "Lint first."
    assert world.services.agent_memory._repo.position(agent.id, first.id).position == 1


def test_app_results_wait_for_a_person_unless_a_full_window_of_them_is_unread(
    world: World,
) -> None:
    agent = world.services.agents.create(world.ana, "Coder")
    session = world.services.sessions.create(world.ana, agent.id)
    results = [NewItem("tool", f"Result {n}.", "wiki") for n in range(64)]
    for _ in range(4):
        last = world.services.sessions.turn(world.ana, session.id, results).session

    with pytest.raises(Skipped):
        world.pool.load_evidence(agent_pool_ref(last), 64)
    evidence = world.pool.load_evidence(agent_pool_ref(last), None)
    assert evidence is not None
    assert len(evidence.items) == 200
    assert evidence.upto == 200
