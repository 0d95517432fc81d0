"""The events feed (API.md "Events"): what changed, as ids, for callers who may see it.

An event names a change by the ids of what changed (never content, never a title). It is
written in the same transaction as the change, in its organization's feed, under a
time-ordered id. Who may see an event is decided when it is read, by the access rule of the
object it names (`subject`).

The cursor is the caller's position in the feed: the newest id up to which every event is
settled and handled, plus the ids handled after it that are not settled yet. A change's
transaction may commit a little after the time in its id, so the newest `SETTLE_MS` of the
feed is read again by the next page and only its unseen events are answered: an event that
commits up to `SETTLE_MS` late is still answered once, and none is answered twice.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from agent_memory.domain.bounds import MAX_EVENT_CURSOR, EventType
from agent_memory.domain.errors import NotFound

EVENT_TYPES: frozenset[str] = frozenset(get_args(EventType))
# How late a change's transaction may commit after the time in its event id and still be
# answered once (an SDK retry, a slow seal).
SETTLE_MS = 5_000
# Unsettled events a cursor remembers at most; past it, later events wait until settled.
MAX_SEEN = 100

_NONCE = re.compile(r"^[0-9a-f]{10}$")
# A row's own event, or the n-th event after it in that row (`<row id>.<n>`, n = 1..9: one
# digit, so ids still sort in feed order as strings; persistence/events.py).
_ID = re.compile(r"^evt_[0-9]{13}[0-9a-f]{10}(\.[1-9])?$")
BAD_CURSOR = "`after` is not a cursor of your events feed"


@dataclass(frozen=True)
class Event:
    """One change: its time-ordered id, type, time (ms) and the ids of what changed."""

    id: str
    type: str
    at: int
    object: Mapping[str, str]
    # A change made through a service key: {"serviceKeyId", "person"}.
    by: Mapping[str, str] | None = None


@dataclass(frozen=True)
class EventPage:
    """The events one reader may see after their cursor, oldest first, and the cursor that
    follows them (`next`)."""

    events: Sequence[Event]
    next: str
    reader: str


def new_event(type_: str, at: int, object_ids: Mapping[str, str], nonce: str) -> Event:
    """An event of `type_` at `at` ms naming `object_ids`; `nonce` (10 hex digits) orders
    events of one millisecond. Ids only: every value must be a non-empty id string."""
    if type_ not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type_!r}")
    if not _NONCE.match(nonce):
        raise ValueError("an event nonce is 10 hex digits")
    if not object_ids or any(not isinstance(v, str) or not v for v in object_ids.values()):
        raise ValueError("an event names its object by ids")
    when = max(0, min(at, 10**13 - 1))
    return Event(f"evt_{when:013d}{nonce}", type_, at, dict(object_ids))


# --- What an event's object is, and whose access rule decides ----------------------------

# Whose access rule decides who sees an event:
# - resource: a thread or its working memory: its resource (user) alone;
# - thread: a thread's background work (its executions): the thread's resource, read from it;
# - session: a session's memory and executions: who may read the session;
# - agent: an agent's memory and executions: readers of the agent;
# - bot: a bot's memory: readers of the bot in the feed's organization;
# - bot-execution: as the bot's learning listing, a writer of the bot or the chat's owner;
# - organization: seed 004's agent memories: every person of the organization.
Rule = Literal["resource", "thread", "session", "agent", "bot", "bot-execution", "organization"]
# Learning pool kinds of a thread's background work (`thread-title`, ...): pool id = thread.
THREAD_KIND_PREFIX = "thread-"


@dataclass(frozen=True)
class Subject:
    """The access rule that decides who sees an event, and the id it is decided on."""

    rule: Rule
    id: str
    # The chat of a bot's execution (its owner sees it).
    chat: str | None = None


def subject(event: Event) -> Subject | None:
    """Whose access rule decides `event`; None when no rule is known (nobody sees it)."""
    ids = event.object
    if "resourceId" in ids and "threadId" in ids:
        return Subject("resource", ids["resourceId"])
    if "threadId" in ids:
        return Subject("thread", ids["threadId"])
    if "botId" in ids:
        if event.type == "execution.ended":
            return Subject("bot-execution", ids["botId"], ids.get("chatId"))
        return Subject("bot", ids["botId"])
    if "agentId" in ids:
        return Subject("agent", ids["agentId"])
    if "sessionId" in ids:
        return Subject("session", ids["sessionId"])
    if "memoryId" in ids:
        return Subject("organization", ids["memoryId"])
    return None


def thread_object(thread_id: str, agent_id: str, resource_id: str) -> dict[str, str]:
    """A thread's (or its working memory's) ids: the resource decides who sees it."""
    return {"threadId": thread_id, "agentId": agent_id, "resourceId": resource_id}


def pool_object(kind: str, pool_id: str, source: str | None = None) -> dict[str, str] | None:
    """The ids of a learning pool's memory by kind (`session`, `agent`, `bot`), None for
    kinds that are not memory (a thread's title). A bot's learning pool id is
    `<botId>@<orgId>` (service/bot_learning.py): its object is the bot."""
    if kind == "session":
        return {"sessionId": pool_id}
    if kind == "agent":
        return {"agentId": pool_id}
    if kind == "bot":
        ids = {"botId": pool_id.split("@", 1)[0]}
        if source is not None:
            ids["chatId"] = source
        return ids
    return None


def execution_object(
    kind: str, pool_id: str, execution_id: str, source: str | None
) -> dict[str, str] | None:
    """The ids of a learning execution: the run and its pool (the session an agent's run
    read; the chat a bot's run read; the thread of a thread's background work)."""
    if kind.startswith(THREAD_KIND_PREFIX):
        return {"executionId": execution_id, "threadId": pool_id}
    ids = pool_object(kind, pool_id, source if kind == "bot" else None)
    if ids is None:
        return None
    if kind == "agent" and source is not None:
        ids["sessionId"] = source
    return {"executionId": execution_id, **ids}


# --- The cursor -------------------------------------------------------------------------


@dataclass(frozen=True)
class Cursor:
    """A caller's place in its organization's feed (see the module's docstring)."""

    binding: str
    position: str | None = None
    seen: frozenset[str] = field(default_factory=frozenset)


def binding(org_id: str, user_id: str) -> str:
    """Ties a cursor to one caller: another's cursor is refused, not read."""
    return hashlib.blake2b(f"{org_id}\x00{user_id}".encode(), digest_size=8).hexdigest()


def start(org_id: str, user_id: str) -> Cursor:
    """The oldest kept event of the feed."""
    return Cursor(binding(org_id, user_id))


def encode(cursor: Cursor) -> str:
    body = {"b": cursor.binding, "p": cursor.position, "s": sorted(cursor.seen)}
    text = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(text).decode().rstrip("=")


def decode(text: str | None, org_id: str, user_id: str) -> Cursor:
    """The cursor `text` of this caller (None: the feed's start); one this feed did not issue
    to the caller (another caller's, or text in the cursor's alphabet that is no cursor) names
    no position of theirs: a 404 at `after`, as for any unknown object."""
    if text is None:
        return start(org_id, user_id)
    try:
        if len(text) > MAX_EVENT_CURSOR:
            raise ValueError("too long")
        body = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        position, seen, bound = body["p"], body["s"], body["b"]
        if set(body) != {"b", "p", "s"} or not isinstance(seen, list):
            raise ValueError("shape")
        if position is not None and not (isinstance(position, str) and _ID.match(position)):
            raise ValueError("position")
        if len(seen) > MAX_SEEN or not all(isinstance(s, str) and _ID.match(s) for s in seen):
            raise ValueError("seen")
        if position is not None and any(s <= position for s in seen):
            raise ValueError("seen before the position")
    except (ValueError, TypeError, KeyError, json.JSONDecodeError) as error:
        raise NotFound(BAD_CURSOR, ["after"]) from error
    if bound != binding(org_id, user_id):
        raise NotFound(BAD_CURSOR, ["after"])
    return Cursor(bound, position, frozenset(seen))


def read_size(cursor: Cursor, limit: int) -> int:
    """How many events after the position one page reads: its unseen ones and the seen."""
    return len(cursor.seen) + limit


def advance(
    cursor: Cursor, events: Sequence[Event], now_ms: int, limit: int
) -> tuple[list[Event], Cursor]:
    """The events of this page (before the visibility filter: every one counts as
    handled) and the cursor after it. `events` are the feed after `cursor.position`, in id
    order. The position moves over the leading run of handled, settled events."""
    settled_by = now_ms - SETTLE_MS
    handled = set(cursor.seen)
    fresh: list[Event] = []
    pending = sum(1 for e in events if e.id in handled and e.at > settled_by)
    for event in events:
        if event.id in handled:
            continue
        if len(fresh) == limit:
            break
        if event.at > settled_by:
            if pending >= MAX_SEEN:
                break  # the cursor is full: later events wait until they settle
            pending += 1
        fresh.append(event)
        handled.add(event.id)
    position = cursor.position
    for event in events:
        if event.id not in handled or event.at > settled_by:
            break
        position = event.id
    seen = frozenset(i for i in handled if position is None or i > position)
    return fresh, Cursor(cursor.binding, position, seen)
