"""A person's bot memory read and the memory Bot's apply read only the audience rows that can
admit their reader (ADR 0083), and still answer exactly as a judge over the whole pool,
from one version of it."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.domain.audiences import Judge, Person
from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.errors import EntryConflict
from agent_memory.domain.tasks.learning_changes import (
    FactChange,
    InvalidateChange,
    ObservationChange,
)
from agent_memory.persistence.bot_memory import bot_pool
from agent_memory.ports import Absent
from agent_memory.service.bot_memory import BotMemoryService
from agent_memory.service.bots import Members
from tests.support.bot_memory import (
    ORG,
    PEOPLE,
    MemoryBot,
    bot_memory_world,
    principal_of,
    said,
)

MEMBERS = ("ana", "ben", "cy")


class World:
    def __init__(self) -> None:
        self.memory, self.store = bot_memory_world()
        self.learning = MemoryBot(self.memory)
        bots = self.memory.bots
        self.bot_id = bots.create_bot(principal_of("ana"), "Helper", {}).id
        self.channel = bots.create_channel(principal_of("ana"), "team", list(MEMBERS)).id
        self.chats = {
            p: bots.create_chat(principal_of(p), self.bot_id, None, "chat").id for p in PEOPLE
        }
        self.chats["group"] = bots.create_chat(
            principal_of("ana"), self.bot_id, self.channel, "chat"
        ).id

    def fact(self, where: str, speaker: str) -> list[str]:
        chat = self.chats[where]
        item = said(self.memory, principal_of(speaker), chat, f"{speaker} says hi")
        change = FactChange(op="fact", content=f"{speaker} fact", topics=[], sources=[item])
        return self.learning.ids(self.learning.learn(chat, change))

    def for_everyone(self, n: int) -> list[str]:
        """An entry for everyone who uses the Bot, committed as a change commits (no route
        learns one from a chat: an item's rule is a person's or a Channel's)."""
        memory, pool = self.memory, bot_pool(self.bot_id, ORG)
        before = memory.repo.head(pool).version
        meta = EntryMeta(
            id=f"mem_all{n}_{before}",
            layer="pinned",
            kind="pinned",
            tags=("from:ana", "for:bot", f"org:{ORG}"),
            length=1,
            rev=before + 1,
        )
        rows = memory.repo.pools.put(pool, meta, "for all", condition=Absent())
        marks = memory.repo.marks(pool, memory.snapshot(pool).metas().values(), [meta])
        memory.commit_change(pool, before, 1, [*rows, *marks], (meta.id,))
        return [meta.id]

    def whole_pool_sees(self, person: str) -> set[str]:
        """What the judge over EVERY entry of the pool shows `person` (the reference)."""
        memory: BotMemoryService = self.memory
        snap = memory.snapshot(bot_pool(self.bot_id, ORG))
        metas = snap.metas()
        members = Members(memory.bots.repo, person, ORG).load([self.channel])
        judge = Judge(metas.get)
        reader = Person(person, ORG, members)
        return {m.id for m in metas.values() if judge.sees(reader, m)}

    def read(self, person: str) -> Any:
        return self.memory.read(principal_of(person), self.bot_id)


step = st.one_of(
    st.tuples(st.just("everyone"), st.integers(0, 3)),
    st.tuples(st.just("fact"), st.sampled_from((*PEOPLE, "group")), st.sampled_from(MEMBERS)),
    st.tuples(
        st.just("observe"),
        st.sampled_from((*PEOPLE, "group")),
        st.lists(st.integers(0, 30), min_size=1, max_size=3),
    ),
    st.tuples(st.just("forget"), st.sampled_from(PEOPLE), st.integers(0, 30)),
    st.tuples(st.just("invalidate"), st.sampled_from(PEOPLE), st.integers(0, 30)),
    st.tuples(
        st.just("share"),
        st.sampled_from(PEOPLE),
        st.integers(0, 30),
        st.sampled_from(("channel", "bot")),
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=12))
def test_a_persons_read_by_audience_shows_what_the_whole_pool_judge_shows(
    steps: list[Any],
) -> None:
    world = World()
    made: list[str] = []
    for kind, *args in steps:
        if kind == "fact":
            where, speaker = args
            made += world.fact(where, where if where != "group" else speaker)
        elif kind == "everyone":
            made += world.for_everyone(args[0])
        elif kind == "observe" and made:
            where, picks = args
            sources = [made[i % len(made)] for i in picks]
            change = ObservationChange(
                op="observation", content="o", confidence=0.5, topics=[], sources=sources
            )
            chat = world.chats[where]
            made += world.learning.ids(world.learning.learn(chat, change))
        elif kind == "invalidate" and made:
            who, index = args
            change_i = InvalidateChange(op="invalidate", id=made[index % len(made)])
            world.learning.learn(world.chats[who], change_i)
        elif kind == "forget" and made:
            who, index = args
            with contextlib.suppress(EntryConflict):
                world.memory.forget(principal_of(who), world.bot_id, made[index % len(made)])
        elif kind == "share" and made:
            who, index, where = args
            audience = f"for:channel:{world.channel}" if where == "channel" else "for:bot"
            with contextlib.suppress(EntryConflict):
                world.memory.share(
                    principal_of(who), world.bot_id, made[index % len(made)], audience
                )
    for person in PEOPLE:
        read = world.read(person)
        assert {e.meta.id for e in read.entries} == world.whole_pool_sees(person)


class Counting:
    """Rows the store hands back, counted."""

    def __init__(self, store: Any) -> None:
        self.rows = 0
        self._query, self._get_many = store.query, store.get_many

    def query(self, *args: Any, **kwargs: Any) -> Any:
        page = self._query(*args, **kwargs)
        self.rows += len(page.records)
        return page

    def get_many(self, *args: Any, **kwargs: Any) -> Any:
        rows = self._get_many(*args, **kwargs)
        self.rows += len(rows)
        return rows


def test_a_persons_read_reads_their_entries_not_the_pool(monkeypatch: Any) -> None:
    world = World()
    mine = world.fact("ana", "ana") + world.fact("ana", "ana") + world.fact("group", "ben")
    for _ in range(60):
        world.fact("ben", "ben")
    world.fact("dee", "dee")
    counting = Counting(world.store)
    monkeypatch.setattr(world.store, "query", counting.query)
    monkeypatch.setattr(world.store, "get_many", counting.get_many)
    read = world.read("ana")
    assert sorted(e.meta.id for e in read.entries) == sorted(mine)
    # The head with the channel's mark, her rows and the channel's, the channel row, the
    # head again: nothing of Ben's 60 private facts or Dee's.
    assert counting.rows <= len(mine) + 4
    counting.rows = 0
    assert len(world.read("ben").entries) == 61
    assert counting.rows <= 61 + 4


def test_a_read_retries_when_a_change_commits_while_it_reads(monkeypatch: Any) -> None:
    world = World()
    first = world.fact("ana", "ana")
    repo = world.memory.repo
    original = repo.read_audiences
    fired: list[bool] = []

    def meanwhile(*args: Any) -> Any:
        found = original(*args)
        if not fired:
            fired.append(True)
            # Ana forgets her fact after the read took the version, before it checks it.
            world.memory.forget(principal_of("ana"), world.bot_id, first[0])
        return found

    monkeypatch.setattr(repo, "read_audiences", meanwhile)
    read = world.read("ana")
    # Not the rows read before the Forget: the read saw the version move and read again.
    assert read.version == 2
    assert [e.meta.status for e in read.entries] == ["retracted"]


def test_a_group_apply_marks_its_channel_once_and_the_members_read_it() -> None:
    world = World()
    team = world.fact("group", "ana") + world.fact("group", "ben")
    pk = bot_pool(world.bot_id, ORG).pk
    marks = [r for r in world.store.query(pk).records if str(r["sk"]).startswith("MEMAUD#")]
    assert [r["sk"] for r in marks] == [f"MEMAUD#c#{world.channel}"]
    for person in MEMBERS:
        assert {e.meta.id for e in world.read(person).entries} == set(team)
    assert world.read("dee").entries == []
