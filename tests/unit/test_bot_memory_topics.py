"""Topic renames in bot memory (API.md, "Rules seed 002 leaves open": a rename covers every
matching entry without rewriting them): `TopicNames` (domain/bot_memory.py), and through
the service on the in-memory store: one head row changes, reads never mix names, a merge, a
name used again after a rename, purge, the log."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_memory.domain import bot_memory as rules
from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.tags import BAD_TOPIC, COLON_TAG
from agent_memory.domain.tasks.learning_changes import FactChange, RenameTopicChange
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import bot_pool
from agent_memory.ports import KeyRange
from tests.support.bot_memory import ORG, MemoryBot, bot_memory_world, principal_of, said

NAMES = rules.TopicNames()


def named(names: rules.TopicNames, *tags: str) -> tuple[str, ...]:
    return names.named(EntryMeta("m", tags=tags)).tags


# --- TopicNames ----------------------------------------------------------------------------


def test_a_rename_names_every_token_anew_and_merges_into_an_existing_topic() -> None:
    carried = ["trip", "travel", "org:o1"]
    renamed = NAMES.renamed("trip", "travel", carried)
    assert not isinstance(renamed, str)
    names, tokens = renamed
    assert tokens == ("trip",)
    # Entries of both topics are now one topic, shown once; service tags stay as they are.
    assert named(names, "org:o1", "trip", "travel") == ("org:o1", "travel")
    assert named(names, "trip") == ("travel",)


def test_a_renamed_name_written_again_is_a_new_topic() -> None:
    renamed = NAMES.renamed("trip", "travel", ["trip"])
    assert not isinstance(renamed, str)
    names = renamed[0]
    token, names = names.token("trip")
    assert token.startswith(rules.ALLOCATED)
    # The old entries are "travel", the new one "trip"; the allocated token is reused.
    assert named(names, token) == ("trip",)
    assert names.token("trip")[0] == token
    # Renaming the new "trip" leaves the first rename's entries alone.
    again = names.renamed("trip", "holiday", ["trip", token])
    assert not isinstance(again, str)
    assert again[1] == (token,)
    assert named(again[0], "trip", token) == ("travel", "holiday")
    # A rename back does not reopen the renamed token for new entries.
    back = again[0].renamed("travel", "trip", ["trip", token])
    assert not isinstance(back, str)
    assert back[0].token("trip")[0] not in {"trip", token}


def test_a_metadata_change_keeps_the_tokens_an_entry_had() -> None:
    renamed = NAMES.renamed("a", "b", ["a", "b"])
    assert not isinstance(renamed, str)
    names = renamed[0]
    # An entry with tokens a and b reads as [b]; written back it keeps both tokens.
    assert names.stored(("from:u", "b"), previous=("from:u", "a", "b"))[0] == ("from:u", "a", "b")
    assert names.stored(("b",))[0] == ("b",)


def test_a_bad_rename_is_refused_with_its_reason() -> None:
    # The reasons name the topic's place, never the topic: a topic is words.
    assert NAMES.renamed("trip", "for:bot", ["trip"]) == f"topic 2: {COLON_TAG}"
    assert NAMES.renamed("trip", "Trip Plans", ["trip"]) == f"topic 2: {BAD_TOPIC}"
    assert NAMES.renamed("trip", "trip", ["trip"]) == rules.SAME_TOPIC
    assert NAMES.renamed("trip", "travel", ["other"]) == rules.NO_SUCH_TOPIC
    full = rules.TopicNames({f"t{n}": "x" for n in range(rules.MAX_TOPIC_NAMES)})
    assert full.renamed("trip", "travel", ["trip"]) == rules.TOO_MANY_TOPIC_NAMES


def test_allocated_tokens_no_entry_carries_are_collected_and_never_reused() -> None:
    names = NAMES.renamed("a", "b", ["a"])
    assert not isinstance(names, str)
    token, table = names[0].token("a")
    collected = table.collected(["a"])
    assert token not in collected.names
    assert "a" in collected.names  # a topic's own renamed token stays renamed
    assert collected.token("a")[0] not in {"a", token}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("write", "rename")), st.sampled_from("abc"), st.sampled_from("abc")
        ),
        max_size=12,
    )
)
def test_every_entry_reads_as_the_names_its_topics_were_given_since(steps: list[Any]) -> None:
    """A model of what readers expect: each entry's topic follows the renames made after it
    was written, and nothing else."""
    names = NAMES
    entries: list[tuple[str, str]] = []  # (token, expected name)
    for op, first, second in steps:
        if op == "write":
            token, names = names.token(first)
            entries.append((token, first))
            continue
        renamed = names.renamed(first, second, [t for t, _ in entries])
        if isinstance(renamed, str):
            assert first == second or all(n != first for _, n in entries)
            continue
        names = renamed[0]
        entries = [(t, second if n == first else n) for t, n in entries]
    for token, expected in entries:
        assert names.name(token) == expected


# --- through the service -------------------------------------------------------------------


def _setup(facts: int, topic: str = "trip") -> tuple[Any, Any, str, str, MemoryBot]:
    """`facts` facts of ana's on `topic`, learned by runs of her chat (30 a run)."""
    memory, store = bot_memory_world()
    learning = MemoryBot(memory)
    bots = memory.bots
    bot_id = bots.create_bot(principal_of("ana"), "Helper", {}).id
    chat = bots.create_chat(principal_of("ana"), bot_id, None, "chat").id
    for start in range(0, facts, 30):
        item = said(memory, principal_of("ana"), chat, "I plan trips.")
        changes = [
            FactChange(op="fact", content=f"Plan {n}.", topics=[topic], sources=[item])
            for n in range(start, min(facts, start + 30))
        ]
        learning.learn(chat, *changes)
    return memory, store, bot_id, chat, learning


def rename(old: str, new: str) -> RenameTopicChange:
    return RenameTopicChange.model_validate({"op": "renameTopic", "from": old, "to": new})


def _entry_rows(store: Any, bot_id: str) -> dict[str, Any]:
    page = store.query(bot_pool(bot_id, ORG).pk, KeyRange(low="MEM#", high="RECENT#~"))
    return {r["sk"]: r for r in page.records if r.get("type") == "entry"}


def test_a_rename_of_more_entries_than_one_transaction_changes_one_row(monkeypatch: Any) -> None:
    memory, store, bot_id, chat, learning = _setup(150)
    run = learning.read(chat)
    before = _entry_rows(store, bot_id)
    written: list[Any] = []
    original = store.write
    monkeypatch.setattr(
        store, "write", lambda actions: written.append(actions) or original(actions)
    )
    learned = learning.apply(run, rename("trip", "travel"))
    assert [a["op"] for a in learned.applied] == ["renameTopic"]
    # One transaction: the head row and the log row; no entry row rewritten.
    [actions] = written
    touched = {(a.sk if hasattr(a, "sk") else a.record["sk"]) for a in actions}
    version = memory.read(principal_of("ana"), bot_id).version
    assert {keys.HEAD, f"LOG#{version:010d}"} <= touched
    assert not [sk for sk in touched if sk.startswith(("MEM#", "RECENT#"))]
    assert _entry_rows(store, bot_id) == before
    ana = principal_of("ana")
    assert len(memory.read(ana, bot_id, ["travel"]).entries) == 150
    assert memory.read(ana, bot_id, ["trip"]).entries == []
    # The log shows the rename with every entry it covered.
    [change, *_] = memory.log(ana, bot_id)
    assert change.version == version
    assert len(change.ids) == 150


def test_a_read_never_mixes_names_of_two_versions(monkeypatch: Any) -> None:
    memory, store, bot_id, chat, learning = _setup(3)
    run = learning.read(chat)
    original = store.query
    raced = {"done": False}

    def rename_meanwhile(pk: str, *args: Any, **kwargs: Any) -> Any:
        page = original(pk, *args, **kwargs)
        if not raced["done"] and pk == bot_pool(bot_id, ORG).pk:
            # The rename commits between the head read and the entries' Query.
            raced["done"] = True
            learning.apply(run, rename("trip", "travel"))
        return page

    monkeypatch.setattr(store, "query", rename_meanwhile)
    entries = memory.read(principal_of("ana"), bot_id).entries
    assert raced["done"]
    assert {tuple(t for t in e.meta.tags if ":" not in t) for e in entries} == {("travel",)}


def test_a_name_used_again_after_a_rename_is_its_own_topic_and_purge_collects() -> None:
    memory, store, bot_id, chat, learning = _setup(2)
    learning.learn(chat, rename("trip", "travel"))
    item = said(memory, principal_of("ana"), chat, "A new trip.")
    again = FactChange(op="fact", content="New trip.", topics=["trip"], sources=[item])
    [new_id] = learning.ids(learning.learn(chat, again))
    ana = principal_of("ana")
    assert [e.meta.id for e in memory.read(ana, bot_id, ["trip"]).entries] == [new_id]
    assert len(memory.read(ana, bot_id, ["travel"]).entries) == 2
    # A rename and a fact in one answer: the fact written first is covered too.
    item = said(memory, principal_of("ana"), chat, "Another trip.")
    both = learning.learn(
        chat,
        FactChange(op="fact", content="Another trip.", topics=["trip"], sources=[item]),
        rename("trip", "journey"),
    )
    assert [a["op"] for a in both.applied] == ["fact", "renameTopic"]
    assert len(memory.read(ana, bot_id, ["journey"]).entries) == 2
    # Purging everything drops the allocated token from the head row.
    assert memory.purge(ana, bot_id, "from:ana") == 4
    head = store.get(bot_pool(bot_id, ORG).pk, keys.HEAD)
    assert not any(str(t).startswith(rules.ALLOCATED) for t in head.get("topicNames") or {})
