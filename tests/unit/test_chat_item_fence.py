"""A chat's items are numbered without writing the chat row: the next id is
max(the chat row's `itemCount`, the newest item) + 1, and a turn's transaction only checks
the count (persistence/bots.py). What a user would notice if that broke: two writers
given one id, an item left in an erased chat, a deleted id given again, an old chat
numbering from the start again, a full chat taking more."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agent_memory.domain.bots import MAX_CHAT_ITEMS
from agent_memory.domain.errors import NotFound, TooLarge
from agent_memory.domain.identity import Principal
from agent_memory.domain.sessions import NewItem
from agent_memory.persistence import keys
from agent_memory.persistence.bot_rows import chat_pk
from agent_memory.persistence.bots import CHAT_ITEMS, BotRepository
from agent_memory.persistence.erasure import ErasureRepository
from agent_memory.persistence.keys import item_sk
from agent_memory.ports import Action, Check, KeyRange, Page, Put, Update
from agent_memory.service.bots import BotService
from tests.support.in_memory import FakeCipher, FixedClock, InMemoryStore, SequentialIds

ORG = "o1"
ANA = Principal("ana", ORG, "member")
BEN = Principal("ben", ORG, "member")


class RacingStore(InMemoryStore):
    """Runs `meanwhile` once, right before the next turn's transaction (the one checking
    the chat's count): another request commits between the turn's read and its write."""

    def __init__(self) -> None:
        super().__init__()
        self.meanwhile: Callable[[], None] | None = None
        self.turn_writes: list[Sequence[Action]] = []

    def write(self, actions: Sequence[Action]) -> None:
        if any(isinstance(a, Check) and a.condition.name == CHAT_ITEMS for a in actions):
            self.turn_writes.append(actions)
            hook, self.meanwhile = self.meanwhile, None
            if hook is not None:
                hook()
        super().write(actions)


def _bots(store: InMemoryStore, *, channel: bool = False) -> tuple[BotService, str]:
    for user in ("ana", "ben"):
        store.write([Put({"pk": keys.user(ORG, user), "sk": keys.HEAD})])
    bots = BotService(BotRepository(store, FakeCipher()), FixedClock(step_ms=1), SequentialIds())
    bot_id = bots.create_bot(ANA, "Helper", {"ben": "read"}).id
    channel_id = bots.create_channel(ANA, "team", ["ben"]).id if channel else None
    chat_id = bots.create_chat(ANA, bot_id, channel_id, "chat").id
    return bots, chat_id


def _ids(bots: BotService, chat_id: str) -> list[str]:
    return [item.id for item, _content in bots.items(ANA, chat_id)]


def _head(store: InMemoryStore, chat_id: str) -> dict[str, Any]:
    return dict(store.rows[(chat_pk(chat_id), keys.HEAD)])


def _item_rows(store: InMemoryStore, chat_id: str) -> list[str]:
    pk = chat_pk(chat_id)
    return sorted(sk for p, sk in store.rows if p == pk and sk.startswith(keys.ITEM_PREFIX))


def test_turns_number_items_without_writing_the_chat_row() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store)
    head = _head(store, chat_id)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    added = bots.add_items(
        ANA, chat_id, turn_id, [NewItem("assistant", "Nice."), NewItem("notice", "ok")]
    )
    second = bots.begin_turn(ANA, chat_id, "Again.")[1].id
    assert added == ["i-02", "i-03"]
    assert _ids(bots, chat_id) == ["i-01", "i-02", "i-03", "i-04"]
    # The chat row is only checked, never written, by a turn.
    assert _head(store, chat_id) == head
    assert all(
        not (isinstance(a, Update | Put) and getattr(a, "sk", None) == keys.HEAD)
        for actions in store.turn_writes
        for a in actions
    )
    # Each Turn knows its last item (learning released by its end reads this far).
    turns = bots.repo.turns(chat_id, [turn_id, second])
    assert (turns[turn_id].last_item, turns[second].last_item) == (3, 4)


def test_two_writers_racing_in_a_chat_both_land_with_distinct_ids() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store, channel=True)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    answers: dict[str, list[str]] = {}

    def ben_meanwhile() -> None:
        answers["ben"] = [bots.begin_turn(BEN, chat_id, "Me too.")[1].actor]

    # Ana's answer read i-01 as the newest item; Ben's turn takes i-02 before she writes.
    store.meanwhile = ben_meanwhile
    ids = bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "Nice.")])
    assert answers["ben"] == [BEN.user_id]
    # Her item Put found Ben's row at i-02 and retried after it.
    assert ids == ["i-03"]
    items = bots.items(ANA, chat_id)
    assert [(i.id, content) for i, content in items] == [
        ("i-01", "I run."),
        ("i-02", "Me too."),
        ("i-03", "Nice."),
    ]


def test_a_writer_racing_erasure_leaves_no_item_in_the_erased_chat() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    erasure = ErasureRepository(store)

    def erased_meanwhile() -> None:
        erasure.mark_chat(chat_id)
        found = erasure.chat(chat_id)
        assert found is not None
        erasure.delete_chat(found.it, ("bot", "pool"))

    store.meanwhile = erased_meanwhile
    with pytest.raises(NotFound):
        bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "Nice.")])
    # The chat row was gone when the answer wrote: its check failed, nothing landed.
    assert not any(pk == chat_pk(chat_id) for pk, _sk in store.rows)


def test_a_writer_racing_the_erasure_mark_fails_its_check_and_finds_no_chat() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store)
    store.meanwhile = lambda: ErasureRepository(store).mark_chat(chat_id)
    with pytest.raises(NotFound):
        bots.begin_turn(ANA, chat_id, "I run.")
    assert _item_rows(store, chat_id) == []


def test_a_deleted_newest_item_keeps_its_id_after_history_deletion() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "Nice.")])
    bots.delete_history(ANA, chat_id)
    assert _item_rows(store, chat_id) == []
    # The count was raised to the last id deleted: no row says it any more.
    assert _head(store, chat_id)["itemCount"] == 2
    assert bots.begin_turn(ANA, chat_id, "Again.")[1]
    assert _ids(bots, chat_id) == ["i-03"]


class TornReadStore(RacingStore):
    """The Query reading the chat row with its newest item sees the chat row as it was
    before `meanwhile` and the items as they are after it (a DynamoDB Query is not
    isolated from a transaction committing during it)."""

    torn: Callable[[], None] | None = None

    def query(self, pk: str, key_range: KeyRange | None = None, **options: Any) -> Page:
        hook = self.torn
        reads_head = key_range is not None and key_range.high == keys.HEAD
        if hook is None or not reads_head:
            return super().query(pk, key_range, **options)
        self.torn = None
        before = super().query(pk, key_range, **options).records
        hook()
        after = super().query(pk, key_range, **options).records
        head = [r for r in before if r["sk"] == keys.HEAD]
        return Page(head + [r for r in after if r["sk"] != keys.HEAD], None)


def test_a_writer_racing_history_deletion_never_reuses_a_deleted_id() -> None:
    store = TornReadStore()
    bots, chat_id = _bots(store)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "Nice.")])
    # The next turn reads the count (0) before the deletion and the items (none) after
    # it: i-01 looks free. The deletion raised the count first, so its check fails.
    store.torn = lambda: bots.delete_history(ANA, chat_id)
    bots.begin_turn(ANA, chat_id, "Again.")
    assert _ids(bots, chat_id) == ["i-03"]
    assert len(store.turn_writes) == 4  # two turns, one answer, one retried turn


def test_a_deletion_committing_before_the_write_makes_it_read_again() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    store.meanwhile = lambda: bots.delete_history(ANA, chat_id)
    assert bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "Nice.")]) == ["i-02"]
    assert _ids(bots, chat_id) == ["i-02"]
    assert _head(store, chat_id)["itemCount"] == 1


def test_erasing_a_persons_words_in_a_group_chat_keeps_their_ids() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store, channel=True)
    bots.begin_turn(ANA, chat_id, "Hi.")
    bots.begin_turn(BEN, chat_id, "Ben's secret.")
    removed = ErasureRepository(store).delete_contributions(ORG, chat_id, "ben")
    assert removed.chat_items == 1
    assert _head(store, chat_id)["itemCount"] == 2
    bots.begin_turn(ANA, chat_id, "Still here.")
    assert _ids(bots, chat_id) == ["i-01", "i-03"]


@pytest.mark.parametrize(("count", "newest", "next_id"), [(3, 3, "i-04"), (5, 3, "i-06")])
def test_numbering_goes_on_after_the_chat_rows_count_when_it_is_higher(
    count: int, newest: int, next_id: str
) -> None:
    """The chat row's count is a fence (raised when history is deleted): a new item is
    numbered after the higher of it and the newest item."""
    store = RacingStore()
    bots, chat_id = _bots(store)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "a"), NewItem("assistant", "b")])
    store.write([Update(chat_pk(chat_id), keys.HEAD, set={"itemCount": count})])
    for seq in range(newest + 1, 4):
        store.rows.pop((chat_pk(chat_id), item_sk(seq)))
    assert bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "c")]) == [next_id]


def test_a_full_chat_counts_its_newest_item_not_its_row() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store)
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    # The newest item is the last a chat holds; the chat row still counts 0.
    row = dict(store.rows[(chat_pk(chat_id), item_sk(1))])
    store.rows[(chat_pk(chat_id), item_sk(MAX_CHAT_ITEMS))] = row | {
        "sk": item_sk(MAX_CHAT_ITEMS),
        "seq": MAX_CHAT_ITEMS,
    }
    assert _head(store, chat_id)["itemCount"] == 0
    with pytest.raises(TooLarge):
        bots.begin_turn(ANA, chat_id, "One more.")
    with pytest.raises(TooLarge):
        bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "One more.")])


def test_reading_a_chat_pays_no_query_for_its_newest_item() -> None:
    store = RacingStore()
    bots, chat_id = _bots(store)
    bots.begin_turn(ANA, chat_id, "I run.")
    before = store.requests
    bots.readable_chat(ANA, chat_id)
    assert store.requests - before == 1  # the chat row's Get alone
    chat = bots.repo.get_chat(chat_id)
    assert chat is not None
    assert chat.newest_item is None
    with pytest.raises(ValueError, match="newest item"):
        _ = chat.last_seq
