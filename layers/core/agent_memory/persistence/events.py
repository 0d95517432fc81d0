"""Events rows (domain/events.py) in the single table: one feed partition per organization.

- pk `EVENTS#<orgId>`, sk `EVT#<event id>` (time-ordered): a page of the feed is one Query.
- Plaintext: the type, the time and the object's ids (no content, no titles); `ttl` lets
  DynamoDB delete the row after `KEEP_S` (it never deletes before, so an event is kept at
  least that long: API.md asks for 24 hours).

`event_action` is the one seam every change calls: it answers the Put to add to the
change's own transaction, so an event never reports a change that did not land and a change
that landed always has its event.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from agent_memory.domain.events import Event, execution_object, new_event, pool_object
from agent_memory.ports import Absent, Action, KeyRange, Put, Record, Store

PARTITION_PREFIX = "EVENTS#"
EVENT_PREFIX = "EVT#"
ROW_TYPE = "event"
# 48 hours: API.md's "at least 24 hours", with a day's room for a slow follower.
KEEP_S = 48 * 3600


def partition(org_id: str) -> str:
    return f"{PARTITION_PREFIX}{org_id}"


def event_sk(event_id: str) -> str:
    return f"{EVENT_PREFIX}{event_id}"


def event_row(org_id: str, event: Event) -> Record:
    return {
        "pk": partition(org_id),
        "sk": event_sk(event.id),
        "type": ROW_TYPE,
        "eventType": event.type,
        "at": event.at,
        "object": dict(event.object),
        "ttl": event.at // 1000 + KEEP_S,
    }


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
    """Whether `action` writes an event row (a caller that replays a transaction's actions
    may leave the event out: it was written with the change)."""
    return isinstance(action, Put) and action.record.get("type") == ROW_TYPE


def _event(row: Record) -> Event:
    ids: Any = row.get("object") or {}
    return Event(
        id=str(row["sk"])[len(EVENT_PREFIX) :],
        type=str(row["eventType"]),
        at=int(row["at"]),
        object={str(k): str(v) for k, v in dict(ids).items()},
    )


class EventRepository:
    """Reads of an organization's feed."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def after(self, org_id: str, position: str | None, limit: int) -> list[Event]:
        """Up to `limit` events after `position` (an event id; None: the oldest kept), in
        id order: one Query."""
        page = self._store.query(
            partition(org_id),
            KeyRange(prefix=EVENT_PREFIX),
            limit=limit,
            after=event_sk(position) if position is not None else None,
        )
        return [_event(row) for row in page.records if row.get("type") == ROW_TYPE]
