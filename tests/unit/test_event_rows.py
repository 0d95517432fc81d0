"""One event row per transaction (persistence/events.py): a change that tells
several events writes one row holding them all, in order, and the feed still answers each
event once, with an id of its own, and can stop in the middle of a row."""

from __future__ import annotations

from agent_memory.domain import events as feed
from agent_memory.domain.events import new_event
from agent_memory.persistence.events import (
    MAX_MORE,
    EventRepository,
    event_action,
    event_row,
    is_event,
    one_row,
    without,
)
from agent_memory.ports import Action, Put, Update
from tests.support.in_memory import InMemoryStore

ORG = "org_1"
AT = 1_800_000_000_000


def told(n: int, type_: str = "memory.changed") -> Put:
    return event_action(ORG, type_, {"sessionId": f"s-{n}"}, AT + n)


def change(n: int) -> Update:
    return Update(f"SESSION#s-{n}", "HEAD", set={"n": n})


def events_of(actions: list[Action]) -> list[tuple[str, str]]:
    """(type, session) of every event the actions tell, in order."""
    store = InMemoryStore()
    store.write(actions)
    return [(e.type, e.object["sessionId"]) for e in EventRepository(store).after(ORG, None, 100)]


def test_a_transaction_of_several_events_writes_one_row_holding_them_in_order() -> None:
    actions: list[Action] = [
        change(1),
        told(1),
        change(2),
        told(2, "execution.ended"),
        told(3),
    ]
    folded = one_row(actions)
    assert [a for a in folded if not is_event(a)] == [change(1), change(2)]
    assert sum(1 for a in folded if is_event(a)) == 1
    # The row stands where the first event stood.
    assert is_event(folded[1])
    assert events_of(folded) == [
        ("memory.changed", "s-1"),
        ("execution.ended", "s-2"),
        ("memory.changed", "s-3"),
    ]


def test_folding_twice_is_folding_once_and_one_event_is_left_as_it_was() -> None:
    actions: list[Action] = [told(1), change(1), told(2)]
    once = one_row(actions)
    assert one_row(once) == once
    assert one_row([*once, told(3)]) == one_row([*actions, told(3)])
    single: list[Action] = [change(1), told(1)]
    assert one_row(single) == single


def test_without_leaves_out_one_type_of_a_folded_row() -> None:
    folded = one_row([told(1), told(2, "execution.ended"), change(1)])
    kept = without(folded, "memory.changed")
    assert events_of(kept) == [("execution.ended", "s-2")]
    # The row keeps its own id: no row is keyed like an event inside a row.
    [row] = [a for a in kept if isinstance(a, Put)]
    assert row.record["sk"] == next(a for a in folded if isinstance(a, Put)).record["sk"]
    assert without(without(folded, "memory.changed"), "execution.ended") == [change(1)]


def test_over_ten_events_start_a_second_row() -> None:
    many: list[Action] = [told(n) for n in range(MAX_MORE + 3)]
    folded = one_row(many)
    assert len(folded) == 2
    assert events_of(folded) == [("memory.changed", f"s-{n}") for n in range(MAX_MORE + 3)]
    assert one_row(folded) == folded
    # A folded row that does not fit starts the next row whole, under its own id.
    nine: list[Action] = [told(n) for n in range(MAX_MORE)]
    pair = one_row([told(20), told(21)])
    again = one_row([*nine, *pair])
    assert [a.record["sk"] for a in again if isinstance(a, Put)] == [
        a.record["sk"] for a in (nine[0], pair[0]) if isinstance(a, Put)
    ]
    assert len(events_of(again)) == MAX_MORE + 2


def test_a_page_can_stop_inside_a_row_and_resume_at_its_next_event() -> None:
    store = InMemoryStore()
    store.write(one_row([told(1), told(2), told(3)]))
    store.write([told(4)])
    repo = EventRepository(store)
    walked = []
    position = None
    for _page in range(6):
        page = repo.after(ORG, position, 1)
        if not page:
            break
        walked += page
        position = page[-1].id
    assert [e.object["sessionId"] for e in walked] == ["s-1", "s-2", "s-3", "s-4"]
    row = walked[0].id
    assert [e.id for e in walked[:3]] == [row, f"{row}.1", f"{row}.2"]
    # Every id is unique and sorts in feed order; the cursor accepts the ones inside a row.
    assert [e.id for e in walked] == sorted(e.id for e in walked)
    cursor = feed.Cursor(feed.binding(ORG, "u"), walked[1].id, frozenset({walked[2].id}))
    assert feed.decode(feed.encode(cursor), ORG, "u") == cursor
    # Two events asked from inside the row: the rest of the row, then the next row's.
    assert [e.object["sessionId"] for e in repo.after(ORG, walked[1].id, 2)] == ["s-3", "s-4"]


def test_a_row_without_more_events_reads_as_its_one_event() -> None:
    store = InMemoryStore()
    old = new_event("thread.created", AT, {"threadId": "th_1"}, "00000000aa")
    store.write([Put(event_row(ORG, old))])
    assert EventRepository(store).after(ORG, None, 10) == [old]
    assert EventRepository(store).after(ORG, old.id, 10) == []
