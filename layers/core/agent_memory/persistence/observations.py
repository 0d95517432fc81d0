"""The observation log of a thread (seed 003, "The observer") in the single table.

- `THREAD#<id>` / `OBS`: the log's head: `active` (messages numbered below it are replaced
  by active observations), `activeTokens`, `next` (the next chunk's number),
  `reflections`, `titled` (the observer gave its first title), `version`.
- `THREAD#<id>` / `OBS#<n:08d>`: one chunk, an entry of the engine's model (pool
  `obs:<thread>`): its text sealed, its place in plaintext metadata. One Query of the
  prefix `OBS` reads the head and the log.
- The thread's `META` carries `obsTokens`, the message tokens the observer has read, so a
  save decides without a read whether the observer runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.observation import Chunk, Kind, Status
from agent_memory.domain.threads import Thread
from agent_memory.persistence import keys
from agent_memory.persistence.keys import CHUNK_PREFIX, OBSERVER_HEAD, thread_pk
from agent_memory.persistence.pools import OneRowLayout, Pool, PoolRows, StoredEntry
from agent_memory.ports import Absent, Action, Delete, KeyRange, Present, Update
from agent_memory.ports.store import count_is, partition_rows

# Condition name: another request or run wrote the log first (read it again).
OBSERVER_LOG = "observer-log"
PAGE = 1000


def observation_pool(thread: Thread) -> Pool:
    return Pool(thread_pk(thread.id), thread.org_id, f"obs:{thread.id}", CHUNKS)


def chunk_id(n: int) -> str:
    return f"{n:08d}"


def _row(thread: Thread, chunk: Chunk) -> tuple[str, str]:
    return thread_pk(thread.id), f"{CHUNK_PREFIX}{chunk_id(chunk.n)}"


# A chunk's one row `OBS#<n>`: the log reads in order with one Query.
CHUNKS = OneRowLayout(CHUNK_PREFIX)


@dataclass(frozen=True)
class Head:
    active: int = 0
    active_tokens: int = 0
    next: int = 1
    reflections: int = 0
    titled: bool = False
    version: int = 0


@dataclass(frozen=True)
class Log:
    """The head and every chunk (oldest first), their texts still sealed."""

    head: Head
    chunks: tuple[Chunk, ...]
    stored: dict[int, StoredEntry]

    def of(self, kind: Kind, status: Status) -> list[Chunk]:
        return [c for c in self.chunks if c.kind == kind and c.status == status]

    @property
    def active(self) -> list[Chunk]:
        return [c for c in self.chunks if c.status == "active"]

    @property
    def shown(self) -> list[Chunk]:
        """The log as GET .../observations shows it: the active reflection and every
        observation made, buffered or active (a reflection in reserve is not shown)."""
        return [c for c in self.chunks if c.kind == "observation" or c.status == "active"]


def _tag(meta: EntryMeta, name: str) -> int:
    prefix = f"{name}:"
    return next((int(t[len(prefix) :]) for t in meta.tags if t.startswith(prefix)), 0)


def _chunk(stored: StoredEntry) -> Chunk:
    meta = stored.meta
    return Chunk(
        n=int(meta.id),
        kind="reflection" if meta.kind == "reflection" else "observation",
        status="active" if meta.layer == "active" else "buffered",
        first=_tag(meta, "first"),
        upto=_tag(meta, "upto"),
        tokens=_tag(meta, "tokens"),
        upto_tokens=_tag(meta, "cum"),
        at=meta.created_at,
    )


def _meta(chunk: Chunk, length: int) -> EntryMeta:
    return EntryMeta(
        id=chunk_id(chunk.n),
        layer=chunk.status,
        kind=chunk.kind,
        tags=(
            f"first:{chunk.first}",
            f"upto:{chunk.upto}",
            f"tokens:{chunk.tokens}",
            f"cum:{chunk.upto_tokens}",
        ),
        created_at=chunk.at,
        updated_at=chunk.at,
        length=length,
        by="observer",
    )


class ObservationRepository(PoolRows):
    def log(self, thread: Thread) -> Log:
        """The head and the chunks: one Query (more only past 1,000 chunks)."""
        head = Head()
        chunks: list[Chunk] = []
        stored: dict[int, StoredEntry] = {}
        pk = thread_pk(thread.id)
        for row in partition_rows(self._store, pk, KeyRange(prefix=OBSERVER_HEAD), page=PAGE):
            if row["sk"] == OBSERVER_HEAD:
                head = Head(
                    active=int(row.get("active", 0)),
                    active_tokens=int(row.get("activeTokens", 0)),
                    next=int(row.get("next", 1)),
                    reflections=int(row.get("reflections", 0)),
                    titled=bool(row.get("titled", False)),
                    version=int(row.get("version", 0)),
                )
                continue
            entry = self.pools.parse(row)
            if entry is not None:
                chunk = _chunk(entry)
                chunks.append(chunk)
                stored[chunk.n] = entry
        return Log(head, tuple(chunks), stored)

    def texts(self, thread: Thread, log: Log, chunks: Sequence[Chunk]) -> dict[int, str]:
        """The chunks' texts (one decrypt each, on the cipher's cached data key)."""
        pool = observation_pool(thread)
        return {c.n: self.pools.open_content(pool, log.stored[c.n]) for c in chunks}

    def head_action(self, thread: Thread, before: Head, after: Head, now_ms: int) -> Update:
        """The head moved from `before` (conditional on its version) to `after`."""
        return Update(
            thread_pk(thread.id),
            OBSERVER_HEAD,
            set={
                "type": "observer",
                "active": after.active,
                "activeTokens": after.active_tokens,
                "next": after.next,
                "reflections": after.reflections,
                "titled": after.titled,
                "version": before.version + 1,
                "updatedAt": now_ms,
            },
            condition=count_is("version", before.version, name=OBSERVER_LOG),
        )

    def add_chunk(self, thread: Thread, chunk: Chunk, text: str) -> list[Action]:
        """A new chunk's sealed row (its number is fresh: the head's version guards it)."""
        return self.pools.put(
            observation_pool(thread), _meta(chunk, len(text)), text, condition=Absent()
        )

    def set_status(self, thread: Thread, chunk: Chunk, status: Status) -> Action:
        """A chunk buffered -> active: metadata only, its sealed text stays."""
        return Update(*_row(thread, chunk), set={"layer": status}, condition=Present())

    def remove(self, thread: Thread, chunk: Chunk) -> Action:
        return Delete(*_row(thread, chunk))

    @staticmethod
    def observed_tokens(thread: Thread, tokens: int) -> Update:
        """The thread's message tokens the observer has read (on the thread's row)."""
        return Update(
            thread_pk(thread.id), keys.HEAD, set={"obsTokens": tokens}, condition=Present()
        )
