"""The feed's pure rules (domain/events.py): event ids, the cursor, late commits."""

from __future__ import annotations

import pytest

from agent_memory.domain import events as feed
from agent_memory.domain.bounds import MAX_EVENT_PAGE
from agent_memory.domain.errors import NotFound
from agent_memory.domain.events import Event, new_event

NOW = 1_800_000_000_000


def event(at: int, n: int) -> Event:
    return new_event("thread.created", at, {"threadId": f"th_{n}"}, f"{n:010x}")


def test_event_ids_order_by_time_then_nonce() -> None:
    ids = [event(NOW, 2).id, event(NOW - 1, 9).id, event(NOW, 1).id]
    assert sorted(ids) == [event(NOW - 1, 9).id, event(NOW, 1).id, event(NOW, 2).id]


@pytest.mark.parametrize(
    ("type_", "ids", "nonce"),
    [
        ("thread.archived", {"threadId": "t"}, "0" * 10),
        ("thread.created", {}, "0" * 10),
        ("thread.created", {"threadId": ""}, "0" * 10),
        ("thread.created", {"threadId": "t"}, "xyz"),
    ],
)
def test_an_event_names_a_known_type_by_ids(type_: str, ids: dict[str, str], nonce: str) -> None:
    with pytest.raises(ValueError, match="event"):
        new_event(type_, NOW, ids, nonce)


def test_a_cursor_round_trips_for_its_caller_only() -> None:
    cursor = feed.Cursor(feed.binding("o", "u"), event(NOW, 1).id, frozenset({event(NOW, 2).id}))
    text = feed.encode(cursor)
    assert feed.decode(text, "o", "u") == cursor
    for org, user in (("o", "v"), ("p", "u")):
        with pytest.raises(NotFound) as refused:
            feed.decode(text, org, user)
        assert refused.value.path == ["after"]


def test_a_cursor_whose_seen_ids_precede_its_position_is_no_cursor() -> None:
    bad = feed.Cursor(feed.binding("o", "u"), event(NOW, 2).id, frozenset({event(NOW, 1).id}))
    with pytest.raises(NotFound):
        feed.decode(feed.encode(bad), "o", "u")


def test_settled_events_move_the_position_and_unsettled_ones_are_remembered() -> None:
    old, recent = event(NOW - feed.SETTLE_MS - 1, 1), event(NOW - 10, 2)
    fresh, cursor = feed.advance(feed.start("o", "u"), [old, recent], NOW, 10)
    assert fresh == [old, recent]
    assert cursor.position == old.id
    assert cursor.seen == {recent.id}


def test_a_late_commit_inside_the_settle_window_is_answered_once() -> None:
    first = event(NOW - 100, 2)
    fresh, cursor = feed.advance(feed.start("o", "u"), [first], NOW, 10)
    assert fresh == [first]
    # A transaction that took its time 50 ms before `first`'s commits after the read.
    late = event(NOW - 150, 1)
    fresh, cursor = feed.advance(cursor, [late, first], NOW + 20, 10)
    assert fresh == [late]
    # Once both settle the position passes them and nothing comes again.
    fresh, cursor = feed.advance(cursor, [late, first], NOW + feed.SETTLE_MS, 10)
    assert fresh == []
    assert cursor.position == first.id
    assert cursor.seen == frozenset()


def test_limit_stops_the_page_and_the_rest_comes_next() -> None:
    events = [event(NOW - feed.SETTLE_MS - 10 + n, n) for n in range(5)]
    fresh, cursor = feed.advance(feed.start("o", "u"), events, NOW, 2)
    assert fresh == events[:2]
    assert cursor.position == events[1].id
    fresh, _cursor = feed.advance(cursor, events[2:], NOW, 2)
    assert fresh == events[2:4]


def test_the_cursor_remembers_at_most_max_seen_unsettled_events() -> None:
    recent = [event(NOW - 1, n) for n in range(feed.MAX_SEEN + 5)]
    cursor = feed.start("o", "u")
    answered: list[Event] = []
    for _page in range(3):
        fresh, cursor = feed.advance(cursor, recent, NOW, MAX_EVENT_PAGE)
        answered += fresh
    assert answered == recent[: feed.MAX_SEEN]
    assert len(cursor.seen) == feed.MAX_SEEN
    assert feed.decode(feed.encode(cursor), "o", "u") == cursor
    # Settled, they are passed over and the rest comes.
    fresh, cursor = feed.advance(cursor, recent, NOW + feed.SETTLE_MS, MAX_EVENT_PAGE)
    assert fresh == recent[feed.MAX_SEEN :]


@pytest.mark.parametrize(
    ("type_", "ids", "rule"),
    [
        ("thread.updated", {"threadId": "t", "agentId": "a", "resourceId": "u"}, "resource"),
        ("memory.changed", {"sessionId": "s"}, "session"),
        ("execution.ended", {"executionId": "x", "agentId": "a", "sessionId": "s"}, "agent"),
        ("memory.changed", {"botId": "b"}, "bot"),
        ("execution.ended", {"executionId": "x", "botId": "b", "chatId": "c"}, "bot-execution"),
        ("memory.changed", {"memoryId": "m"}, "organization"),
        ("execution.ended", {"executionId": "x", "threadId": "t"}, "thread"),
    ],
)
def test_each_object_is_decided_by_its_own_rule(type_: str, ids: dict[str, str], rule: str) -> None:
    found = feed.subject(new_event(type_, NOW, ids, "0" * 10))
    assert found is not None
    assert found.rule == rule


def test_an_object_without_a_rule_is_seen_by_nobody() -> None:
    assert feed.subject(new_event("execution.ended", NOW, {"executionId": "x"}, "0" * 10)) is None
    assert feed.execution_object("toy", "p_1", "x", None) is None
    assert feed.execution_object("thread-title", "th_1", "x", None) == {
        "executionId": "x",
        "threadId": "th_1",
    }
    assert feed.execution_object("bot", "bot_1@org_1", "x", "chat_1") == {
        "executionId": "x",
        "botId": "bot_1",
        "chatId": "chat_1",
    }
