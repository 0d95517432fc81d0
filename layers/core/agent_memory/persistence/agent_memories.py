"""Agent memories in the table (docs/decisions.md, "Agent memories (seed 004)", "Keys").

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

Ids are time-sortable, so `sk = id` read descending is newest first and `starting_after`
is a plain key position. `<importance>` is the IEEE-754 bits of the (non-negative) float
in hex, which sorts like the number. Index rows carry the `ttl` of an expiring memory, so
DynamoDB garbage-collects them after expiry; the base row never expires (read by id).
"""

from __future__ import annotations

import json
import struct
from typing import Any, cast

from agent_memory.domain.agent_memories import (
    ID_PREFIX,
    AgentMemory,
    Category,
    Entity,
    EntityType,
    MemoryPage,
    encode_metadata,
    expired,
)
from agent_memory.ports import Absent, Action, Cipher, Delete, Equals, KeyRange, Put, Record, Store

POOL = "agent_memories"
# Rows read per Query while stepping over expired ones: bounds what one request returns.
_MAX_READ = 100


def _part(value: str) -> str:
    """A key component from client or admin text: `#` cannot split it into two parts."""
    return value.replace("%", "%25").replace("#", "%23")


def _base(org_id: str) -> str:
    return f"AMEM#{_part(org_id)}"


def _entity(org_id: str, entity_id: str) -> str:
    return f"{_base(org_id)}#E#{_part(entity_id)}"


def list_partition(org_id: str, category: str | None, entity_id: str | None) -> str:
    """Where a list (optionally filtered) reads, newest first by `sk = id`."""
    prefix = _entity(org_id, entity_id) if entity_id is not None else _base(org_id)
    return f"{prefix}#C#{category}" if category is not None else prefix


def recall_partition(org_id: str, entity_id: str | None) -> str:
    prefix = _entity(org_id, entity_id) if entity_id is not None else _base(org_id)
    return f"{prefix}#R"


def _importance_key(importance: float) -> str:
    return struct.pack(">d", importance + 0.0).hex()


def row_keys(memory: AgentMemory) -> list[tuple[str, str]]:
    """(pk, sk) of every row of `memory`; the base row first."""
    org, mid, category = memory.org_id, memory.id, memory.category
    ranked = f"{_importance_key(memory.importance)}#{mid}"
    keys = [
        (_base(org), mid),
        (list_partition(org, category, None), mid),
        (recall_partition(org, None), ranked),
    ]
    if memory.entity is not None:
        entity_id = memory.entity.id
        keys += [
            (list_partition(org, None, entity_id), mid),
            (list_partition(org, category, entity_id), mid),
            (recall_partition(org, entity_id), ranked),
        ]
    return keys


class AgentMemoryRepository:
    """Rows of agent memories; content, metadata and the entity's name/handle are sealed."""

    def __init__(self, store: Store, cipher: Cipher) -> None:
        self._store = store
        self._cipher = cipher

    # -- writes ----------------------------------------------------------------------------

    def create(self, memory: AgentMemory) -> None:
        rows = self.rows(memory)
        self._store.write(
            [Put(rows[0], Absent()), *(Put(row) for row in rows[1:])],
        )

    def replace(self, old: AgentMemory, new: AgentMemory) -> None:
        """Write `new` if the stored memory is still `old` (raises WriteConflict otherwise);
        index rows that `new` no longer has are deleted in the same transaction."""
        rows = self.rows(new)
        kept = set(row_keys(new))
        actions: list[Action] = [Put(rows[0], Equals("rev", old.rev))]
        actions += [Put(row) for row in rows[1:]]
        actions += [Delete(pk, sk) for pk, sk in row_keys(old)[1:] if (pk, sk) not in kept]
        self._store.write(actions)

    def delete(self, memory: AgentMemory) -> None:
        """Delete `memory` and its index rows if it is unchanged (WriteConflict otherwise)."""
        (pk, sk), *index = row_keys(memory)
        self._store.write(
            [Delete(pk, sk, Equals("rev", memory.rev)), *(Delete(p, s) for p, s in index)]
        )

    def rows(self, memory: AgentMemory) -> list[Record]:
        """Every row of `memory`, sealed (the base row first). Public for bulk loading."""
        body = self._sealed(memory)
        rows: list[Record] = []
        for position, (pk, sk) in enumerate(row_keys(memory)):
            row: Record = {"pk": pk, "sk": sk, **body}
            if position == 0:
                row["kind"] = "agent_memory"
            else:
                row["kind"] = "agent_memory_index"
                if memory.expires_at_ms is not None:
                    # Let DynamoDB drop the index copies once expired; never the base row.
                    row["ttl"] = memory.expires_at_ms // 1000 + 1
            rows.append(row)
        return rows

    # -- reads -----------------------------------------------------------------------------

    def get(self, org_id: str, memory_id: str) -> AgentMemory | None:
        row = self._store.get(_base(org_id), memory_id)
        return self._memory(row) if row is not None else None

    def newest(
        self,
        org_id: str,
        *,
        limit: int,
        starting_after: str | None,
        category: str | None,
        entity_id: str | None,
        now_ms: int,
    ) -> MemoryPage:
        """Unexpired memories, newest first, after the position `starting_after`."""
        pk = list_partition(org_id, category, entity_id)
        return self._read(pk, limit, starting_after, now_ms, KeyRange(prefix=ID_PREFIX))

    def recall(self, org_id: str, *, limit: int, entity_id: str | None, now_ms: int) -> MemoryPage:
        """Unexpired memories, highest importance first, ties newest first."""
        return self._read(recall_partition(org_id, entity_id), limit, None, now_ms, None)

    def _read(
        self, pk: str, limit: int, after: str | None, now_ms: int, key_range: KeyRange | None
    ) -> MemoryPage:
        kept: list[Record] = []
        skipped = 0
        rounds = 0
        while True:
            # One row past the page tells has_more. Read just what is missing; only when
            # expired rows keep coming does each further request double in size.
            size = min(_MAX_READ, (limit + 1 - len(kept)) << max(0, rounds - 1))
            rounds += 1
            page = self._store.query(pk, key_range, limit=size, after=after, newest_first=True)
            for row in page.records:
                if expired(row.get("expiresAt"), now_ms):
                    skipped += 1
                else:
                    kept.append(row)
            if len(kept) > limit or page.next is None:
                break
            after = page.next
        # Decrypt only what the page returns.
        memories = [self._memory(row) for row in kept[:limit]]
        return MemoryPage(memories, has_more=len(kept) > limit, skipped_expired=skipped)

    # -- sealing ---------------------------------------------------------------------------

    def _scope(self, org_id: str, field: str) -> dict[str, str]:
        return {"org": org_id, "pool": POOL, "field": field}

    def _seal(self, memory: AgentMemory, field: str, text: str) -> bytes:
        return self._cipher.seal(text, scope=self._scope(memory.org_id, field), row=memory.id)

    def _open(self, row: Record, attribute: str, field: str) -> str:
        scope = self._scope(str(row["org"]), field)
        return self._cipher.open(row[attribute], scope=scope, row=str(row["id"]))

    def _sealed(self, memory: AgentMemory) -> Record:
        entity = memory.entity
        body: Record = {
            "id": memory.id,
            "org": memory.org_id,
            "category": memory.category,
            "importance": memory.importance,
            "createdAt": memory.created_at_ms,
            "updatedAt": memory.updated_at_ms,
            "expiresAt": memory.expires_at_ms,
            "rev": memory.rev,
            "content": self._seal(memory, "content", memory.content),
        }
        if memory.metadata is not None:
            body["metadata"] = self._seal(memory, "metadata", encode_metadata(memory.metadata))
        if entity is not None:
            body["entityId"] = entity.id
            body["entityType"] = entity.type
            if entity.name is not None or entity.handle is not None:
                text = json.dumps({"name": entity.name, "handle": entity.handle})
                body["entityText"] = self._seal(memory, "entity", text)
        return body

    def _memory(self, row: Record) -> AgentMemory:
        entity = None
        if row.get("entityId") is not None:
            text: dict[str, Any] = {}
            if row.get("entityText") is not None:
                text = json.loads(self._open(row, "entityText", "entity"))
            entity = Entity(
                id=str(row["entityId"]),
                type=cast(EntityType, row["entityType"]),
                name=text.get("name"),
                handle=text.get("handle"),
            )
        metadata = (
            json.loads(self._open(row, "metadata", "metadata")) if "metadata" in row else None
        )
        expires = row.get("expiresAt")
        return AgentMemory(
            id=str(row["id"]),
            org_id=str(row["org"]),
            category=cast(Category, row["category"]),
            content=self._open(row, "content", "content"),
            metadata=metadata,
            entity=entity,
            importance=float(row["importance"]),
            expires_at_ms=int(expires) if expires is not None else None,
            created_at_ms=int(row["createdAt"]),
            updated_at_ms=int(row["updatedAt"]),
            rev=int(row["rev"]),
        )
