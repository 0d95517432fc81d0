"""Bot memory rules (domain/bot_memory.py, domain/bot_changes.py), and a property over
random source graphs built through the service (in-memory store and cipher): nobody ever
sees an entry unless they may see every source, recursively."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.domain import bot_changes as changes
from agent_memory.domain import bot_memory as rules
from agent_memory.domain.audiences import Judge, Person
from agent_memory.domain.bot_memory_purge import purge_targets
from agent_memory.domain.bots import Chat, ChatItem
from agent_memory.domain.entries import EntryMeta, EntrySource
from agent_memory.domain.errors import EntryConflict
from agent_memory.domain.tasks.learning_changes import (
    FactChange,
    InvalidateChange,
    ObservationChange,
)
from agent_memory.ports import KeyRange
from agent_memory.service.bot_memory import BotMemoryService
from tests.support.bot_memory import (
    ORG,
    PEOPLE,
    MemoryBot,
    bot_memory_world,
    entry,
    principal_of,
    said,
)

PRIVATE = Chat("chat_p", "bot_1", ORG, "ana", None, "chat")
GROUP = Chat("chat_g", "bot_1", ORG, "ana", "ch_1", "chat")


# --- facts ---------------------------------------------------------------------------------


def test_a_fact_needs_a_persons_words_and_takes_the_items_rule() -> None:
    items = {
        "i-01": ChatItem(1, "t1", "user", "ana"),
        "i-02": ChatItem(2, "t1", "assistant", None),
        "i-03": ChatItem(3, "t1", "tool", None, "menu"),
        "i-04": ChatItem(4, "t1", "notice", None),
    }
    actors = {"t1": "ana"}

    def make(chat: Chat, *cited: str, topics: tuple[str, ...] = ("food",)) -> Any:
        run = changes.Run(chat, frozenset(), Person("ana", ORG), items, actors)
        change = FactChange(op="fact", content="x", topics=list(topics), sources=list(cited))
        return changes.learned_fact("mem_1", run, change, 5, 1)

    for alone in ("i-02", "i-03", "i-04"):
        assert make(PRIVATE, alone) == changes.FACT_NEEDS_PERSON
    assert make(PRIVATE) == changes.FACT_NO_SOURCE
    assert make(PRIVATE, "i-01", "i-09") == changes.UNKNOWN_ITEM.format(item="i-09")
    meta, rule = make(PRIVATE, "i-01", "i-03")
    assert meta.tags == (
        "from:ana",
        "for:person:ana",
        "org:o1",
        "chat:chat_p",
        "app:menu",
        "food",
    )
    assert rule == ("for:person:ana", "org:o1")
    group, _rule = make(GROUP, "i-01")
    assert "for:channel:ch_1" in group.tags
    assert "channel:ch_1" in group.tags
    assert "for:person:ana" not in group.tags
    colon = make(PRIVATE, "i-01", topics=("a:b",))
    assert isinstance(colon, str)
    assert "colon" in colon


def test_an_observation_carries_its_sources_tags_and_needs_proved_sources() -> None:
    pool = {
        "a": entry("a", "from:ana", "for:person:ana", "org:o1", "chat:c1"),
        "b": entry("b", "from:ben", "for:person:ben", "org:o1", "chat:c2"),
        "gone": EntryMeta(id="gone", tags=("for:person:ana", "org:o1"), status="retracted"),
        "hidden": entry("hidden", "org:o1"),
    }
    judge = Judge(pool.get)
    made = changes.observation("o", judge, ORG, observe("a", "b"), pool, 1, 1)
    assert isinstance(made, EntryMeta)
    assert set(made.tags) >= {"from:ana", "from:ben", "chat:c1", "chat:c2", "org:o1"}
    pool["o"] = made
    judge = Judge(pool.get)
    assert not judge.sees(Person("ana", ORG), made)
    assert not judge.sees(Person("ben", ORG), made)

    def refused(*cited: str) -> Any:
        return changes.observation("o2", judge, ORG, observe(*cited), pool, 1, 1)

    assert refused("gone") == changes.INVALID_SOURCE.format(entry="gone")
    assert refused("hidden") == changes.UNPROVED_SOURCE.format(entry="hidden")
    assert refused("nope") == changes.UNKNOWN_ENTRY.format(entry="nope")
    assert refused() == changes.OBSERVATION_NO_SOURCE


def observe(*cited: str) -> ObservationChange:
    return ObservationChange(
        op="observation", content="x", confidence=0.5, topics=[], sources=list(cited)
    )


# --- forget, purge --------------------------------------------------------------------------


def test_forget_retracts_for_the_sole_person_and_excludes_the_others() -> None:
    shared = entry("s", "from:ana", "from:ben", "for:channel:ch_1", "org:o1")
    judge = Judge({"s": shared}.get)
    members = {"ana", "ben", "cy"}

    def reader(user: str) -> Person:
        return Person(user, ORG, {"ch_1"} if user in members else set())

    after = rules.forgotten(judge, reader("ben"), shared, "ben", 9, 2)
    assert after is not None
    assert after.active
    assert "from:ben" not in after.tags
    assert "forgot:ben" in after.tags
    judge_after = Judge({"s": after}.get)
    assert not judge_after.sees(reader("ben"), after)
    assert judge_after.sees(reader("cy"), after)
    # ana is now the only person behind it: her Forget retracts it for everyone.
    sole = rules.forgotten(judge_after, reader("ana"), after, "ana", 10, 3)
    assert sole is not None
    assert sole.status == "retracted"
    alone = entry("p", "from:ana", "for:person:ana", "org:o1")
    judge_alone = Judge({"p": alone}.get)
    retracted = rules.forgotten(judge_alone, reader("ana"), alone, "ana", 11, 4)
    assert retracted is not None
    assert retracted.status == "retracted"
    assert rules.forgotten(judge_alone, reader("ana"), retracted, "ana", 12, 5) is None
    with pytest.raises(EntryConflict):
        rules.forgotten(judge_alone, reader("ben"), alone, "ben", 11, 4)
    with pytest.raises(EntryConflict):
        rules.forgotten(judge_alone, reader("ana"), None, "ana", 11, 4)


def test_purge_takes_tagged_entries_and_everything_built_on_them() -> None:
    metas = [
        entry("a", "from:ana"),
        entry("b", "from:ben"),
        entry("o1", sources=("a", "b")),
        entry("o2", sources=("o1",)),
        entry("o3", sources=("b",)),
    ]
    assert purge_targets(metas, "from:ana") == {"a", "o1", "o2"}
    assert purge_targets(metas, "from:ben") == {"b", "o1", "o2", "o3"}
    assert purge_targets(metas, "chat:none") == set()


# --- the property, through the service -----------------------------------------------------

MEMBERS = ("ana", "ben", "cy")


step = st.one_of(
    st.tuples(st.just("fact"), st.sampled_from((*PEOPLE, "group")), st.sampled_from(MEMBERS)),
    st.tuples(st.just("observe"), st.lists(st.integers(0, 30), min_size=1, max_size=3)),
    st.tuples(st.just("forget"), st.sampled_from(PEOPLE), st.integers(0, 30)),
    st.tuples(st.just("invalidate"), st.integers(0, 30)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=14))
def test_no_reader_sees_an_entry_unless_they_may_see_every_source(steps: list[Any]) -> None:
    memory, _store = bot_memory_world()
    learning = MemoryBot(memory)
    bots = memory.bots
    bot_id = bots.create_bot(principal_of("ana"), "Helper", {}).id
    channel = bots.create_channel(principal_of("ana"), "team", list(MEMBERS)).id
    chats = {p: bots.create_chat(principal_of(p), bot_id, None, "chat").id for p in PEOPLE}
    chats["group"] = bots.create_chat(principal_of("ana"), bot_id, channel, "chat").id
    made: list[str] = []
    for kind, *args in steps:
        if kind == "fact":
            where, speaker = args
            speaker = where if where != "group" else speaker
            chat = chats[where]
            item = said(memory, principal_of(speaker), chat, f"{speaker} says hi")
            change = FactChange(op="fact", content="f", topics=[], sources=[item])
            learned = learning.learn(chat, change)
        elif kind == "observe":
            if not made:
                continue
            sources = [made[i % len(made)] for i in args[0]]
            change_o = ObservationChange(
                op="observation", content="o", confidence=0.5, topics=[], sources=sources
            )
            learned = learning.learn(chats["ana"], change_o)
        elif kind == "invalidate":
            if not made:
                continue
            change_i = InvalidateChange(op="invalidate", id=made[args[0] % len(made)])
            learning.learn(chats["ana"], change_i)
            continue
        else:
            person, index = args
            if made:
                with contextlib.suppress(EntryConflict):
                    memory.forget(principal_of(person), bot_id, made[index % len(made)])
            continue
        made += learning.ids(learned)

    snapshot = memory.snapshot(memory._access(principal_of("ana"), bot_id).pool)
    pool = snapshot.metas()
    for person in PEOPLE:
        seen = {e.meta.id for e in memory.read(principal_of(person), bot_id).entries}
        assert seen == _oracle(pool, person)
        for entry_id in seen:
            for source in pool[entry_id].sources:
                if isinstance(source, EntrySource):
                    # Every source of what a reader sees is valid and seen by them too.
                    assert source.entry in seen
                    assert rules_valid(pool[source.entry])


def rules_valid(meta: EntryMeta) -> bool:
    return meta.active and meta.invalidated_at is None


def _own(meta: EntryMeta, person: str) -> bool:
    tags = set(meta.tags)
    if f"forgot:{person}" in tags or f"org:{ORG}" not in tags:
        return False
    if any(t.startswith("org:") and t != f"org:{ORG}" for t in tags):
        return False
    return (
        "for:bot" in tags
        or f"for:person:{person}" in tags
        or (person in MEMBERS and "for:channel:" + _channel(tags) in tags)
    )


def _channel(tags: set[str]) -> str:
    named = [t.removeprefix("for:channel:") for t in tags if t.startswith("for:channel:")]
    return named[0] if named else "\x00"


def _oracle(pool: dict[str, EntryMeta], person: str) -> set[str]:
    """An independent statement of the rule: own tags admit the person, and every entry
    source exists, is valid and is visible to them, recursively (graphs built by learning
    have no loops: sources exist before what stands on them)."""

    def visible(entry_id: str) -> bool:
        meta = pool.get(entry_id)
        if meta is None or not _own(meta, person):
            return False
        return all(
            s.entry in pool and rules_valid(pool[s.entry]) and visible(s.entry)
            for s in meta.sources
            if isinstance(s, EntrySource)
        )

    return {entry_id for entry_id in pool if visible(entry_id)}


def _one_chat(memory: BotMemoryService, text: str) -> tuple[str, str, str]:
    """A bot, a private chat of ana's, and the id of her input `text`."""
    bots = memory.bots
    bot_id = bots.create_bot(principal_of("ana"), "Helper", {}).id
    chat = bots.create_chat(principal_of("ana"), bot_id, None, "chat").id
    return bot_id, chat, said(memory, principal_of("ana"), chat, text)


def test_a_fact_and_its_rule_commit_together_or_not_at_all(monkeypatch: Any) -> None:
    memory, store = bot_memory_world()
    learning = MemoryBot(memory)
    bot_id, chat, item = _one_chat(memory, "I run.")
    run = learning.read(chat)

    def stopped(actions: Any) -> None:
        raise RuntimeError("the function was stopped before its transaction")

    change = FactChange(op="fact", content="r", topics=[], sources=[item])
    with monkeypatch.context() as stopping:
        stopping.setattr(store, "write", stopped)
        with pytest.raises(RuntimeError):
            learning.apply(run, change)
    pk = f"BOTMEM#{bot_id}#{ORG}"
    assert store.query(pk, KeyRange(low="", high="~")).records == []
    learned = learning.apply(run, change)
    rows = store.query(pk, KeyRange(prefix="MEM#")).records
    assert [r["itemRule"] for r in rows] == [["for:person:ana", f"org:{ORG}"]]
    assert learning.ids(learned) == [str(rows[0]["sk"]).removeprefix("MEM#")]


def test_learn_commits_only_on_the_state_it_read(monkeypatch: Any) -> None:
    memory, _store = bot_memory_world()
    learning = MemoryBot(memory)
    bot_id, chat, item = _one_chat(memory, "I run.")
    run = learning.read(chat)
    repo = memory.repo
    original = repo.read_for_change
    reads = {"n": 0}

    def person_changes_meanwhile(pool: Any) -> Any:
        # A person's change commits after learning read the memory, before it writes.
        snap = original(pool)
        reads["n"] += 1
        if reads["n"] == 1:
            memory.remember(principal_of("ana"), bot_id, "Mine.", [])
        return snap

    monkeypatch.setattr(repo, "read_for_change", person_changes_meanwhile)
    change = FactChange(op="fact", content="r", topics=[], sources=[item])
    learned = learning.apply(run, change)
    # Its transaction, conditional on the version read, failed and it read again.
    assert (reads["n"], len(learned.applied)) == (2, 1)
    read = memory.read(principal_of("ana"), bot_id)
    assert (len(read.entries), read.version) == (2, 2)
    # A learning that applies nothing writes no version: it checks the version instead,
    # so its refusals stand on the newest state too.
    run = learning.read(chat)
    reads["n"] = 0
    nothing = learning.apply(run, InvalidateChange(op="invalidate", id="mem_x"))
    assert (reads["n"], nothing.applied) == (2, [])
    assert memory.read(principal_of("ana"), bot_id).version == 3
