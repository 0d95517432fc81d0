"""The one pool repository: entries of every pool (domain/entries.py) in the single table.

An entry is one base row plus the copies its pool's layout asks for (index rows, each a
full copy, so a page of an index is one Query and nothing else). Every row of an entry has
the same shape:

- plaintext metadata: `id`, `key`, `layer`, `kind`, `tags`, `sources`, `status`,
  `invalidatedAt`, `confidence`, `importance`, `expiresAt`, `createdAt`, `updatedAt`,
  `rev`, `length`, `by` (access checks and text selection need them before decrypting);
- sealed: `content`, and `details` (a pool's own secret extras, JSON text).

Content is sealed with the coarse scope {org, pool, field} and bound to the entry's id, so a
ciphertext copied to another entry fails to open while the copies of one entry open alike.

Layouts (ADRs 0031, 0042):

- `RecencyLayout` (session memory, agent memory: a pool in ONE partition): the base row at
  `MEM#<id>`, and while the entry is active a copy at `RECENT#<newest-first order>#<id>`.
  `sk BETWEEN "MEM#" AND "META"` still reads every entry and the head row in one Query;
  a memory text reads `RECENT#` newest first and stops where the text is full.
- seed 004's layout (persistence/memory_objects.py): base row per organization plus copies
  per category, entity and importance.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent_memory.domain.entries import Entry, EntryMeta, EntrySource, ItemSource, Source
from agent_memory.persistence import keys
from agent_memory.persistence.rows import SealedRows
from agent_memory.ports import (
    Action,
    Cipher,
    Condition,
    Delete,
    KeyRange,
    Present,
    Put,
    Record,
    Store,
    Update,
)

ENTRY_TYPE = "entry"
RECENT = KeyRange(low=keys.RECENT_PREFIX, high=keys.RECENT_END)
# Each page of a newest-first read after the first is as large as all pages before it, so a
# read that stops after `n` entries has read fewer than `2n + 2` rows.
MAX_PAGE = 1000
_TIME_SPAN = 10**13  # milliseconds: until the year 2286
_REV_SPAN = 10**9


class PoolLayout(Protocol):
    """Where the rows of a pool's entry live: the base row first, then its copies."""

    def rows(self, pool: Pool, meta: EntryMeta, order: int = 0) -> list[tuple[str, str]]: ...


@dataclass(frozen=True)
class Pool:
    """One memory pool: its partition, organization, and the id its content is sealed under."""

    pk: str
    org_id: str
    pool_id: str
    layout: PoolLayout

    @property
    def scope(self) -> dict[str, str]:
        return {"org": self.org_id, "pool": self.pool_id, "field": "entry"}

    @property
    def details_scope(self) -> dict[str, str]:
        """What the pool seals besides entry content: entries' details, its change log."""
        return {**self.scope, "field": "details"}


@dataclass(frozen=True)
class StoredEntry:
    """An entry as read: metadata in the clear, content (and details) still sealed."""

    meta: EntryMeta
    sealed: bytes
    sealed_details: bytes | None = None


def recent_sk(meta: EntryMeta, order: int = 0) -> str:
    """Ascending sort keys read newest first: updatedAt descending, then the revision that
    wrote it descending, then `order` (the rank of its name among entries written together)."""
    when = _TIME_SPAN - 1 - max(0, min(meta.updated_at, _TIME_SPAN - 1))
    rev = _REV_SPAN - 1 - max(0, min(meta.rev, _REV_SPAN - 1))
    return f"{keys.RECENT_PREFIX}{when:013d}#{rev:09d}#{order:04d}#{meta.id}"


class RecencyLayout:
    """A pool in one partition: base rows `MEM#<id>`, active entries also under `RECENT#`."""

    def rows(self, pool: Pool, meta: EntryMeta, order: int = 0) -> list[tuple[str, str]]:
        base = (pool.pk, keys.entry_sk(meta.id))
        return [base, (pool.pk, recent_sk(meta, order))] if meta.active else [base]


RECENCY = RecencyLayout()


@dataclass(frozen=True)
class OneRowLayout:
    """A pool whose entries are one row each, `<prefix><id>`, and no copies."""

    prefix: str

    def rows(self, pool: Pool, meta: EntryMeta, order: int = 0) -> list[tuple[str, str]]:
        return [(pool.pk, f"{self.prefix}{meta.id}")]


class PoolRepository(SealedRows):
    """Reads and write actions for the entries of any pool; one row shape for all."""

    # -- rows ------------------------------------------------------------------------------

    @staticmethod
    def parse(row: Record) -> StoredEntry | None:
        """The entry a row holds, or None when the row is not an entry's."""
        if row.get("type") != ENTRY_TYPE:
            return None
        return StoredEntry(
            _meta(row),
            bytes(row["content"]),
            bytes(row["details"]) if row.get("details") is not None else None,
        )

    def _body(self, pool: Pool, meta: EntryMeta, content: str, details: str | None) -> Record:
        body: Record = {
            "type": ENTRY_TYPE,
            **_plain(meta),
            "content": self._cipher.seal(content, scope=pool.scope, row=meta.id),
        }
        if details is not None:
            body["details"] = self._cipher.seal(details, scope=pool.details_scope, row=meta.id)
        return body

    # -- content ---------------------------------------------------------------------------

    def open(self, pool: Pool, stored: StoredEntry) -> Entry:
        """Decrypt one entry (its details too, when it has any)."""
        details = None
        if stored.sealed_details is not None:
            scope, row = pool.details_scope, stored.meta.id
            details = self._cipher.open(stored.sealed_details, scope=scope, row=row)
        return Entry(stored.meta, self.open_content(pool, stored), details)

    def open_content(self, pool: Pool, stored: StoredEntry) -> str:
        return self._cipher.open(stored.sealed, scope=pool.scope, row=stored.meta.id)

    # -- reads -----------------------------------------------------------------------------

    def get(self, pool: Pool, entry_id: str) -> StoredEntry | None:
        """The entry's base row (one GetItem)."""
        row = self._store.get(*self.base_key(pool, entry_id))
        return self.parse(row) if row is not None else None

    def base_key(self, pool: Pool, entry_id: str) -> tuple[str, str]:
        return pool.layout.rows(pool, EntryMeta(entry_id))[0]

    def newest(self, pool: Pool, *, first_page: int) -> Newest:
        """The pool's active entries newest first, read page by page only as far as the
        caller iterates; the pool's head row (sorting before `RECENT#`) comes in the same
        first Query."""
        return Newest(self._store, pool, max(1, min(first_page, MAX_PAGE)))

    # -- write actions ---------------------------------------------------------------------

    def put(
        self,
        pool: Pool,
        meta: EntryMeta,
        content: str,
        *,
        details: str | None = None,
        previous: EntryMeta | None = None,
        condition: Condition | None = None,
        order: int = 0,
    ) -> list[Action]:
        """Write an entry (new, or replacing `previous`): its base row under `condition`, its
        copies, and the deletion of copies that `previous` had and it no longer has."""
        body = self._body(pool, meta, content, details)
        rows = pool.layout.rows(pool, meta, order)
        base = Put({"pk": rows[0][0], "sk": rows[0][1], **body}, condition)
        return [base, *_copies(rows, body, meta), *self._stale(pool, previous, rows)]

    def change(
        self,
        pool: Pool,
        previous: EntryMeta,
        after: EntryMeta,
        *,
        condition: Condition | None = None,
        stored: StoredEntry | None = None,
    ) -> list[Action]:
        """Change an entry's metadata only (a Forget, an invalidation, a tag): its content
        stays. Copies the layout gives `after` are written from `stored` (the entry as read),
        its sealed content as it is: a metadata change never decrypts or re-encrypts."""
        rows = pool.layout.rows(pool, after)
        if len(rows) > 1 and stored is None:
            raise ValueError("a metadata change with copies needs the stored entry")
        pk, sk = rows[0]
        update = Update(pk, sk, set=_plain(after), condition=condition or Present())
        copies: list[Put] = []
        if stored is not None:
            body: Record = {"type": ENTRY_TYPE, **_plain(after), "content": stored.sealed}
            if stored.sealed_details is not None:
                body["details"] = stored.sealed_details
            copies = _copies(rows, body, after)
        return [update, *copies, *self._stale(pool, previous, rows)]

    def remove(
        self, pool: Pool, meta: EntryMeta, *, condition: Condition | None = None
    ) -> list[Action]:
        (pk, sk), *copies = pool.layout.rows(pool, meta)
        return [Delete(pk, sk, condition), *(Delete(p, s) for p, s in copies)]

    @staticmethod
    def _stale(
        pool: Pool, previous: EntryMeta | None, rows: Sequence[tuple[str, str]]
    ) -> list[Action]:
        kept = set(rows)
        copies = pool.layout.rows(pool, previous)[1:] if previous is not None else []
        return [Delete(pk, sk) for pk, sk in copies if (pk, sk) not in kept]

    def copy_rows(self, source: Pool, target: Pool, rows: Sequence[Record]) -> list[Record]:
        """Entry rows (base rows and copies, same sort keys) of `source` re-sealed for
        `target`, in `target`'s partition: a Fork copies a pool. Each entry is opened once."""
        bodies: dict[str, Record] = {}
        copies: list[Record] = []
        for row in rows:
            stored = self.parse(row)
            if stored is None:
                continue
            body = bodies.get(stored.meta.id)
            if body is None:
                entry = self.open(source, stored)
                body = self._body(target, stored.meta, entry.content, entry.details)
                bodies[stored.meta.id] = body
            copy: Record = {"pk": target.pk, "sk": row["sk"], **body}
            if row.get("copy"):
                copy["copy"] = True
            copies.append(copy)
        return copies


class PoolRows(SealedRows):
    """A repository whose rows hold pool entries (`pools` reads and writes them)."""

    def __init__(self, store: Store, cipher: Cipher) -> None:
        super().__init__(store, cipher)
        self.pools = PoolRepository(store, cipher)

    def write(self, actions: Sequence[Action]) -> None:
        """One conditional transaction; raises WriteConflict(index=...) when a condition fails."""
        self._store.write(actions)

    def _split(self, rows: Iterable[Record]) -> tuple[dict[str, Record], list[StoredEntry]]:
        """The pool's entries among `rows` (in order), and the other rows by sort key."""
        others: dict[str, Record] = {}
        entries: list[StoredEntry] = []
        for row in rows:
            if (entry := self.pools.parse(row)) is not None:
                entries.append(entry)
            else:
                others[str(row["sk"])] = row
        return others, entries


class Newest:
    """A newest-first read of a pool: its head row is read with the first page; iterating
    reads further pages (each as large as all before it) only when the caller goes on."""

    def __init__(self, store: Store, pool: Pool, first_page: int) -> None:
        self._store = store
        self._pk = pool.pk
        page = store.query(pool.pk, KeyRange(low=keys.HEAD, high=keys.RECENT_END), limit=first_page)
        rows = page.records
        self.head: Record | None = None
        if rows and rows[0]["sk"] == keys.HEAD:
            self.head, rows = rows[0], rows[1:]
        self._rows = [row for row in rows if str(row["sk"]).startswith(keys.RECENT_PREFIX)]
        self._next = page.next
        self._read = len(page.records)

    def __iter__(self) -> Iterator[StoredEntry]:
        rows, after = self._rows, self._next
        while True:
            for row in rows:
                stored = PoolRepository.parse(row)
                if stored is not None:
                    yield stored
            if after is None:
                return
            size = min(MAX_PAGE, self._read)
            page = self._store.query(self._pk, RECENT, limit=size, after=after)
            self._read += len(page.records)
            rows, after = page.records, page.next


# --- the row dialect ----------------------------------------------------------------------


def _copies(rows: Sequence[tuple[str, str]], body: Record, meta: EntryMeta) -> list[Put]:
    """The Puts of an entry's copies (every row but the base row) holding `body`: copies of
    an expiring entry expire with it; the base row never does."""
    copy: Record = {**body, "copy": True}
    if meta.expires_at is not None:
        copy["ttl"] = meta.expires_at // 1000 + 1
    return [Put({"pk": pk, "sk": sk, **copy}) for pk, sk in rows[1:]]


def _plain(meta: EntryMeta) -> Record:
    # Defaults are left out (a missing attribute reads back as the default): rows stay small.
    return {
        "id": meta.id,
        "key": meta.key,
        "layer": meta.layer if meta.layer != "fact" else None,
        "kind": meta.kind,
        "tags": list(meta.tags) or None,
        "sources": [source_record(s) for s in meta.sources],
        "status": meta.status,
        "invalidatedAt": meta.invalidated_at,
        "confidence": meta.confidence,
        "importance": meta.importance,
        "expiresAt": meta.expires_at,
        "createdAt": meta.created_at,
        "updatedAt": meta.updated_at,
        "rev": meta.rev,
        "length": meta.length,
        "by": meta.by,
    }


def source_record(source: Source) -> str | dict[str, str]:
    """An item of the pool's own conversation is its id; others say where they are."""
    if isinstance(source, EntrySource):
        return {"entry": source.entry}
    if source.conversation is None:
        return source.item
    return {"item": source.item, "conversation": source.conversation}


def source_of(value: Any) -> Source:
    if isinstance(value, dict) and "entry" in value:
        return EntrySource(str(value["entry"]))
    if isinstance(value, dict):
        conversation = value.get("conversation")
        return ItemSource(str(value.get("item", "")), str(conversation) if conversation else None)
    return ItemSource(str(value))


def _number(value: Any) -> float | None:
    return float(value) if value is not None else None


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def _meta(row: Record) -> EntryMeta:
    return EntryMeta(
        id=str(row["id"]),
        key=row.get("key"),
        layer=str(row.get("layer") or "fact"),
        kind=str(row.get("kind") or "fact"),
        tags=tuple(str(t) for t in row.get("tags") or ()),
        sources=tuple(source_of(s) for s in row.get("sources") or ()),
        status="retracted" if row.get("status") == "retracted" else "active",
        invalidated_at=_int(row.get("invalidatedAt")),
        confidence=_number(row.get("confidence")),
        importance=_number(row.get("importance")),
        expires_at=_int(row.get("expiresAt")),
        created_at=int(row.get("createdAt") or 0),
        updated_at=int(row.get("updatedAt") or 0),
        rev=int(row.get("rev") or 0),
        length=int(row.get("length") or 0),
        by=row.get("by"),
    )
