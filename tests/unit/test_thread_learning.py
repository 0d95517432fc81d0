"""The thread background seam (service/thread_learning.py): what every thread step reads
after its read position, the conditional move of it, and one run per save."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.agents import Agent
from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.memory_options import effective_options
from agent_memory.domain.runs import RunView
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.keys import READ_POSITION
from agent_memory.persistence.threads import ThreadRepository
from agent_memory.service.learning_pools import AlreadyApplied, PoolRef
from agent_memory.service.thread_learning import (
    Saved,
    ThreadBackground,
    ThreadReader,
    ThreadStep,
    thread_pool,
)
from tests.support.in_memory import FakeCipher, FixedClock, InMemoryStore

KIND = "thread-test"


class Defaults:
    def active_options(self, agent_id: str) -> tuple[Agent | None, dict[str, Any]]:
        return None, effective_options(None)


@pytest.fixture
def parts() -> tuple[InMemoryStore, ThreadRepository, ThreadReader, Thread]:
    store = InMemoryStore()
    repo = ThreadRepository(store, FakeCipher())
    thread = Thread("th_1", "org_1", "ag_1", "ana", None, 1_000)
    repo.create(thread)
    return store, repo, ThreadReader(repo, Defaults(), FixedClock()), thread


def add(repo: ThreadRepository, thread: Thread, *contents: str) -> int:
    stored = repo.get(thread.id)
    assert stored is not None
    messages = [Message(f"msg_{stored.seq + n}", "user", c, 0) for n, c in enumerate(contents)]
    repo.append(thread, stored.seq, messages, 0)
    return stored.seq + len(messages)


def test_a_run_reads_the_messages_after_its_position_and_moves_it(parts: Any) -> None:
    store, repo, reader, thread = parts
    pool = PoolRef(KIND, thread.org_id, thread.id)
    upto = add(repo, thread, "a", "b", "c")
    batch = reader.load(pool, upto)
    assert batch is not None
    assert (batch.position, batch.upto) == (0, 3)
    assert [m.content for _seq, m in batch.messages] == ["a", "b", "c"]
    assert batch.options["lastMessages"] == 10
    store.write([reader.advance(thread.id, KIND, batch.position, batch.upto)])
    assert reader.load(pool, upto) is None
    # The next save's run reads only what came after; another kind has its own position.
    upto = add(repo, thread, "d", "e")
    later = reader.load(pool, upto)
    assert later is not None
    assert [(seq, m.content) for seq, m in later.messages] == [(3, "d"), (4, "e")]
    other = reader.load(PoolRef("thread-other", thread.org_id, thread.id), upto)
    assert other is not None
    assert len(other.messages) == 5


def test_a_stale_position_is_a_named_conflict(parts: Any) -> None:
    store, repo, reader, thread = parts
    add(repo, thread, "a", "b")
    first, second = reader.advance(thread.id, KIND, 0, 2), reader.advance(thread.id, KIND, 0, 2)
    store.write([first])
    # Built on the same read: the commit loses on the position's count of moves.
    with pytest.raises(WriteConflict) as raised:
        store.write([second])
    assert raised.value.condition == READ_POSITION
    # Built after the move: the run is told at once that another applied.
    with pytest.raises(AlreadyApplied):
        reader.advance(thread.id, KIND, 0, 2)


def test_a_run_is_bounded_and_the_next_starts_where_it_stopped(parts: Any) -> None:
    _store, repo, reader, thread = parts
    pool = PoolRef(KIND, thread.org_id, thread.id)
    upto = add(repo, thread, *[f"m{n}" for n in range(6)])
    limited = reader.load(pool, upto, limit=2)
    assert limited is not None
    assert ([m.content for _s, m in limited.messages], limited.upto) == (["m0", "m1"], 2)
    big = add(repo, thread, "x" * 100, "y" * 100)
    cut = reader.load(PoolRef("thread-big", thread.org_id, thread.id), big, budget=150)
    assert cut is not None
    # At least one message, then within the budget.
    assert [m.content for _s, m in cut.messages][:1] == ["m0"]
    assert cut.upto == len(cut.messages)
    assert cut.upto < big


def test_another_organizations_pool_reads_nothing(parts: Any) -> None:
    _store, repo, reader, thread = parts
    upto = add(repo, thread, "a")
    assert reader.load(PoolRef(KIND, "org_2", thread.id), upto) is None


class Recorder:
    def __init__(self) -> None:
        self.started: list[tuple[PoolRef, int]] = []

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> str:
        self.started.append((pool, upto))
        return "started"

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[RunView]:
        started = {"thread-a": 1, "thread-b": 2}[pool.kind]
        return [RunView(f"{pool.kind}-1", "succeeded", started, started, "turn", None)]


class Step(ThreadStep):
    def __init__(self, kind: str, wants: bool) -> None:
        self.kind = kind
        self.wants = wants

    def wanted(self, saved: Saved) -> bool:
        return self.wants

    def task(self, evidence: Any) -> Any:
        raise AssertionError("not run here")

    def read_evidence(self, pool: PoolRef, upto: int | None) -> Any:
        raise AssertionError("not run here")

    def change(self, evidence: Any, changes: Any, finish: Any) -> Any:
        raise AssertionError("not run here")


def test_a_save_of_many_messages_starts_one_run_per_step_that_wants_it() -> None:
    learning = Recorder()
    background = ThreadBackground(learning, [Step("thread-a", True), Step("thread-b", False)])
    thread = Thread("th_1", "org_1", "ag_1", "ana", None, 1_000)
    messages = tuple(Message(f"msg_{n}", "user", "hi", 0) for n in range(40))
    background.after_save(Saved(thread, effective_options(None), 10, 50, messages))
    assert learning.started == [(thread_pool("thread-a", thread), 50)]
    # Every step's executions of the thread, newest first, each with its kind.
    kinds = [run.kind for run in background.executions(thread)]
    assert kinds == ["thread-b", "thread-a"]
