"""The one entry model every pool stores; a pool's rules decide which fields it uses.

Everything in `EntryMeta` is plaintext metadata, so access, order and the selection of a
memory text are decided before anything is decrypted; `content` and `details` are sealed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Literal

Status = Literal["active", "retracted"]
ID_PREFIX = "mem_"


@dataclass(frozen=True)
class ItemSource:
    """An item of a conversation (a Session, a Chat, a Thread) that supports an entry.

    `conversation` is None where the pool has one conversation (session memory)."""

    item: str
    conversation: str | None = None


@dataclass(frozen=True)
class EntrySource:
    """Another entry of the same pool that an entry stands on (seed 002's observations)."""

    entry: str


Source = ItemSource | EntrySource


@dataclass(frozen=True)
class EntryMeta:
    """What is known of an entry without decrypting it."""

    id: str
    # A stable name chosen by a person or a model (keyed pools such as seed 000's).
    key: str | None = None
    # Seed 002's layer: fact, observation, pinned; other pools use "fact".
    layer: str = "fact"
    # Seed 000's kind (fact, decision, ...) or seed 004's category.
    kind: str = "fact"
    # Service tags (`from:`, `for:`, `org:`, `chat:` ...) and topics.
    tags: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    status: Status = "active"
    invalidated_at: int | None = None
    confidence: float | None = None
    importance: float | None = None
    expires_at: int | None = None
    created_at: int = 0
    updated_at: int = 0
    # The pool revision (or version) that last wrote the entry: orders ties, tells edits apart.
    rev: int = 0
    # The content's length in characters (a length is not content).
    length: int = 0
    # What wrote it last (seed 000's log: consolidation, person, promotion).
    by: str | None = None

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def name(self) -> str:
        """How a memory text names the entry: its key, else its id."""
        return self.key if self.key is not None else self.id

    def retracted(
        self, sources: tuple[Source, ...] | None, now_ms: int, rev: int, by: str | None = None
    ) -> EntryMeta:
        """This entry after a Forget (its content stays; its sources too unless given)."""
        return replace(
            self,
            status="retracted",
            sources=self.sources if sources is None else sources,
            updated_at=now_ms,
            rev=rev,
            by=by if by is not None else self.by,
        )

    def expired(self, now_ms: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now_ms


@dataclass(frozen=True)
class Entry:
    """An entry with its opened content; `details` is a pool's sealed extra (JSON text)."""

    meta: EntryMeta
    content: str
    details: str | None = None


@dataclass(frozen=True)
class KeyedMemory:
    """A keyed pool's entries (active and retracted) at its version."""

    entries: list[Entry]
    version: int


def keyed_id(pool_id: str, key: str) -> str:
    """The server id of the entry under `key` in a keyed pool: stable, so Remember of a known
    key finds its entry with one read, and the key never appears in a row's sort key."""
    digest = hashlib.blake2b(f"{pool_id}\x00{key}".encode(), digest_size=12).hexdigest()
    return f"{ID_PREFIX}{digest}"


def keyed_entry(
    namespace: str,
    key: str,
    kind: str,
    content: str,
    *,
    now_ms: int,
    rev: int,
    sources: tuple[Source, ...] = (),
    previous: EntryMeta | None = None,
    by: str | None = None,
) -> EntryMeta:
    """The active entry under `key` in the keyed pool `namespace`, written at `now_ms` and
    revision `rev`: an entry it replaces (`previous`, even a retracted one) keeps its
    creation time."""
    return EntryMeta(
        id=keyed_id(namespace, key),
        key=key,
        kind=kind,
        sources=sources,
        created_at=previous.created_at if previous is not None else now_ms,
        updated_at=now_ms,
        rev=rev,
        length=len(content),
        by=by,
    )
