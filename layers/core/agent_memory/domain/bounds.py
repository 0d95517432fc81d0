"""Bounds that keep every answer under Lambda's 6 MB response payload by construction
(ADR 0049).

Two ways, one per kind of answer:

- A read that returns a whole pool (seed 000's session and agent memory) is bounded by the
  pool: a keyed pool holds at most `KEYED_POOL.max_entries` entries and
  `KEYED_POOL.max_content` characters of content (retracted entries count: the read shows
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
from typing import TYPE_CHECKING, Any, TypeVar

from agent_memory.domain import pool_limits
from agent_memory.domain.errors import TooLarge

if TYPE_CHECKING:
    # Annotations, and learning's rules that `within_bound` loads when it runs: the routes
    # read these bounds at a cold start without loading the learning rules.
    from agent_memory.domain.consolidation import Decision, Rejection
    from agent_memory.domain.entries import EntryMeta
    from agent_memory.domain.memory_objects import MemoryObject

T = TypeVar("T")

# Lambda's synchronous response payload (the function's JSON answer to API Gateway).
LAMBDA_RESPONSE_BYTES = 6 * 1024 * 1024
# What one answer's body may take as carried: 1 MiB is left for the envelope and headers.
ANSWER_BUDGET = 5 * 1024 * 1024
MAX_SESSION_ITEMS = pool_limits.MAX_SESSION_ITEMS

POOL_FULL = (
    "the memory is at its bound ({entries} entries, {content} characters of content); not kept"
)


@dataclass(frozen=True)
class PoolBound:
    """How much one pool may hold: entries (active and retracted) and content characters."""

    max_entries: int
    max_content: int


# Everything of a seed 004 object but its free text, as carried: field names, an id of 68
# characters, category, importance, three timestamps, the entity's type (measured: 430).
OBJECT_FRAME = 512

KEYED_POOL = PoolBound(
    max_entries=pool_limits.KEYED_POOL_ENTRIES, max_content=pool_limits.KEYED_POOL_CONTENT
)


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

    def grows_past(self, after: PoolSize, bound: PoolBound) -> bool:
        """`after` adds what takes the pool past `bound` (a change that only shrinks is
        never refused, even in a pool already over a bound lowered since)."""
        more_entries = after.entries > self.entries and after.entries > bound.max_entries
        more_content = after.content > self.content and after.content > bound.max_content
        return more_entries or more_content


def check_remember(
    metas: Iterable[EntryMeta],
    previous: EntryMeta | None,
    length: int,
    bound: PoolBound = KEYED_POOL,
) -> None:
    """A person's Remember that would take the pool past its bound: 413 naming the field
    (`["command", "key"]` for one entry too many, `["command", "content"]` for content)."""
    before = PoolSize.of(metas)
    after = before.remembered(previous, length)
    if after.entries > before.entries and after.entries > bound.max_entries:
        raise TooLarge(
            f"this memory holds at most {bound.max_entries} entries (retracted ones too); "
            "Remember under one of its keys replaces that entry",
            ["command", "key"],
        )
    if after.content > bound.max_content and after.content > before.content:
        raise TooLarge(
            f"this memory holds at most {bound.max_content} characters of content; this "
            f"Remember would take it to {after.content}",
            ["command", "content"],
        )


def within_bound(
    decision: Decision, current: Mapping[str, EntryMeta], bound: PoolBound = KEYED_POOL
) -> Decision:
    """Learning's changes as far as the pool's bound allows: a Remember that would pass it
    is rejected with `POOL_FULL` (a change is applied whole or not at all)."""
    from agent_memory.domain.consolidation import Decision, Rejection
    from agent_memory.domain.proposals import ProposedRemember

    size = PoolSize.of(current.values())
    accepted: list[Any] = []
    refused: list[Rejection] = []
    reason = POOL_FULL.format(entries=bound.max_entries, content=bound.max_content)
    for change in decision.accepted:
        if isinstance(change, ProposedRemember):
            grown = size.remembered(current.get(change.key), len(change.content))
            if size.grows_past(grown, bound):
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
