"""Events rows (domain/events.py) in the single table: one feed partition per organization.

- pk `EVENTS#<orgId>`, sk `EVT#<event id>` (time-ordered): a page of the feed is one Query.
- Plaintext: the type, the time and the object's ids (no content, no titles); `ttl` lets
  DynamoDB delete the row after `KEEP_S` (it never deletes before, so an event is kept at
  least that long: API.md asks for 24 hours).

`event_action` is the one seam every change calls: it answers the Put to add to the
change's own transaction, so an event never reports a change that did not land and a change
that landed always has its event.

One row per transaction: `one_row` folds the event Puts of a transaction's actions into one
row, so a change that tells two events (a learning run's `memory.changed` and
`execution.ended`) writes one row, not two (a row costs a transaction 2 write units). The row
is the first event's (`eventType`, `at`, `object`), with the events after it in `more`, in
order; the feed reads them as events of their own, with ids `<row id>.<n>` (n = 1..MAX_MORE),
which sort after the row's own id and before the next row's, so event ids keep their order
and a page can stop in the middle of a row. A row without `more` is one event.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from agent_memory.domain.events import Event, execution_object, new_event, pool_object
from agent_memory.domain.identity import THROUGH_KEY
from agent_memory.persistence.keys import EVENT_PREFIX, EVENTS_PREFIX
from agent_memory.persistence.rows import StoreRows
from agent_memory.ports import Absent, Action, KeyRange, Put, Record

ROW_TYPE = "event"
# 48 hours: API.md's "at least 24 hours", with a day's room for a slow follower.
KEEP_S = 48 * 3600
# Events a row holds after its first: one digit, so `<row id>.<n>` ids sort as numbers.
MAX_MORE = 9


def partition(org_id: str) -> str:
    return f"{EVENTS_PREFIX}{org_id}"


def event_sk(event_id: str) -> str:
    return f"{EVENT_PREFIX}{event_id}"


def event_row(org_id: str, event: Event) -> Record:
    row: Record = {
        "pk": partition(org_id),
        "sk": event_sk(event.id),
        "type": ROW_TYPE,
        "eventType": event.type,
        "at": event.at,
        "object": dict(event.object),
        "ttl": event.at // 1000 + KEEP_S,
    }
    through = THROUGH_KEY.get()
    if through is not None:
        # Every event of a row is of one request's change, so the row says who once.
        row["by"] = {"serviceKeyId": through[0], "person": through[1]}
    return row


def event_action(org_id: str, type_: str, object_ids: Mapping[str, str], at: int) -> Put:
    """The event of a change, for the change's own transaction (one more write item)."""
    event = new_event(type_, at, object_ids, secrets.token_hex(5))
    return Put(event_row(org_id, event), Absent())


def pool_changed(kind: str, org_id: str, pool_id: str, at: int) -> list[Put]:
    """`memory.changed` of a learning pool's memory (none for kinds that are not memory)."""
    ids = pool_object(kind, pool_id)
    return [event_action(org_id, "memory.changed", ids, at)] if ids is not None else []


def execution_ended(
    kind: str, org_id: str, pool_id: str, name: str, source: str | None, at: int
) -> list[Put]:
    """`execution.ended` of a learning run (none for pools without an events rule)."""
    ids = execution_object(kind, pool_id, name, source)
    return [event_action(org_id, "execution.ended", ids, at)] if ids is not None else []


def is_event(action: Action) -> bool:
    """Whether `action` writes an event row."""
    return isinstance(action, Put) and action.record.get("type") == ROW_TYPE


def one_row(actions: Iterable[Action]) -> list[Action]:
    """`actions` with their event rows folded into one, at the place of the first: the
    events in order (a row folded before gives its events again, so folding twice is
    folding once). Over 1 + MAX_MORE events, a row that does not fit starts a row of its
    own (whole: every row stays under the id of an event of its own)."""
    listed = list(actions)
    if sum(1 for action in listed if is_event(action)) < 2:
        return listed  # one event row at most: nothing to fold
    chunks: list[list[Record]] = []
    for action in listed:
        if is_event(action):
            told = _told(action)
            if chunks and len(chunks[-1]) + len(told) <= 1 + MAX_MORE:
                chunks[-1].extend(told)
            else:
                chunks.append(told)
    rows = [_row(chunk) for chunk in chunks]
    out: list[Action] = []
    for action in listed:
        if not is_event(action):
            out.append(action)
        elif rows:
            out.extend(rows)
            rows = []
    return out


def without(actions: Iterable[Action], type_: str) -> list[Action]:
    """`actions` less their events of `type_` (a row left with none is left out): for a
    caller whose transaction tells that change itself."""
    out: list[Action] = []
    for action in actions:
        if not is_event(action):
            out.append(action)
            continue
        kept = [told for told in _told(action) if told["eventType"] != type_]
        if kept:
            # Under the row's own id (nothing read it yet): never a `<row id>.<n>` row.
            assert isinstance(action, Put)
            out.append(_row([{**kept[0], "sk": action.record["sk"]}, *kept[1:]]))
    return out


def _told(action: Action) -> list[Record]:
    """The events an event row's Put holds, each as a one-event row (its own `sk`)."""
    assert isinstance(action, Put)
    record = action.record
    first = {k: v for k, v in record.items() if k != "more"}
    more: Any = record.get("more") or []
    return [first, *(_more_row(first, n, dict(e)) for n, e in enumerate(more, 1))]


def _more_row(first: Record, n: int, more: Mapping[str, Any]) -> Record:
    """The `n`th event in a row's `more` as a row of its own (the first's key and `by`)."""
    told = {"eventType": more["eventType"], "at": more["at"], "object": dict(more["object"])}
    return {**first, "sk": f"{first['sk']}.{n}", **told, "ttl": int(more["at"]) // 1000 + KEEP_S}


def _row(told: list[Record]) -> Put:
    """One row telling `told` (one-event rows, in order) under the first one's id."""
    first, rest = told[0], told[1:]
    record = dict(first)
    if rest:
        record["more"] = [
            {"eventType": e["eventType"], "at": e["at"], "object": dict(e["object"])} for e in rest
        ]
        record["ttl"] = max(int(e["ttl"]) for e in told)
    return Put(record, Absent())


def _event(row: Record) -> Event:
    ids: Any = row.get("object") or {}
    by: Any = row.get("by")
    return Event(
        id=str(row["sk"])[len(EVENT_PREFIX) :],
        type=str(row["eventType"]),
        at=int(row["at"]),
        object={str(k): str(v) for k, v in dict(ids).items()},
        by={str(k): str(v) for k, v in dict(by).items()} if by else None,
    )


class EventRepository(StoreRows):
    def after(self, org_id: str, position: str | None, limit: int) -> list[Event]:
        """Up to `limit` events after `position` (an event id; None: the oldest kept), in
        id order: one Query. It reads from the row holding the position on (the row may
        tell events after it: `<row id>.<n>`), so one row more, and leaves out the events
        up to the position."""
        if position is None:
            page = self._store.query(partition(org_id), KeyRange(prefix=EVENT_PREFIX), limit=limit)
        else:
            low = event_sk(position.partition(".")[0])
            page = self._store.query(
                partition(org_id), KeyRange(low=low, high=event_sk("~")), limit=limit + 1
            )
        # A row's own event, then those in its `more` (ids `<row id>.<n>`).
        rows = [Put(row) for row in page.records if row.get("type") == ROW_TYPE]
        events = [_event(told) for row in rows for told in _told(row)]
        if position is not None:
            events = [e for e in events if e.id > position]
        return events[:limit]
