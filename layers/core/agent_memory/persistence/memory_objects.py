"""Agent memories in the table (ADR 0038).

A memory is one base row plus index rows, all written in ONE transaction, each a full copy
(ciphertext included) so that a page is one Query and nothing else:

| pk                                   | sk                     | answers                  |
|--------------------------------------|------------------------|--------------------------|
| `AMEM#<org>`                         | `<id>`                 | get/patch/delete, list   |
| `AMEM#<org>#C#<category>`            | `<id>`                 | list ?category=          |
| `AMEM#<org>#E#<entity>`              | `<id>`                 | list ?entity=            |
| `AMEM#<org>#E#<entity>#C#<category>` | `<id>`                 | list ?entity=&category=  |
| `AMEM#<org>#R`                       | `<importance>#<id>`    | recall                   |
| `AMEM#<org>#E#<entity>#R`            | `<importance>#<id>`    | recall {entity}          |
| `AMEM#<org>#U#<person>#N`            | `<a>/<b>/#<key>`       | list ?namespace=&key=    |

Ids are time-sortable, so `sk = id` read descending is newest first and `starting_after`
is a plain key position. `<importance>` is the IEEE-754 bits of the (non-negative) float
in hex, which sorts like the number. Copies carry the `ttl` of an expiring memory, so
DynamoDB garbage-collects them after expiry; the base row never expires (read by id).
The category is the entry's `kind`, the entity id and type a service tag
(`entity:<type>:<id>`); content is sealed, and metadata with the entity's name and handle
are the entry's sealed `details`. A namespaced memory (ADR 0082) belongs to the person who
made it (an `owner:<user id>` tag) and has one more copy in that person's partition, keyed by
its namespace's labels and its key (identifiers, like entity ids, not content): written only
if absent, it keeps a key unique within the person's namespace; a prefix of it is a
namespace prefix. That copy never expires, so erasing the person finds every one of theirs;
reads of the organization's partitions step over other people's namespaced memories.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from agent_memory.domain.entries import ID_PREFIX, Entry, EntryMeta
from agent_memory.domain.memory_namespaces import position_part
from agent_memory.domain.memory_objects import (
    MemoryObject,
    MemoryPage,
    entity_of,
    memory_entry,
    memory_of,
    namespace_tag,
    owner_of,
)
from agent_memory.persistence.events import event_action
from agent_memory.persistence.keys import MEMORY_OBJECT_PREFIX
from agent_memory.persistence.pools import Pool, PoolRows
from agent_memory.persistence.rows import write_groups
from agent_memory.ports import Absent, Action, Delete, Equals, KeyRange, Put, Record, Store
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS

POOL = "agent_memories"
# Rows read per Query while stepping over expired ones: bounds what one request returns.
_MAX_READ = 100


def _part(value: str) -> str:
    """A key component from client or admin text: `#` cannot split it into two parts."""
    return value.replace("%", "%25").replace("#", "%23")


def _base(org_id: str) -> str:
    return f"{MEMORY_OBJECT_PREFIX}{_part(org_id)}"


def _entity(org_id: str, entity_id: str) -> str:
    return f"{_base(org_id)}#E#{_part(entity_id)}"


def list_partition(org_id: str, category: str | None, entity_id: str | None) -> str:
    """Where a list (optionally filtered) reads, newest first by `sk = id`."""
    prefix = _entity(org_id, entity_id) if entity_id is not None else _base(org_id)
    return f"{prefix}#C#{category}" if category is not None else prefix


def recall_partition(org_id: str, entity_id: str | None) -> str:
    prefix = _entity(org_id, entity_id) if entity_id is not None else _base(org_id)
    return f"{prefix}#R"


def namespace_partition(org_id: str, owner: str) -> str:
    """Where a person's namespaced memories are, ordered by namespace and key."""
    return f"{_base(org_id)}#U#{_part(owner)}#N"


# The name of the condition that fails when a namespace already holds the key.
KEY_TAKEN = "key"


def _importance_key(importance: float) -> str:
    return struct.pack(">d", importance + 0.0).hex()


class MemoryObjectLayout:
    """Seed 004's rows of an entry: the base row per organization, then copies per
    category, entity (and both) and importance."""

    def rows(self, pool: Pool, meta: EntryMeta, order: int = 0) -> list[tuple[str, str]]:
        org, mid, category = pool.org_id, meta.id, meta.kind
        ranked = f"{_importance_key(meta.importance or 0.0)}#{mid}"
        keys = [
            (_base(org), mid),
            (list_partition(org, category, None), mid),
            (recall_partition(org, None), ranked),
        ]
        entity = entity_of(meta)
        if entity is not None:
            entity_id = entity[1]
            keys += [
                (list_partition(org, None, entity_id), mid),
                (list_partition(org, category, entity_id), mid),
                (recall_partition(org, entity_id), ranked),
            ]
        position = namespace_tag(meta)
        owner = owner_of(meta)
        if position is not None and meta.key is not None and owner is not None:
            keys.append((namespace_partition(org, owner), f"{position}#{position_part(meta.key)}"))
        return keys


LAYOUT = MemoryObjectLayout()


def memories_pool(org_id: str) -> Pool:
    """An organization's agent memories: one pool, sealed under the pool name."""
    return Pool(_base(org_id), org_id, POOL, LAYOUT)


def delete_memories(
    store: Store,
    org_id: str,
    metas: Sequence[EntryMeta],
    forget: Callable[[Sequence[str]], None] | None,
    changed_at: int | None = None,
) -> None:
    """The memories, each whole (its base row finds its copies: they go in one
    transaction), 100 at a time, their vectors first (`forget`, given their ids); with
    `changed_at`, each with its `memory.changed` event."""
    pool = memories_pool(org_id)
    for start in range(0, len(metas), MAX_TRANSACTION_ACTIONS):
        page = metas[start : start + MAX_TRANSACTION_ACTIONS]
        if forget is not None:
            forget([meta.id for meta in page])
        write_groups(
            store,
            (
                [
                    *(Delete(pk, sk) for pk, sk in pool.layout.rows(pool, meta)),
                    *(
                        [event_action(org_id, "memory.changed", {"memoryId": meta.id}, changed_at)]
                        if changed_at is not None
                        else []
                    ),
                ]
                for meta in page
            ),
        )


def _owned_copy(
    actions: Sequence[Action], memory: MemoryObject, condition: Absent | None = None
) -> list[Action]:
    """`actions` with the owner's namespace copy kept past expiry (erasure finds it) and,
    given `condition`, written only under it."""
    if memory.owner is None:
        return list(actions)
    named = namespace_partition(memory.org_id, memory.owner)
    changed: list[Action] = []
    for action in actions:
        if isinstance(action, Put) and action.record["pk"] == named:
            record = {k: v for k, v in action.record.items() if k != "ttl"}
            changed.append(Put(record, condition or action.condition))
        else:
            changed.append(action)
    return changed


def _seen_by(viewer: str | None) -> Callable[[EntryMeta], bool]:
    """Plain memories, and the namespaced ones of `viewer` (a person, or None: no one's)."""

    def visible(meta: EntryMeta) -> bool:
        owner = owner_of(meta)
        return owner is None or owner == viewer

    return visible


def _changed(memory: MemoryObject, at: int | None = None) -> Action:
    """The memory's event, in the transaction that changes it (ADR 0066)."""
    when = memory.updated_at_ms if at is None else at
    return event_action(memory.org_id, "memory.changed", {"memoryId": memory.id}, when)


class MemoryObjectRepository(PoolRows):
    """Rows of agent memories; content, metadata and the entity's name/handle are sealed."""

    # -- writes ----------------------------------------------------------------------------

    def create(self, memory: MemoryObject) -> None:
        meta, content, details = memory_entry(memory)
        pool = memories_pool(memory.org_id)
        actions = self.pools.put(pool, meta, content, details=details, condition=Absent())
        # The namespace copy only if absent: a second memory under one key is a WriteConflict.
        actions = _owned_copy(actions, memory, Absent(name=KEY_TAKEN))
        self._store.write([*actions, _changed(memory)])

    def replace(self, old: MemoryObject, new: MemoryObject) -> None:
        """Write `new` if the stored memory is still `old` (raises WriteConflict otherwise);
        copies that `new` no longer has are deleted in the same transaction."""
        before = memory_entry(old)[0]
        meta, content, details = memory_entry(new)
        actions: list[Action] = self.pools.put(
            memories_pool(new.org_id),
            meta,
            content,
            details=details,
            previous=before,
            condition=Equals("rev", old.rev),
        )
        self._store.write([*_owned_copy(actions, new), _changed(new)])

    def delete(self, memory: MemoryObject, now_ms: int) -> None:
        """Delete `memory` and its copies if it is unchanged (WriteConflict otherwise)."""
        meta = memory_entry(memory)[0]
        self._store.write(
            [
                *self.pools.remove(
                    memories_pool(memory.org_id), meta, condition=Equals("rev", memory.rev)
                ),
                _changed(memory, now_ms),
            ]
        )

    def rows(self, memory: MemoryObject) -> list[Record]:
        """Every row of `memory`, sealed (the base row first). Public for bulk loading."""
        meta, content, details = memory_entry(memory)
        actions = self.pools.put(memories_pool(memory.org_id), meta, content, details=details)
        return [action.record for action in _owned_copy(actions, memory) if isinstance(action, Put)]

    # -- reads -----------------------------------------------------------------------------

    def get(self, org_id: str, memory_id: str) -> MemoryObject | None:
        pool = memories_pool(org_id)
        stored = self.pools.get(pool, memory_id)
        return memory_of(org_id, self.pools.open(pool, stored)) if stored is not None else None

    def newest(
        self,
        org_id: str,
        *,
        limit: int,
        starting_after: str | None,
        category: str | None,
        entity_id: str | None,
        now_ms: int,
        viewer: str | None,
    ) -> MemoryPage:
        """Unexpired memories `viewer` sees, newest first, after the position `starting_after`."""
        pk = list_partition(org_id, category, entity_id)
        return self._read(
            org_id,
            pk,
            limit,
            starting_after,
            now_ms,
            KeyRange(prefix=ID_PREFIX),
            visible=_seen_by(viewer),
        )

    def in_namespace(
        self,
        org_id: str,
        owner: str,
        *,
        position: str,
        limit: int,
        after: str | None,
        now_ms: int,
    ) -> MemoryPage:
        """`owner`'s unexpired memories whose namespace position starts with `position`, in
        order of namespace and key, after the sort key `after`."""
        return self._read(
            org_id,
            namespace_partition(org_id, owner),
            limit,
            after,
            now_ms,
            KeyRange(prefix=position) if position else None,
            newest_first=False,
        )

    def holding(self, org_id: str, owner: str, position: str) -> MemoryObject | None:
        """`owner`'s memory at a namespace-and-key position, expired or not."""
        page = self._store.query(
            namespace_partition(org_id, owner), KeyRange(low=position, high=position), limit=1
        )
        rows = [row for row in page.records if self.pools.parse(row) is not None]
        return self._open(memories_pool(org_id), org_id, rows[0]) if rows else None

    def recall(
        self, org_id: str, *, limit: int, entity_id: str | None, now_ms: int, viewer: str | None
    ) -> MemoryPage:
        """Unexpired memories `viewer` sees, highest importance first, ties newest first."""
        pk = recall_partition(org_id, entity_id)
        return self._read(org_id, pk, limit, None, now_ms, None, visible=_seen_by(viewer))

    def _read(
        self,
        org_id: str,
        pk: str,
        limit: int,
        after: str | None,
        now_ms: int,
        key_range: KeyRange | None,
        *,
        newest_first: bool = True,
        visible: Callable[[EntryMeta], bool] | None = None,
    ) -> MemoryPage:
        """A page of `pk`'s memories (those `visible` keeps, where the partition holds more
        than one person's)."""
        kept: list[Record] = []
        skipped = 0
        rounds = 0
        while True:
            # One row past the page tells has_more. Read just what is missing; only when
            # expired rows keep coming does each further request double in size.
            size = min(_MAX_READ, (limit + 1 - len(kept)) << max(0, rounds - 1))
            rounds += 1
            page = self._store.query(
                pk, key_range, limit=size, after=after, newest_first=newest_first
            )
            for row in page.records:
                stored = self.pools.parse(row)
                if stored is None:
                    continue
                if stored.meta.expired(now_ms):
                    skipped += 1
                elif visible is None or visible(stored.meta):
                    # Another person's namespaced memory is stepped over like an expired
                    # one: the page still ends where the next one starts.
                    kept.append(row)
            if len(kept) > limit or page.next is None:
                break
            after = page.next
        # Decrypt only what the page returns.
        pool = memories_pool(org_id)
        memories = [self._open(pool, org_id, row) for row in kept[:limit]]
        return MemoryPage(memories, has_more=len(kept) > limit, skipped_expired=skipped)

    def _open(self, pool: Pool, org_id: str, row: Record) -> MemoryObject:
        stored = self.pools.parse(row)
        assert stored is not None  # kept rows are entries
        entry: Entry = self.pools.open(pool, stored)
        return memory_of(org_id, entry)
