"""Session memory's use cases on in-memory fakes: commands, turns, fork, the session pool."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_memory.api.contracts.memory_text import MemoryText
from agent_memory.api.contracts.sessions import SessionMemory
from agent_memory.domain import consolidation as rules
from agent_memory.domain.errors import (
    IntegrityError,
    NotFound,
    SessionConflict,
    ValidationFailed,
    WriteConflict,
)
from agent_memory.domain.identity import Principal, issue_token
from agent_memory.domain.learning_notes import GENERATE_OFF
from agent_memory.domain.proposals import ProposedForget, ProposedRemember
from agent_memory.domain.session_memory import Configure, Forget, Refresh, Remember, entry_id
from agent_memory.domain.sessions import NewItem
from agent_memory.persistence.agents import AgentRepository
from agent_memory.persistence.identity import IdentityRepository, User
from agent_memory.persistence.sessions import SessionRepository, session_pk
from agent_memory.ports import Absent, Put
from agent_memory.service.agents import AgentService
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Outcome,
    PoolRef,
    Skipped,
    apply_cycle,
)
from agent_memory.service.org_settings import OrgSettingsService
from agent_memory.service.session_learning import SessionLearningPool
from agent_memory.service.session_memory import SessionMemoryService
from agent_memory.service.sessions import SessionAccess, SessionService
from tests.support.in_memory import FakeCipher, FixedClock, InMemoryStore, SequentialIds


@dataclass
class FakeLearning:
    starts: list[tuple[PoolRef, int, str]] = field(default_factory=list)

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> Any:
        self.starts.append((pool, upto, reason))
        return "started"

    def executions(self, pool: PoolRef) -> list[dict[str, Any]]:
        return [{"id": f"run-{n}"} for n, _ in enumerate(self.starts)]


@dataclass
class World:
    store: InMemoryStore
    cipher: FakeCipher
    clock: FixedClock
    sessions: SessionService
    memory: SessionMemoryService
    pool: SessionLearningPool
    learning: FakeLearning
    org_settings: OrgSettingsService
    ana: Principal
    ben: Principal

    def session(self, model: Any = "local/rules") -> Any:
        agent = self.sessions._agents.create(self.ana, "Trip planner")
        return self.sessions.create(self.ana, agent.id, model=model)

    def turn(self, session_id: str, *texts: str, **kwargs: Any) -> Any:
        return self.sessions.turn(
            self.ana, session_id, [NewItem("user", t) for t in texts], **kwargs
        )

    def command(self, session_id: str, command: Any, who: Principal | None = None) -> Any:
        current = self.sessions.get(who or self.ana, session_id)
        return self.memory.command(
            who or self.ana, session_id, current.head, current.revision, command
        )

    def rows(self) -> dict[tuple[str, str], dict[str, Any]]:
        return {k: dict(v) for k, v in self.store.rows.items()}


@pytest.fixture
def world() -> World:
    store, cipher, clock, ids = InMemoryStore(), FakeCipher(), FixedClock(), SequentialIds()
    identity = IdentityRepository(store)
    identity.create_org("acme", "Acme", 0)
    for user in ("ana", "ben"):
        identity.create_user(User(user, "acme", user, "member"), issue_token(), "admin token", 0)
    org_settings = OrgSettingsService(identity)
    access = SessionAccess(SessionRepository(store, cipher), org_settings)
    learning = FakeLearning()
    agents = AgentService(AgentRepository(store), clock, ids)
    sessions = SessionService(
        access, agents, clock, ids, default_model="local/rules", learning=learning
    )
    memory = SessionMemoryService(access, clock, max_text_length=8000, learning=learning)
    return World(
        store,
        cipher,
        clock,
        sessions,
        memory,
        SessionLearningPool(access, clock),
        learning,
        org_settings,
        Principal("ana", "acme", "member"),
        Principal("ben", "acme", "member"),
    )


def read(world: World, principal: Principal, session_id: str) -> dict[str, Any]:
    """The session memory as the API answers it."""
    return SessionMemory.of(world.memory.read(principal, session_id)).model_dump()


# --- commands -----------------------------------------------------------------------------


def test_remember_adds_an_edit_item_that_is_the_source_and_makes_a_new_head(world: World) -> None:
    session = world.session()
    after = world.command(session.id, Remember("budget", "The trip budget is 1500 EUR.", "fact"))
    assert after.revision == session.revision + 1
    assert after.head != session.head
    memory = read(world, world.ana, session.id)
    assert memory["entries"]["budget"]["sources"] == ["i-01"]
    assert memory["entries"]["budget"]["status"] == "active"
    # The edit item is already memory: with nothing unread before it, it counts as read.
    assert memory["processed"] == ["i-01"]
    item = world.store.rows[(session_pk(session.id), "ITEM#00000001")]
    assert item["role"] == "notice"
    assert item["edit"] == "Remember"
    assert b"1500" not in item["text"]
    assert (
        b"1500"
        not in world.store.rows[(session_pk(session.id), f"MEM#{entry_id('budget')}")]["content"]
    )


def test_an_edit_after_unread_items_leaves_them_unread(world: World) -> None:
    session = world.session()
    world.turn(session.id, "The budget is 1500 EUR.")
    world.command(session.id, Remember("budget", "The trip budget is 1500 EUR.", "fact"))
    assert read(world, world.ana, session.id)["processed"] == []


def test_a_stale_revision_or_head_is_a_conflict_that_writes_nothing(world: World) -> None:
    session = world.session()
    moved = world.command(session.id, Configure({"use": False}))
    before = world.rows()
    with pytest.raises(SessionConflict):
        world.memory.command(
            world.ana, session.id, session.head, session.revision, Remember("a", "A.", "fact")
        )
    with pytest.raises(SessionConflict):
        world.memory.command(
            world.ana, session.id, "v-00000000", moved.revision, Remember("a", "A.", "fact")
        )
    assert world.rows() == before


def test_forget_retracts_and_an_unknown_key_is_a_conflict(world: World) -> None:
    session = world.session()
    world.command(session.id, Remember("budget", "The trip budget is 1500 EUR.", "fact"))
    before = world.rows()
    with pytest.raises(SessionConflict, match="no fact"):
        world.command(session.id, Forget("hotel"))
    assert world.rows() == before
    forgotten = world.command(session.id, Forget("budget"))
    entry = read(world, world.ana, session.id)["entries"]["budget"]
    assert entry["status"] == "retracted"
    assert entry["content"] == "The trip budget is 1500 EUR."
    assert entry["sources"] == ["i-02"]
    assert forgotten.item_count == 2


def test_remember_brings_a_retracted_fact_back(world: World) -> None:
    session = world.session()
    world.command(session.id, Remember("budget", "1500 EUR.", "fact"))
    world.command(session.id, Forget("budget"))
    world.command(session.id, Remember("budget", "1800 EUR.", "decision"))
    entry = read(world, world.ana, session.id)["entries"]["budget"]
    assert (entry["status"], entry["content"], entry["kind"]) == ("active", "1800 EUR.", "decision")


def test_configure_sets_resets_and_keeps_and_keeps_the_head(world: World) -> None:
    session = world.session()
    first = world.command(session.id, Configure({"generate": False}))
    assert first.head == session.head
    assert first.revision == session.revision + 1
    memory = read(world, world.ana, session.id)
    assert memory["overrides"] == {"generate": False}
    assert memory["settings"] == {"use": True, "generate": False}
    world.command(session.id, Configure({"use": False}))  # generate missing: kept
    assert read(world, world.ana, session.id)["overrides"] == {
        "use": False,
        "generate": False,
    }
    world.command(session.id, Configure({"generate": None}))
    memory = read(world, world.ana, session.id)
    assert memory["overrides"] == {"use": False}
    assert memory["settings"] == {"use": False, "generate": True}


def test_switches_follow_the_organization_unless_overridden(world: World) -> None:
    session = world.session()
    admin = Principal("root", "acme", "admin")
    world.org_settings.patch(admin, "acme", {"memory": {"use": False}})
    assert read(world, world.ana, session.id)["settings"] == {"use": False, "generate": True}
    world.command(session.id, Configure({"use": True}))
    assert read(world, world.ana, session.id)["settings"] == {"use": True, "generate": True}


def test_refresh(world: World) -> None:
    session = world.session()
    world.turn(session.id, "Hi")
    world.learning.starts.clear()
    # Refresh does not check expected and revision.
    same = world.memory.command(world.ana, session.id, "v-stale", 999, Refresh())
    assert same.revision == world.sessions.get(world.ana, session.id).revision
    assert [(upto, reason) for _, upto, reason in world.learning.starts] == [(1, "refresh")]

    world.command(session.id, Configure({"generate": False}))
    world.learning.starts.clear()
    world.command(session.id, Refresh())
    assert world.learning.starts == []  # generate off: nothing

    no_model = world.session(model=None)
    with pytest.raises(SessionConflict, match="no model"):
        world.command(no_model.id, Refresh())


# --- turns --------------------------------------------------------------------------------


def test_a_turn_appends_items_and_starts_learning(world: World) -> None:
    session = world.session()
    result = world.turn(session.id, "Plan a trip to Lisbon.", "The budget is 1500 EUR.")
    assert result.item_ids == ["i-01", "i-02"]
    assert result.learning == "started"
    assert result.agent_learning == "skipped"
    assert result.session.head != session.head
    assert result.session.revision == 1
    assert world.learning.starts[-1][1:] == (2, "turn")


def test_when_a_turn_learns_nothing(world: World) -> None:
    session = world.session()
    app_only = world.sessions.turn(world.ana, session.id, [NewItem("tool", "{}", app="calendar")])
    assert app_only.learning == "skipped"
    assert app_only.session.item_count == 1
    assert read(world, world.ana, session.id)["entries"] == {}

    world.command(session.id, Configure({"generate": False}))
    assert world.turn(session.id, "Hi").learning == "skipped"
    assert world.turn(world.session(model=None).id, "Hi").learning == "skipped"
    assert world.learning.starts == []


def test_a_turn_with_a_stale_revision_is_a_conflict(world: World) -> None:
    session = world.session()
    world.turn(session.id, "Hi")
    with pytest.raises(SessionConflict):
        world.turn(session.id, "Again", expected=session.head, revision=session.revision)
    # Without a condition it applies to the newest state.
    assert world.turn(session.id, "Again").session.revision == 2


def test_only_the_owner_sees_a_session(world: World) -> None:
    session = world.session()
    with pytest.raises(NotFound):
        read(world, world.ben, session.id)
    with pytest.raises(NotFound):
        read(world, Principal("eve", "other", "member"), session.id)


# --- memory text --------------------------------------------------------------------------


def test_memory_text_decrypts_only_what_it_renders(world: World) -> None:
    session = world.session()
    for n in range(30):
        world.command(session.id, Remember(f"k{n:02d}", "x" * 900, "fact"))
    world.cipher.opens = 0
    text = world.memory.text(world.ana, session.id)
    assert len(text.keys) == 8  # 8 lines of ~915 characters fit in 8000 with the header
    assert text.keys[0] == "k29"
    assert world.cipher.opens == len(text.keys)
    world.command(session.id, Configure({"use": False}))
    assert MemoryText.of(world.memory.text(world.ana, session.id)).model_dump() == {
        "text": "",
        "keys": [],
        "length": 0,
        "maxLength": 8000,
    }


# --- fork ---------------------------------------------------------------------------------


def test_fork_copies_history_memory_and_overrides_then_both_are_independent(world: World) -> None:
    session = world.session()
    world.turn(session.id, "Hi")
    world.command(session.id, Remember("budget", "1500 EUR.", "fact"))
    source = world.command(session.id, Configure({"generate": False}))
    fork = world.sessions.fork(world.ana, session.id)
    assert (fork.head, fork.revision, fork.parent_id) == (source.head, source.revision, session.id)
    assert read(world, world.ana, fork.id) == read(world, world.ana, session.id)

    world.command(fork.id, Forget("budget"))
    assert read(world, world.ana, session.id)["entries"]["budget"]["status"] == "active"
    # A ciphertext copied from one session to the other does not open.
    source_row = world.store.rows[(session_pk(session.id), f"MEM#{entry_id('budget')}")]
    world.store.rows[(session_pk(fork.id), f"MEM#{entry_id('budget')}")]["content"] = source_row[
        "content"
    ]
    with pytest.raises(IntegrityError):
        read(world, world.ana, fork.id)


def test_a_large_fork_writes_the_head_row_last(world: World) -> None:
    session = world.session()
    for n in range(3):
        world.turn(session.id, *[f"item {n}-{m}" for m in range(60)])
    writes: list[list[Any]] = []
    original = world.store.write
    world.store.write = lambda actions: (writes.append(list(actions)), original(actions))[1]  # type: ignore[method-assign]
    fork = world.sessions.fork(world.ana, session.id)
    assert len(writes) == 2
    assert any(getattr(a, "record", {}).get("sk") == "META" for a in writes[-1])
    assert not any(getattr(a, "record", {}).get("sk") == "META" for a in writes[0])
    assert world.sessions.get(world.ana, fork.id).item_count == 180


# --- the session pool ---------------------------------------------------------------------


def finish_marker(world: World, name: str = "done") -> Any:
    def finish(outcome: Outcome) -> list[Any]:
        return [Put({"pk": "EXEC", "sk": name, "applied": outcome.applied}, Absent())]

    return finish


def test_consolidation_changes_revision_not_head_and_moves_the_read_position(world: World) -> None:
    session = world.session()
    turned = world.turn(session.id, "Plan a trip.", "The budget is 1500 EUR.").session
    evidence = world.pool.load_evidence(PoolRef("session", "acme", session.id), 2)
    assert evidence is not None
    assert [i.id for i in evidence.items] == ["i-01", "i-02"]
    assert evidence.items[1].content == "The budget is 1500 EUR."
    outcome = apply_cycle(
        world.store,
        world.pool,
        evidence,
        [ProposedRemember("budget", "The trip budget is 1500 EUR.", "fact", ("i-02",))],
        finish_marker(world),
    )
    assert outcome.applied == [{"key": "budget", "op": "remember"}]
    after = world.sessions.get(world.ana, session.id)
    assert after.head == turned.head
    assert after.revision == turned.revision + 1
    memory = read(world, world.ana, session.id)
    assert memory["processed"] == ["i-01", "i-02"]
    assert memory["entries"]["budget"]["sources"] == ["i-02"]
    assert world.store.rows[("EXEC", "done")]["applied"] == outcome.applied
    # The same evidence is never applied twice.
    with pytest.raises(AlreadyApplied):
        apply_cycle(world.store, world.pool, evidence, [], finish_marker(world, "again"))
    assert world.pool.load_evidence(PoolRef("session", "acme", session.id), None) is None


def test_an_edit_made_while_the_model_works_is_kept(world: World) -> None:
    session = world.session()
    world.turn(session.id, "The budget is 1500 EUR.", "Forget the hotel.")
    world.command(session.id, Remember("hotel", "Hotel Sol.", "fact"))  # before the run
    ref = PoolRef("session", "acme", session.id)
    evidence = world.pool.load_evidence(ref, None)
    assert evidence is not None
    world.command(session.id, Remember("budget", "The budget is 900 EUR.", "fact"))  # meanwhile
    outcome = apply_cycle(
        world.store,
        world.pool,
        evidence,
        [
            ProposedRemember("budget", "The budget is 1500 EUR.", "fact", ("i-01",)),
            ProposedForget("hotel", ("i-02",)),
        ],
        finish_marker(world),
    )
    assert outcome.applied == [{"key": "hotel", "op": "forget"}]
    assert outcome.rejected == [
        {
            "change": {"op": "remember", "key": "budget", "kind": "fact", "sources": ["i-01"]},
            "reason": rules.EDITED_MEANWHILE,
        }
    ]
    entries = read(world, world.ana, session.id)["entries"]
    assert entries["budget"]["content"] == "The budget is 900 EUR."
    assert entries["hotel"]["status"] == "retracted"


def test_a_failed_finish_writes_nothing(world: World) -> None:
    session = world.session()
    world.turn(session.id, "The budget is 1500 EUR.")
    evidence = world.pool.load_evidence(PoolRef("session", "acme", session.id), None)
    assert evidence is not None
    world.store.write([Put({"pk": "EXEC", "sk": "done"})])
    before = world.rows()
    with pytest.raises(WriteConflict):
        apply_cycle(
            world.store,
            world.pool,
            evidence,
            [ProposedRemember("budget", "1500 EUR.", "fact", ("i-01",))],
            finish_marker(world),
        )
    assert world.rows() == before


def test_evidence_reads_only_unprocessed_items_and_hides_retracted_text(world: World) -> None:
    session = world.session()
    world.turn(session.id, "one")
    ref = PoolRef("session", "acme", session.id)
    first = world.pool.load_evidence(ref, None)
    assert first is not None
    apply_cycle(world.store, world.pool, first, [], finish_marker(world))
    world.command(
        session.id, Remember("old", "Old fact.", "fact")
    )  # not auto-read: i-01 read, so it is
    world.command(session.id, Forget("old"))
    world.turn(session.id, "two", "three")
    evidence = world.pool.load_evidence(ref, None)
    assert evidence is not None
    assert [i.id for i in evidence.items] == ["i-04", "i-05"]
    assert [(e.key, e.content, e.status) for e in evidence.memory] == [("old", "", "retracted")]
    assert evidence.position == 3
    assert evidence.upto == 5


def test_no_evidence_when_generate_is_off(world: World) -> None:
    session = world.session()
    world.turn(session.id, "one")
    world.command(session.id, Configure({"generate": False}))
    with pytest.raises(Skipped) as skipped:
        world.pool.load_evidence(PoolRef("session", "acme", session.id), None)
    assert skipped.value.reason == GENERATE_OFF


def test_the_conditional_write_guards_a_command_read_before_another_landed(world: World) -> None:
    session = world.session()
    access = world.memory._access
    stale = world.sessions.get(world.ana, session.id)
    world.command(session.id, Remember("budget", "1500 EUR.", "fact"))
    before = world.rows()
    # The command read the Session before the Remember landed; its write must fail.
    access.load = lambda *_args: stale  # type: ignore[method-assign]
    with pytest.raises(SessionConflict):
        world.memory.command(
            world.ana, session.id, stale.head, stale.revision, Remember("city", "Lisbon.", "fact")
        )
    with pytest.raises(SessionConflict):
        world.memory.command(
            world.ana, session.id, stale.head, stale.revision, Configure({"use": False})
        )
    assert world.rows() == before


def test_a_key_that_carries_a_secret_is_refused_and_nothing_is_written(world: World) -> None:
    session = world.session()
    before = world.rows()
    with pytest.raises(ValidationFailed) as refused:
        world.command(session.id, Remember("admin-login-root-hunter2", "Root access.", "fact"))
    assert refused.value.path == ["command", "key"]
    assert "hunter2" not in refused.value.message
    assert world.rows() == before
