"""The simulation's conflict rule (bench/pool_sim.py `replay`) against the real apply.

Several memory Bot applies (the pool engine's `apply_cycle` on the memory Bot's pool) run
on the embedded AWS, each in its own thread, and a schedule decides when each reads the pool
(`read_for_change`: the head, then the entries) and when each commits (the one transaction).
The real outcomes of the commits, the number of lost races and the pool's final version must
be what `replay` predicts for the same order; the simulation uses that same rule for every apply.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.tasks.learning_changes import FactChange
from bench.pool_sim import Head, Load, replay, simulate
from tests.conftest import Api
from tests.support.bot_memory import MemoryBot
from tests.support.bots import World, make_chat

Event = tuple[str, str]

# Each order is the time order of reads and commits of applies a, b, c, retries included.
ORDERS: dict[str, list[Event]] = {
    "two read before either commits": [
        ("read", "a"),
        ("read", "b"),
        ("commit", "a"),
        ("commit", "b"),
        ("read", "b"),
        ("commit", "b"),
    ],
    "a wave of three": [
        ("read", "a"),
        ("read", "b"),
        ("read", "c"),
        ("commit", "c"),
        ("commit", "a"),
        ("commit", "b"),
        ("read", "a"),
        ("read", "b"),
        ("commit", "b"),
        ("commit", "a"),
        ("read", "a"),
        ("commit", "a"),
    ],
    "apart": [
        ("read", "a"),
        ("commit", "a"),
        ("read", "b"),
        ("commit", "b"),
        ("read", "c"),
        ("commit", "c"),
    ],
}


class Scheduled:
    """Lets one apply thread at a time run; a read or a commit waits for its turn."""

    def __init__(self, order: list[Event]) -> None:
        self.order = order
        self.at = 0
        self.turns = threading.Condition()
        self.baton = threading.Lock()
        self.outcomes: list[tuple[str, str, bool | None]] = []
        self.who = threading.local()

    def event(self, kind: str, call: Callable[[], Any]) -> Any:
        me = (kind, self.who.name)
        self.baton.release()
        with self.turns:
            arrived = self.turns.wait_for(
                lambda: self.at < len(self.order) and self.order[self.at] == me, timeout=20
            )
        self.baton.acquire()
        assert arrived, f"{me} came outside the schedule after {self.outcomes}"
        outcome: bool | None = None
        try:
            result = call()
            outcome = True if kind == "commit" else None
            return result
        except WriteConflict:
            outcome = False
            raise
        finally:
            with self.turns:
                self.outcomes.append((kind, self.who.name, outcome))
                self.at += 1
                self.turns.notify_all()

    def run(self, name: str, work: Callable[[], Any], errors: list[BaseException]) -> None:
        self.who.name = name
        self.baton.acquire()
        try:
            work()
        except BaseException as error:
            errors.append(error)
        finally:
            self.baton.release()


def _race(world: World, order: list[Event], monkeypatch: pytest.MonkeyPatch) -> None:
    applies = sorted({who for _kind, who in order})
    bot = MemoryBot(world.services.bot_memory)
    runs, items = {}, {}
    for who in applies:
        # A chat per apply: each run's evidence is its own, so only the pool's version races.
        chat = make_chat(world.api, world.ana, world.bot["id"])
        items[who] = world.said(world.ana, chat, f"I keep note {who}.")
        runs[who] = bot.read(chat["id"])
    repo = world.services.bot_memory.repo
    scheduled = Scheduled(order)
    read, write = repo.read_for_change, bot.store.write
    monkeypatch.setattr(
        repo, "read_for_change", lambda pool: scheduled.event("read", lambda: read(pool))
    )
    monkeypatch.setattr(
        bot.store, "write", lambda actions: scheduled.event("commit", lambda: write(actions))
    )

    def apply(who: str) -> Callable[[], Any]:
        change = FactChange(op="fact", content=f"Note {who}.", topics=[], sources=[items[who]])
        return lambda: bot.apply(runs[who], change)

    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=scheduled.run, args=(who, apply(who), errors)) for who in applies
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    monkeypatch.undo()

    assert errors == []
    assert scheduled.outcomes == replay(order)
    lost = sum(1 for kind, _who, ok in scheduled.outcomes if kind == "commit" and not ok)
    assert lost == sum(1 for kind, _who, ok in replay(order) if kind == "commit" and not ok)
    # Every apply landed once: the pool moved once per apply, as the simulated head did.
    memory = world.page(world.ana)
    assert memory["version"] == len(applies)
    assert sorted(e["content"] for e in memory["entries"]) == [f"Note {w}." for w in applies]


def test_the_real_apply_loses_and_wins_the_races_the_simulation_predicts(
    api: Api, services: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One embedded AWS; each order on a Bot (and so a pool) of its own.
    for order in ORDERS.values():
        _race(World(api, services), order, monkeypatch)


def test_a_head_commits_only_on_the_version_it_read() -> None:
    head = Head()
    first, second = head.read(), head.read()
    assert head.commit(first) is True
    assert head.commit(second) is False
    assert head.commit(head.read()) is True
    assert head.version == 2


def test_the_simulated_pool_keeps_up_at_a_small_load_and_loses_no_apply() -> None:
    row = simulate(Load(1_000, days_of_growth=30), "audience", seconds=120)
    assert row["failed"] == 0
    assert row["unfinished"] == 0
    assert row["committed"] == row["applies"] > 0
    # Whole-pool reads of even a young pool do not keep up with the same people at scale.
    young = simulate(Load(10_000, days_of_growth=1), "pool", seconds=120)
    assert young["committed"] < young["applies"]
