"""The bounds the API states in its schema, and those that keep every answer under Lambda's
6 MB response payload by construction (ADR 0049).

The routes declare the bounds below on their bodies and queries; the rules that enforce them
(domain/sessions.py, bots.py, threads.py, observation.py, events.py, memory_objects.py, ...)
import them from here, so a route's module reads them without loading those rules (ADR 0071).

An answer stays under Lambda's payload two ways, one per kind of answer:

- A read that returns a whole pool (seed 000's session and agent memory) is bounded by the
  pool: a keyed pool holds at most `KEYED_POOL_ENTRIES` entries and
  `KEYED_POOL_CONTENT` characters of content (retracted entries count: the read shows
  them), and a Session at most `MAX_SESSION_ITEMS` items (its read lists the processed ids).
  The write that would pass a bound is a 413 `TooLarge` naming the field; learning refuses
  the change with `POOL_FULL`. Bounds are checked on plaintext metadata (an entry's
  `length`), never by decrypting.
- A list (executions, the agent memory log, seed 004's lists) stops before the answer would
  pass `ANSWER_BUDGET`, measured as Lambda carries it (`carried_size`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agent_memory.domain.errors import TooLarge

if TYPE_CHECKING:
    # Annotations, and learning's rules that `within_bound` loads when it runs: the routes
    # read these bounds at a cold start without loading the learning rules.
    from agent_memory.domain.consolidation import Decision, Rejection
    from agent_memory.domain.entries import EntryMeta
    from agent_memory.domain.memory_objects import MemoryObject

T = TypeVar("T")

# One entry's content never exceeds what a memory text can show (8000 characters by default).
MAX_ENTRY_CONTENT = 8000
# A Session's history: its memory read lists every processed item id (`i-50000` at most).
MAX_SESSION_ITEMS = 50_000
# Seed 000's session and agent memory (one bound: a promotion copies a session's entries).
KEYED_POOL_ENTRIES = 500
KEYED_POOL_CONTENT = 100_000

# Limits of one Turn or chat message (ADR 0032): a Turn is one transaction with the head row,
# and an item (a Turn's, a chat's, a thread message's opaque `item`) is one row that must stay
# far below DynamoDB's 400 KB.
MAX_TURN_ITEMS = 64
MAX_ITEM_BYTES = 32 * 1024
MAX_APP_LENGTH = 64

# Why a Turn's learning was skipped (API.md `learningReason`), one name per cause.
SkipReason = Literal[
    "appOnly",
    "generateOff",
    "noModel",
    "modelNotConfigured",
    "workflowUnreachable",
    "throttled",
    "unavailable",
]

# A thread's own metadata (a client's JSON object about it), its title, a message's content.
MAX_THREAD_METADATA_BYTES = 8 * 1024
MAX_THREAD_TITLE = 500
MAX_MESSAGE_CONTENT = 100_000
# One save is one transaction with the thread row (DynamoDB: 100 actions at most).
MAX_MESSAGES_PER_SAVE = 50
# Messages one recall returns at most.
RECALL_MAX = 50

# The events feed (API.md "Events"): its event types and a page's bounds.
EventType = Literal[
    "thread.created",
    "thread.updated",
    # A thread erased with its agent or its person (service/erasure.py).
    "thread.deleted",
    "working_memory.updated",
    "memory.changed",
    "execution.ended",
]
# A page answers 1..MAX_EVENT_PAGE events; DEFAULT_EVENT_PAGE without `limit`.
DEFAULT_EVENT_PAGE = 50
MAX_EVENT_PAGE = 100
# The longest cursor a caller may send (domain/events.py's MAX_SEEN ids in base64 JSON, with
# room).
MAX_EVENT_CURSOR = 6_000
# A cursor's alphabet (unpadded base64url): text outside it is malformed (400); text within it
# that this feed did not issue to the caller names no position of theirs (404).
EVENT_CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"

# Agent memories (seed 004, ADR 0037: a memory is a short note an agent reads).
MAX_MEMORY_CONTENT_CHARS = 4000
MAX_ENTITY_ID_CHARS = 255
MAX_ENTITY_TEXT_CHARS = 500
DEFAULT_IMPORTANCE = 0.5
MAX_MEMORY_PAGE = 100
DEFAULT_MEMORY_PAGE = 10
# A namespace (ADR 0082) is a path of labels; with its key it is one sort key of the table,
# which DynamoDB bounds at 1,024 bytes, so the encoded pair is held under that.
MAX_NAMESPACE_DEPTH = 10
MAX_NAMESPACE_LABEL_CHARS = 128
MAX_NAMESPACE_KEY_CHARS = 255
MAX_NAMESPACE_KEY_BYTES = 1000

# A bot's or a channel's name in characters; a channel's members (domain/bots.py checks them).
MAX_BOT_NAME_LENGTH = 200
MAX_CHANNEL_MEMBERS = 500
# Tags one bot memory read filters by (`?tags=a,b`) at most: a count the OpenAPI array can
# state (`maxItems`), where the query's length in characters could not be stated for its items.
MAX_FILTER_TAGS = 10
# The memory bot's settings: its instructions' characters, its learning concurrency.
MAX_MEMORY_BOT_INSTRUCTIONS = 4000
MAX_MEMORY_BOT_CONCURRENCY = 1000

# Page sizes of the change logs (agent memory, bot memory): the default and the largest `limit`.
DEFAULT_LOG_LIMIT = 100
MAX_LOG_LIMIT = 1000

# Lambda's synchronous response payload (the function's JSON answer to API Gateway).
LAMBDA_RESPONSE_BYTES = 6 * 1024 * 1024
# What one answer's body may take as carried: 1 MiB is left for the envelope and headers.
ANSWER_BUDGET = 5 * 1024 * 1024

POOL_FULL = (
    "the memory is at its bound ({entries} entries, {content} characters of content); not kept"
)


# Everything of a seed 004 object but its free text, as carried: field names, an id of 68
# characters, category, importance, three timestamps, the entity's type (measured: 430).
OBJECT_FRAME = 512


@dataclass(frozen=True)
class PoolSize:
    """What a pool holds, from its entries' metadata."""

    entries: int
    content: int

    @classmethod
    def of(cls, metas: Iterable[EntryMeta]) -> PoolSize:
        entries = content = 0
        for meta in metas:
            entries += 1
            content += meta.length
        return cls(entries, content)

    def remembered(self, previous: EntryMeta | None, length: int) -> PoolSize:
        """The size after a Remember of `length` characters replacing `previous` (None: a
        new key). A Forget keeps the entry and its content: it never changes the size."""
        if previous is None:
            return PoolSize(self.entries + 1, self.content + length)
        return PoolSize(self.entries, self.content - previous.length + length)

    def passes_bound(self, after: PoolSize) -> Literal["key", "content"] | None:
        """What `after` adds past the pool's bound: an entry (`key`) or `content`; None when
        nothing (a change that only shrinks is never refused, even in a pool already over a
        bound lowered since)."""
        if after.entries > self.entries and after.entries > KEYED_POOL_ENTRIES:
            return "key"
        if after.content > self.content and after.content > KEYED_POOL_CONTENT:
            return "content"
        return None


def check_remember(metas: Iterable[EntryMeta], previous: EntryMeta | None, length: int) -> None:
    """A person's Remember that would take the pool past its bound: 413 naming the field
    (`["command", "key"]` for one entry too many, `["command", "content"]` for content)."""
    before = PoolSize.of(metas)
    after = before.remembered(previous, length)
    passed = before.passes_bound(after)
    if passed == "key":
        raise TooLarge(
            f"this memory holds at most {KEYED_POOL_ENTRIES} entries (retracted ones too); "
            "Remember under one of its keys replaces that entry",
            ["command", "key"],
        )
    if passed == "content":
        raise TooLarge(
            f"this memory holds at most {KEYED_POOL_CONTENT} characters of content; this "
            f"Remember would take it to {after.content}",
            ["command", "content"],
        )


def within_bound(decision: Decision, current: Mapping[str, EntryMeta]) -> Decision:
    """Learning's changes as far as the pool's bound allows: a Remember that would pass it
    is rejected with `POOL_FULL` (a change is applied whole or not at all)."""
    from agent_memory.domain.consolidation import Decision, Rejection
    from agent_memory.domain.proposals import ProposedRemember

    size = PoolSize.of(current.values())
    accepted: list[Any] = []
    refused: list[Rejection] = []
    reason = POOL_FULL.format(entries=KEYED_POOL_ENTRIES, content=KEYED_POOL_CONTENT)
    for change in decision.accepted:
        if isinstance(change, ProposedRemember):
            grown = size.remembered(current.get(change.key), len(change.content))
            if size.passes_bound(grown) is not None:
                refused.append(Rejection(change, reason))
                continue
            size = grown
        accepted.append(change)
    if not refused:
        return decision
    return Decision(tuple(accepted), decision.rejected + tuple(refused))


def check_history(item_count: int, adding: int, path: Sequence[str | int]) -> None:
    """A write that would take a Session past `MAX_SESSION_ITEMS` items: 413 at `path`."""
    if item_count + adding > MAX_SESSION_ITEMS:
        raise TooLarge(
            f"a session holds at most {MAX_SESSION_ITEMS} items ({item_count} now); "
            "continue in a new session",
            path,
        )


def carried_size(value: Any) -> int:
    """The bytes `value` takes in Lambda's response: the body's JSON (as the API renders it:
    UTF-8, compact) escaped again as a string of the function's JSON answer, ASCII-only
    (the larger of the two ways that answer may be encoded)."""
    body = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(json.dumps(body))


def within_budget(
    views: Sequence[T], size: Callable[[T], int] = carried_size, budget: int = ANSWER_BUDGET
) -> tuple[list[T], bool]:
    """The longest prefix of `views` whose sizes add up to at most `budget`, and whether any
    view was left out (the caller pages on from the last one kept)."""
    kept: list[T] = []
    used = 0
    for view in views:
        used += size(view)
        if used > budget:
            return kept, True
        kept.append(view)
    return kept, False


def memory_object_size(memory: MemoryObject) -> int:
    """At least the bytes a seed 004 object takes in an answer, as carried."""
    entity = memory.entity
    texts = [memory.content, memory.metadata, memory.key, *(memory.namespace or ())]
    if entity is not None:
        texts += [entity.id, entity.name, entity.handle]
    return OBJECT_FRAME + carried_size(texts)


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes of a thread message's opaque item as JSON (its `MAX_ITEM_BYTES` bound)."""
    return len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode())
