"""Who sees one entry (seed 002, "Who sees an entry"): the seed's examples, then properties
checked against a plain recursive reading of the seed's rules."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.domain.audiences import (
    INACTIVE_SOURCE,
    LOOP,
    MISSING_SOURCE,
    NO_AUDIENCE_TAG,
    NO_ORGANIZATION,
    NOT_FOR_YOU,
    SHARE_INVALID,
    SHARE_NO_SOURCE,
    SHARE_NOT_WIDER,
    Audience,
    Everyone,
    Group,
    Hidden,
    Judge,
    Learner,
    Person,
    Reader,
    chat_readers,
    rule_of,
    share_reason,
    shared_tags,
)
from agent_memory.domain.bot_memory import share_audience
from agent_memory.domain.entries import EntryMeta, EntrySource, ItemSource, Source
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.tags import (
    BAD_TAG_VALUE,
    BAD_TOPIC,
    COLON_TAG,
    FOR_BOT,
    NOT_PURGEABLE,
    UNKNOWN_SERVICE_TAG,
    ForBot,
    ForChannel,
    ForPerson,
    FromApp,
    FromChannel,
    FromChat,
    FromPerson,
    InOrg,
    InvalidTag,
    Topic,
    parse_tag,
    purge_tag,
    require_topics,
    topic_reason,
)

Pool = dict[str, EntryMeta]


def entry(
    id: str,
    *tags: str,
    sources: Sequence[Source] = (),
    status: str = "active",
    invalidated_at: int | None = None,
    layer: str = "fact",
) -> EntryMeta:
    return EntryMeta(
        id=id,
        layer=layer,
        tags=tags,
        sources=tuple(sources),
        status="retracted" if status == "retracted" else "active",
        invalidated_at=invalidated_at,
    )


def on(*ids: str) -> tuple[EntrySource, ...]:
    return tuple(EntrySource(i) for i in ids)


def judge(pool: Pool, max_depth: int = 32) -> Judge:
    return Judge(pool.get, max_depth)


def pool_with(*entries: EntryMeta) -> Pool:
    return {e.id: e for e in entries}


def sees(pool: Pool, reader: Reader, entry_id: str) -> bool:
    return judge(pool).sees(reader, pool[entry_id])


ALICE = Person("u_alice", "o_1", frozenset({"c_team"}))
BOB = Person("u_bob", "o_1", frozenset({"c_team"}))
CAROL = Person("u_carol", "o_1")


# --- Tags -----------------------------------------------------------------------------------


def test_the_seeds_tags_parse_into_what_they_mean_and_print_back() -> None:
    texts = {
        "from:u_123": FromPerson("u_123"),
        "for:person:u_123": ForPerson("u_123"),
        "for:channel:c_9": ForChannel("c_9"),
        "for:bot": ForBot(),
        "org:o_1": InOrg("o_1"),
        "chat:chat_c81d": FromChat("chat_c81d"),
        "channel:c_9": FromChannel("c_9"),
        "app:calendar.search": FromApp("calendar.search"),
        "trip-planning": Topic("trip-planning"),
    }
    for text, tag in texts.items():
        assert parse_tag(text) == tag
        assert str(tag) == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("for:team:t_1", UNKNOWN_SERVICE_TAG),
        ("secret:x", UNKNOWN_SERVICE_TAG),
        ("for:person:", BAD_TAG_VALUE),
        ("org:o 1", BAD_TAG_VALUE),
        ("from:a,b", BAD_TAG_VALUE),
        ("Testing", BAD_TOPIC),
        ("trip planning", BAD_TOPIC),
        ("--", BAD_TOPIC),
        ("", BAD_TOPIC),
        ("a" * 65, BAD_TOPIC),
    ],
)
def test_a_malformed_tag_is_refused_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(InvalidTag) as raised:
        parse_tag(text)
    assert raised.value.reason == reason


def test_a_person_may_write_topics_but_never_a_colon_tag() -> None:
    assert require_topics(["testing", "trip-planning", "q3"], ["command", "tags"]) == (
        "testing",
        "trip-planning",
        "q3",
    )
    with pytest.raises(ValidationFailed) as raised:
        require_topics(["testing", "for:bot"], ["command", "tags"])
    assert raised.value.path == ["command", "tags", 1]
    assert COLON_TAG in raised.value.message
    assert topic_reason("for:person:u_1") == COLON_TAG


def test_purge_takes_only_a_where_or_who_tag() -> None:
    assert purge_tag("chat:chat_1") == FromChat("chat_1")
    assert purge_tag("from:u_1") == FromPerson("u_1")
    assert purge_tag("org:o_1") == InOrg("o_1")
    assert purge_tag("channel:c_1") == FromChannel("c_1")
    for text in ("for:bot", "for:person:u_1", "testing", "app:x"):
        with pytest.raises(InvalidTag) as raised:
            purge_tag(text)
        assert raised.value.reason == NOT_PURGEABLE


# --- The seed's examples ----------------------------------------------------------------------


def test_the_seeds_fact_is_for_its_person_in_its_organization_only() -> None:
    fact = entry(
        "mem_4f2a",
        "from:u_123",
        "for:person:u_123",
        "org:o_1",
        "chat:chat_c81d",
        "testing",
        sources=[ItemSource("i-12", "chat_c81d")],
    )
    pool = pool_with(fact)
    assert sees(pool, Person("u_123", "o_1"), "mem_4f2a")
    # Nobody reads the memory about another person (no role or grant is part of a reader).
    assert not sees(pool, Person("u_456", "o_1"), "mem_4f2a")
    # A linked Bot reads within the linked organization only.
    assert not sees(pool, Person("u_123", "o_2"), "mem_4f2a")
    assert sees(pool, Learner("o_1"), "mem_4f2a")
    assert not sees(pool, Learner("o_2"), "mem_4f2a")
    assert not sees(pool, Everyone("o_1"), "mem_4f2a")


def test_a_channel_audience_follows_the_current_members_at_every_read() -> None:
    fact = entry("f", "for:channel:c_team", "org:o_1")
    pool = pool_with(fact)
    members = {"u_alice", "u_bob"}

    def alice() -> Person:
        return Person("u_alice", "o_1", {"c_team"} if "u_alice" in members else set())

    assert sees(pool, alice(), "f")
    members.discard("u_alice")
    assert not sees(pool, alice(), "f")
    assert not sees(pool, CAROL, "f")


def test_for_bot_is_for_everyone_who_uses_the_bot_in_that_organization() -> None:
    pool = pool_with(entry("f", "for:bot", "org:o_1"))
    assert sees(pool, CAROL, "f")
    assert sees(pool, Group("c_team", "o_1"), "f")
    assert sees(pool, Everyone("o_1"), "f")
    assert not sees(pool, Person("u_carol", "o_2"), "f")


def test_nobody_sees_an_entry_without_a_for_tag_or_an_organization() -> None:
    pool = pool_with(entry("none", "from:u_1", "org:o_1"), entry("nowhere", "for:bot"))
    for reader in (ALICE, Learner("o_1"), Everyone("o_1")):
        assert not sees(pool, reader, "none")
        assert not sees(pool, reader, "nowhere")
    assert judge(pool).visibility(pool["none"]) == Hidden(NO_AUDIENCE_TAG, "none")
    assert judge(pool).visibility(pool["nowhere"]) == Hidden(NO_ORGANIZATION, "nowhere")


def test_an_unknown_service_tag_hides_the_entry() -> None:
    pool = pool_with(entry("f", "for:bot", "for:team:t_1", "org:o_1"))
    assert not sees(pool, CAROL, "f")


def test_an_observation_is_for_readers_of_every_source_only() -> None:
    pool = pool_with(
        entry("private", "for:person:u_alice", "org:o_1"),
        entry("team", "for:channel:c_team", "org:o_1"),
        entry(
            "obs",
            "for:person:u_alice",
            "for:channel:c_team",
            "org:o_1",
            sources=on("private", "team"),
        ),
    )
    assert sees(pool, ALICE, "obs")
    # Bob saw the team's source, which gives no access to Alice's or to the result.
    assert sees(pool, BOB, "team")
    assert not sees(pool, BOB, "obs")
    # Alice outside the team no longer reads a source, so not the result either.
    assert not sees(pool, Person("u_alice", "o_1"), "obs")
    assert sees(pool, Learner("o_1"), "obs")


def test_a_group_chats_context_uses_only_entries_for_the_group_or_for_everyone() -> None:
    pool = pool_with(
        entry("mine", "for:person:u_alice", "org:o_1"),
        entry("team", "for:channel:c_team", "org:o_1"),
        entry("other", "for:channel:c_other", "org:o_1"),
        entry("all", "for:bot", "org:o_1"),
    )
    group = chat_readers("o_1", "u_alice", "c_team", ALICE.channels)
    assert group == Group("c_team", "o_1")
    assert [e.id for e in judge(pool).visible(group, pool.values())] == ["team", "all"]
    # In Alice's own chat, she is the only reader, and she is in the team.
    own = chat_readers("o_1", "u_alice", None, ALICE.channels)
    assert [e.id for e in judge(pool).visible(own, pool.values())] == ["mine", "team", "all"]


def test_a_missing_source_a_loop_or_an_inactive_source_hides_the_result() -> None:
    base = ("for:bot", "org:o_1")
    pool = pool_with(
        entry("gone", *base, sources=on("mem_deleted")),
        entry("a", *base, sources=on("b")),
        entry("b", *base, sources=on("a")),
        entry("on_loop", *base, sources=on("a")),
        entry("self", *base, sources=on("self")),
        entry("old", *base, status="retracted"),
        entry("stale", *base, invalidated_at=5),
        entry("on_old", *base, sources=on("old")),
        entry("on_stale", *base, sources=on("stale")),
        entry("on_on_old", *base, sources=on("on_old")),
    )
    j = judge(pool)
    assert j.visibility_of("mem_deleted") == Hidden(
        MISSING_SOURCE.format(source="mem_deleted"), "mem_deleted"
    )
    assert j.visibility(pool["gone"]) == Hidden(
        MISSING_SOURCE.format(source="mem_deleted"), "mem_deleted"
    )
    for loop in ("a", "b", "on_loop", "self"):
        found = j.visibility(pool[loop])
        assert isinstance(found, Hidden)
        assert found.reason.startswith(LOOP.split("{")[0])
    assert j.visibility(pool["on_old"]) == Hidden(INACTIVE_SOURCE.format(source="old"), "old")
    for hidden in ("on_stale", "on_on_old"):
        assert not j.sees(Learner("o_1"), pool[hidden])
    # Authorized history stays: a retracted or invalidated entry is still seen by its readers.
    assert j.sees(CAROL, pool["old"])
    assert j.sees(CAROL, pool["stale"])


def test_links_deeper_than_the_bound_hide_the_entry_whatever_is_asked_first() -> None:
    chain = [entry("e0", "for:bot", "org:o_1")]
    chain += [entry(f"e{i}", "for:bot", "org:o_1", sources=on(f"e{i - 1}")) for i in range(1, 41)]
    pool = pool_with(*chain)
    top_first = judge(pool, max_depth=32)
    bottom_first = judge(pool, max_depth=32)
    answers_top = [top_first.sees(CAROL, pool[f"e{i}"]) for i in reversed(range(41))][::-1]
    answers_bottom = [bottom_first.sees(CAROL, pool[f"e{i}"]) for i in range(41)]
    assert answers_top == answers_bottom == [i <= 32 for i in range(41)]


def test_one_judge_resolves_each_entry_once() -> None:
    entries = [entry("e0", "for:bot", "org:o_1")]
    entries += [
        entry(f"e{i}", "for:bot", "org:o_1", sources=on(f"e{i // 2}", f"e{i - 1}"))
        for i in range(1, 1000)
    ]
    pool = pool_with(*entries)
    calls: list[str] = []

    def resolve(entry_id: str) -> EntryMeta | None:
        calls.append(entry_id)
        return pool.get(entry_id)

    seen = Judge(resolve).visible(CAROL, pool.values())
    # Depth 32 bounds the chain: e0..e32 are shown, everything resting on e33 and up is not.
    assert [e.id for e in seen] == [f"e{i}" for i in range(33)]
    assert len(calls) <= 2 * len(pool)


# --- Share ------------------------------------------------------------------------------------

TEAM_ITEM = rule_of(["for:channel:c_team", "org:o_1"])
ALICE_ITEM = rule_of(["for:person:u_alice", "org:o_1"])


def item_rules(rules: Mapping[str, Audience | None]) -> Callable[[ItemSource], Audience | None]:
    return lambda source: rules.get(source.item)


def test_share_widens_only_to_readers_every_source_admits() -> None:
    pool = pool_with(
        entry("t1", "for:channel:c_team", "org:o_1"),
        entry("t2", "for:channel:c_team", "for:bot", "org:o_1"),
        entry("obs", "for:person:u_alice", "org:o_1", sources=on("t1", "t2"), layer="observation"),
    )
    j = judge(pool)
    rules = item_rules({})
    assert share_reason(j, ALICE, pool["obs"], ForChannel("c_team"), rules) is None
    refused = share_reason(j, ALICE, pool["obs"], FOR_BOT, rules)
    assert refused is not None
    assert "t1" in refused
    assert share_reason(j, ALICE, pool["obs"], ForChannel("c_other"), rules) is not None
    # A share only widens: naming a person is not a share.
    with pytest.raises(ValidationFailed) as refused_person:
        share_audience("for:person:u_bob")
    assert refused_person.value.message == SHARE_NOT_WIDER
    # Bob is in the team but the entry is not for him: no share, and no hint why.
    assert share_reason(j, BOB, pool["obs"], ForChannel("c_team"), rules) == NOT_FOR_YOU
    shared = replace(pool["obs"], tags=shared_tags(pool["obs"].tags, ForChannel("c_team")))
    assert shared_tags(shared.tags, ForChannel("c_team")) == shared.tags
    assert judge({**pool, "obs": shared}).sees(BOB, shared)


def test_share_of_a_fact_checks_each_items_saved_rule() -> None:
    fact = entry(
        "f",
        "for:person:u_alice",
        "org:o_1",
        sources=[ItemSource("i-1", "chat_g"), ItemSource("i-2", "chat_g")],
    )
    pool = pool_with(fact)
    j = judge(pool)
    both_team = item_rules({"i-1": TEAM_ITEM, "i-2": TEAM_ITEM})
    assert share_reason(j, ALICE, fact, ForChannel("c_team"), both_team) is None
    one_private = item_rules({"i-1": TEAM_ITEM, "i-2": ALICE_ITEM})
    assert share_reason(j, ALICE, fact, ForChannel("c_team"), one_private) is not None
    unproved = item_rules({"i-1": TEAM_ITEM})
    assert share_reason(j, ALICE, fact, ForChannel("c_team"), unproved) is not None


def test_share_refuses_what_no_source_proves_and_what_is_no_longer_valid() -> None:
    pinned = entry("p", "for:person:u_alice", "org:o_1", layer="pinned")
    old = entry("old", "for:channel:c_team", "for:person:u_alice", "org:o_1", status="retracted")
    pool = pool_with(pinned, old)
    rules = item_rules({})
    assert share_reason(judge(pool), ALICE, pinned, FOR_BOT, rules) == SHARE_NO_SOURCE
    assert share_reason(judge(pool), ALICE, old, ForChannel("c_team"), rules) == SHARE_INVALID


# --- Properties -------------------------------------------------------------------------------

USERS = ("u1", "u2", "u3")
CHANNELS = ("c1", "c2")
ORGS = ("o1", "o2")
ITEM_RULES: Mapping[str, Audience | None] = {
    "i1": rule_of(["for:person:u1", "org:o1"]),
    "i2": rule_of(["for:channel:c1", "org:o1"]),
    "i3": rule_of(["for:bot", "org:o1"]),
    "i4": None,
}
AUDIENCE_TAGS = (
    *(f"for:person:{u}" for u in USERS),
    *(f"for:channel:{c}" for c in CHANNELS),
    "for:bot",
)

# Tidy pools lean to wide audiences, so that a fair share of shares pass.
WIDE_TAGS = ("for:bot", "for:bot", "for:channel:c1", "for:channel:c1", "for:person:u1")
WIDE_ITEMS = ("i2", "i3", "i3", "i1")


@st.composite
def pools(draw: st.DrawFn, max_size: int = 8, tidy: bool = False) -> Pool:
    """Small pools with every kind of trouble; `tidy` ones (one organization, sources only on
    earlier entries, everything valid) are where shares can pass."""
    size = draw(st.integers(1, max_size))
    ids = [f"e{i}" for i in range(size)]
    org_tags = [["org:o1"]] if tidy else [["org:o1"]] * 3 + [["org:o2"], [], ["org:o1", "org:o2"]]
    pool: Pool = {}
    for index, entry_id in enumerate(ids):
        tags = draw(st.lists(st.sampled_from(WIDE_TAGS if tidy else AUDIENCE_TAGS), max_size=3))
        tags += draw(st.sampled_from(org_tags))
        if not tidy and draw(st.integers(0, 19)) == 0:
            tags.append("for:team:t1")
        earlier = ids[:index]
        # Mostly links to earlier entries (a DAG); sometimes anywhere (loops, missing ones).
        loose = not tidy and not (earlier and draw(st.integers(0, 4)))
        targets = [*ids, "gone"] if loose else earlier
        links = draw(st.lists(st.sampled_from(targets), max_size=3)) if targets else []
        sources: list[Source] = [EntrySource(t) for t in links]
        items = draw(
            st.lists(st.sampled_from(WIDE_ITEMS if tidy else sorted(ITEM_RULES)), max_size=2)
        )
        sources += [ItemSource(i) for i in items]
        trouble = not tidy and draw(st.integers(0, 6)) == 0
        pool[entry_id] = entry(
            entry_id,
            *tags,
            sources=sources,
            status="retracted" if trouble and draw(st.booleans()) else "active",
            invalidated_at=7 if trouble and draw(st.booleans()) else None,
        )
    return pool


@st.composite
def readers(draw: st.DrawFn) -> list[Reader]:
    membership = {u: draw(st.frozensets(st.sampled_from(CHANNELS))) for u in USERS}
    people: list[Reader] = [Person(u, o, membership[u]) for u in USERS for o in ORGS]
    groups: list[Reader] = [Group(c, o) for c in CHANNELS for o in ORGS]
    return [*people, *groups, *(Everyone(o) for o in ORGS), *(Learner(o) for o in ORGS)]


def own_admits(tags: Sequence[str], reader: Reader) -> bool:
    """The seed's rule for one entry's own tags, written out plainly."""
    if "for:team:t1" in tags:
        return False
    orgs = {t.removeprefix("org:") for t in tags if t.startswith("org:")}
    people = {t.removeprefix("for:person:") for t in tags if t.startswith("for:person:")}
    channels = {t.removeprefix("for:channel:") for t in tags if t.startswith("for:channel:")}
    everyone = "for:bot" in tags
    if not orgs or orgs != {reader.org_id} or not (people or channels or everyone):
        return False
    if isinstance(reader, Learner) or everyone:
        return True
    if isinstance(reader, Person):
        return reader.user_id in people or any(c in reader.channels for c in channels)
    if isinstance(reader, Group):
        return reader.channel_id in channels
    return False


def spec_sees(pool: Pool, reader: Reader, e: EntryMeta, path: tuple[str, ...] = ()) -> bool:
    """Own tags admit the reader, and every entry source exists, is valid, is not on the path
    (a loop), and is seen by the reader in turn."""
    if not own_admits(e.tags, reader):
        return False
    walked = (*path, e.id)
    for source in e.sources:
        if isinstance(source, ItemSource):
            continue
        found = pool.get(source.entry)
        if source.entry in walked or found is None or not found.active:
            return False
        if found.invalidated_at is not None or not spec_sees(pool, reader, found, walked):
            return False
    return True


def spec_depth(pool: Pool, e: EntryMeta, path: tuple[str, ...] = ()) -> float:
    """The longest chain of entry links below `e` (infinite through a loop)."""
    depth = 0.0
    for source in e.sources:
        if isinstance(source, EntrySource):
            found = pool.get(source.entry)
            if source.entry in (*path, e.id):
                return float("inf")
            if found is not None:
                depth = max(depth, 1 + spec_depth(pool, found, (*path, e.id)))
    return depth


def dependents(pool: Pool, of: str) -> set[str]:
    """Every entry that stands on `of`, directly or through others."""
    found: set[str] = set()
    frontier = {of}
    while frontier:
        nxt = {
            e.id
            for e in pool.values()
            if e.id not in found and any(s == EntrySource(f) for s in e.sources for f in frontier)
        }
        found |= nxt
        frontier = nxt
    return found


def on_or_above_a_loop(pool: Pool) -> set[str]:
    return {i for i in pool if i in dependents(pool, i)} | {
        d for i in pool if i in dependents(pool, i) for d in dependents(pool, i)
    }


def answer(found: Audience | Hidden) -> Audience | None:
    """What a reader notices: the audience, or nothing (the reason names one cause of many)."""
    return found if isinstance(found, Audience) else None


# 100 examples a property in `make test` (the pools are small: a few entries, readers and
# links, drawn from a handful of tags and rules); each property also has a `slow` twin,
# `<name>_at_length`, with 1000 (`pytest --run-slow`).
PROPERTY = settings(max_examples=100, deadline=None)
AT_LENGTH = settings(max_examples=1000, deadline=None)


def prop(*strategies: st.SearchStrategy[Any]) -> Callable[[Callable[..., None]], Any]:
    """`@given(*strategies)` at PROPERTY's budget, and its slow twin at AT_LENGTH's."""

    def wrap(body: Callable[..., None]) -> Any:
        twin = pytest.mark.slow(AT_LENGTH(given(*strategies)(body)))
        globals()[f"{body.__name__}_at_length"] = twin
        return PROPERTY(given(*strategies)(body))

    return wrap


@prop(pools(), readers(), st.integers(0, 4))
def test_the_judge_agrees_with_the_seeds_rules_read_plainly(
    pool: Pool, everyone: list[Reader], max_depth: int
) -> None:
    j = judge(pool, max_depth)
    for e in pool.values():
        for reader in everyone:
            expected = spec_sees(pool, reader, e) and spec_depth(pool, e) <= max_depth
            assert j.sees(reader, e) == expected, (e.id, reader)


@prop(pools(), readers())
def test_an_entry_is_never_seen_by_a_reader_who_cannot_see_one_of_its_sources(
    pool: Pool, everyone: list[Reader]
) -> None:
    j = judge(pool)
    for e in pool.values():
        for reader in everyone:
            if not j.sees(reader, e):
                continue
            for source in e.sources:
                if isinstance(source, EntrySource):
                    assert source.entry in pool
                    assert j.sees(reader, pool[source.entry])


@prop(pools(), readers(), st.data())
def test_adding_a_source_never_widens_any_audience(
    pool: Pool, everyone: list[Reader], data: st.DataObject
) -> None:
    target = data.draw(st.sampled_from(sorted(pool)))
    added = data.draw(st.sampled_from([*sorted(pool), "gone"]))
    grown = {
        **pool,
        target: replace(pool[target], sources=(*pool[target].sources, EntrySource(added))),
    }
    before, after = judge(pool), judge(grown)
    for entry_id in pool:
        for reader in everyone:
            if after.sees(reader, grown[entry_id]):
                assert before.sees(reader, pool[entry_id])


@prop(pools(), readers())
def test_a_loop_hides_every_entry_on_it_and_every_entry_built_on_it(
    pool: Pool, everyone: list[Reader]
) -> None:
    j = judge(pool)
    for entry_id in on_or_above_a_loop(pool):
        assert isinstance(j.visibility(pool[entry_id]), Hidden)
        assert not any(j.sees(reader, pool[entry_id]) for reader in everyone)


@prop(pools(), readers(), st.data())
def test_retracting_a_source_hides_its_dependents_and_keeps_its_own_history(
    pool: Pool, everyone: list[Reader], data: st.DataObject
) -> None:
    target = data.draw(st.sampled_from(sorted(pool)))
    changed = {**pool, target: pool[target].retracted(None, now_ms=9, rev=2)}
    before, after = judge(pool), judge(changed)
    for entry_id in dependents(pool, target) - {target}:
        assert isinstance(after.visibility(changed[entry_id]), Hidden)
    assert answer(after.visibility(changed[target])) == answer(before.visibility(pool[target]))


@prop(pools(), st.randoms(use_true_random=False))
def test_the_order_of_questions_and_the_memo_never_change_an_answer(
    pool: Pool, rng: random.Random
) -> None:
    alone = {entry_id: answer(judge(pool).visibility(e)) for entry_id, e in pool.items()}
    order = list(pool)
    rng.shuffle(order)
    shared = judge(pool)
    assert {i: answer(shared.visibility(pool[i])) for i in order} == alone
    by_id = judge(pool)
    assert {i: answer(by_id.visibility_of(i)) for i in reversed(order)} == alone


@prop(st.one_of(pools(tidy=True), pools(tidy=True), pools()), readers(), st.data())
def test_share_never_grants_a_reader_who_cannot_see_every_source(
    pool: Pool, everyone: list[Reader], data: st.DataObject
) -> None:
    target = pool[data.draw(st.sampled_from(sorted(pool)))]
    audience = data.draw(st.sampled_from([FOR_BOT, *(ForChannel(c) for c in CHANNELS)]))
    j = judge(pool)
    # Mostly someone the entry is for: others are refused before any source is looked at.
    for_them = [r for r in everyone if isinstance(r, Person) and j.sees(r, target)]
    requester = data.draw(st.sampled_from(for_them or everyone))
    if share_reason(j, requester, target, audience, item_rules(ITEM_RULES)) is not None:
        return
    assert j.sees(requester, target)
    # The new readers themselves, whoever is in the Channel today, pass every source's rule.
    seen = j.visibility(target)
    assert isinstance(seen, Audience)
    (org,) = seen.orgs
    new = Group(audience.value, org) if isinstance(audience, ForChannel) else Everyone(org)
    for source in target.sources:
        if isinstance(source, EntrySource):
            assert j.sees(new, pool[source.entry])
        else:
            assert (ITEM_RULES[source.item] or Audience()).admits(new)
    shared = replace(target, tags=shared_tags(target.tags, audience))
    after = judge({**pool, target.id: shared})
    for reader in everyone:
        if not after.sees(reader, shared) or j.sees(reader, target):
            continue
        for source in shared.sources:
            if isinstance(source, EntrySource):
                assert j.sees(reader, pool[source.entry])
            else:
                rule = ITEM_RULES[source.item]
                assert rule is not None
                assert rule.admits(reader)


@prop(
    st.sampled_from([FromPerson, ForPerson, ForChannel, InOrg, FromChat, FromChannel, FromApp]),
    st.from_regex(r"[A-Za-z0-9_.\-]{1,20}", fullmatch=True),
)
def test_every_built_tag_parses_back_to_itself(kind: Callable[[str], object], value: str) -> None:
    tag = kind(value)
    assert parse_tag(str(tag)) == tag


TAG_TEXTS = (
    *AUDIENCE_TAGS,
    "org:o1",
    "org:o2",
    "from:u1",
    "chat:ch_1",
    "channel:c1",
    "app:calendar",
    "testing",
    "Old Topic",
    "for:team:t1",
    "for:",
    "for:botx",
    "org:",
    "chat:a b",
)


@prop(st.lists(st.sampled_from(TAG_TEXTS), max_size=6))
def test_the_fast_reading_of_an_entrys_tags_agrees_with_the_parser(tags: list[str]) -> None:
    parsed = []
    for text in tags:
        try:
            parsed.append(parse_tag(text))
        except InvalidTag:
            if ":" in text:  # a colon tag that does not parse proves nothing
                assert rule_of(tags) is None
                return
    people = {t.value for t in parsed if isinstance(t, ForPerson)}
    channels = {t.value for t in parsed if isinstance(t, ForChannel)}
    orgs = {t.value for t in parsed if isinstance(t, InOrg)}
    for_bot = FOR_BOT in parsed
    rule = rule_of(tags)
    if not orgs or not (people or channels or for_bot):
        assert rule is None
        return
    assert rule is not None
    assert rule.orgs == orgs
    clause = {(frozenset(people), frozenset(channels))}
    assert {(c.people, c.channels) for c in rule.clauses} == (set() if for_bot else clause)
