"""Sessions in the table: one partition per Session, which is its memory pool.

- `SESSION#<id>/META`: the head row: organization, owner, agent, kind, model, `head`,
  `revision`, `itemCount`, `processed` (the read position), `overrides`, `parentId`.
- `SESSION#<id>/MEM#<entry id>` and, while active, `SESSION#<id>/RECENT#...`: an entry of
  the one entry model, in the pool repository's row shape (persistence/pools.py).
- `SESSION#<id>/ITEM#<seq:08d>`: an item of the history: `text` sealed; role, app, turn,
  the turn's model and (for edit items) the command in plaintext.

`SESSIONS#<agentId>/<sessionId>` lists an agent's sessions (owner, organization), written
with the head row; session ids sort by creation, so a descending Query is newest first.

`sk BETWEEN "MEM#" AND "META"` reads every entry and the head row in one Query. Content is
sealed with the scope {org, pool: session id, field} and bound to its row, so a Fork re-seals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.sessions import Session, SessionItem, item_id
from agent_memory.persistence import keys
from agent_memory.persistence.keys import item_sk
from agent_memory.persistence.pools import (
    RECENCY,
    Newest,
    Pool,
    PoolRows,
    StoredEntry,
)
from agent_memory.persistence.rows import head_rows, newest_kept, write_last
from agent_memory.ports import (
    Absent,
    Action,
    Check,
    Equals,
    KeyRange,
    Put,
    Record,
    Update,
)

# The head row's condition: a conflict on it means the session changed meanwhile.
SESSION_REVISION = "session-revision"


def session_pk(session_id: str) -> str:
    return f"{keys.SESSION_PREFIX}{session_id}"


def agent_sessions_pk(agent_id: str) -> str:
    return f"{keys.AGENT_SESSIONS_PREFIX}{agent_id}"


def session_pool(session: Session) -> Pool:
    """The session's memory pool: its own partition, sealed under its id."""
    return Pool(session_pk(session.id), session.org_id, session.id, RECENCY)


@dataclass(frozen=True)
class StoredItem:
    seq: int
    role: str
    app: str | None
    model: str | None
    sealed: bytes


@dataclass(frozen=True)
class ItemToAdd:
    seq: int
    role: str
    content: str
    app: str | None = None
    model: str | None = None
    turn_id: str | None = None
    # Set on the Item that records a person's Remember or Forget.
    edit: Literal["Remember", "Forget"] | None = None


class SessionRepository(PoolRows):
    def get(self, session_id: str) -> Session | None:
        return _head(self._store.get(session_pk(session_id), keys.HEAD))

    def _head_and_entries(self, rows: Sequence[Record]) -> tuple[Session | None, list[StoredEntry]]:
        others, entries = self._split(rows)
        return _head(others.get(keys.HEAD)), entries

    def memory(self, session_id: str) -> tuple[Session, list[StoredEntry]] | None:
        page = self._store.query(session_pk(session_id), keys.POOL_RANGE)
        session, entries = self._head_and_entries(page.records)
        return (session, entries) if session is not None else None

    def newest(self, session_id: str, first_page: int) -> tuple[Session | None, Newest]:
        """The head row and the active entries newest first, read lazily (first page and
        head in one Query)."""
        probe = Pool(session_pk(session_id), "", session_id, RECENCY)
        read = self.pools.newest(probe, first_page=first_page)
        return _head(read.head), read

    def with_entry(self, session_id: str, key_id: str) -> tuple[Session | None, StoredEntry | None]:
        """The head row and one entry's base row, in one request."""
        pk = session_pk(session_id)
        rows = self._store.get_many([(pk, keys.HEAD), (pk, keys.entry_sk(key_id))])
        session, entries = self._head_and_entries(rows)
        return session, entries[0] if entries else None

    def items_and_memory(
        self, session: Session, after: int, upto: int
    ) -> tuple[list[StoredItem], list[StoredEntry]]:
        """Items `after+1..upto` and every entry, in one Query (items sort before entries)."""
        page = self._store.query(
            session_pk(session.id), KeyRange(low=item_sk(after + 1), high=keys.HEAD)
        )
        others, entries = self._split(page.records)
        rows = [row for row in others.values() if row.get("type") == "item"]
        return [_item(row) for row in rows if int(row["seq"]) <= upto], entries

    def items(self, session: Session, after: int, upto: int) -> list[StoredItem]:
        """Items `after+1..upto`, in order (one Query; agent learning reads them)."""
        if upto <= after:
            return []
        return [_item(row) for row in self._item_rows(session, after, upto)]

    def _item_rows(
        self, session: Session, after: int, upto: int, limit: int | None = None
    ) -> list[Record]:
        key_range = KeyRange(low=item_sk(after + 1), high=item_sk(upto))
        page = self._store.query(session_pk(session.id), key_range, limit=limit)
        return [row for row in page.records if row.get("type") == "item"]

    @staticmethod
    def _scope(session: Session) -> dict[str, str]:
        """Where an item's text is sealed."""
        return {"org": session.org_id, "pool": session.id, "field": "item"}

    def open_entry(self, session: Session, entry: StoredEntry) -> str:
        return self.pools.open_content(session_pool(session), entry)

    def open_item(self, session: Session, item: StoredItem) -> str:
        return self._cipher.open(item.sealed, scope=self._scope(session), row=item_sk(item.seq))

    def create(self, session: Session, now_ms: int) -> None:
        self._store.write(
            [Put(self._head_row(session, now_ms), Absent()), self.index_put(session, now_ms)]
        )

    def index_put(self, session: Session, now_ms: int) -> Put:
        """The session's row in its agent's list, for the head row's transaction."""
        row: Record = {
            "pk": agent_sessions_pk(session.agent_id),
            "sk": session.id,
            "type": "session-index",
            "orgId": session.org_id,
            "owner": session.owner,
            "createdAt": now_ms,
        }
        return Put(row, Absent())

    def listed(
        self, agent_id: str, visible: Callable[[str], bool], *, limit: int, after: str | None
    ) -> tuple[list[Session], bool]:
        """The agent's sessions whose owner `visible` keeps, newest first, after the
        session id `after`: (at most `limit` sessions, whether more follow)."""

        def shown(row: Record) -> str | None:
            return str(row["sk"]) if visible(str(row["owner"])) else None

        ids, more = newest_kept(
            self._store, agent_sessions_pk(agent_id), shown, limit=limit, after=after
        )
        rows = head_rows(self._store, [session_pk(i) for i in ids], "session")
        found = {s.id: s for s in map(session_of, rows)}
        return [found[i] for i in ids if i in found], more

    def item_page(
        self, session: Session, *, limit: int, after: int
    ) -> tuple[list[SessionItem], bool]:
        """Items after `after` in order, opened: (at most `limit`, whether more follow)."""
        rows = self._item_rows(session, after, session.item_count, limit + 1)
        items = [
            SessionItem(
                id=item_id(int(row["seq"])),
                role=str(row["role"]),
                content=self.open_item(session, _item(row)),
                app=row.get("app"),
                model=row.get("model"),
                turn_id=row.get("turnId"),
                created_at=int(row.get("createdAt", 0)),
            )
            for row in rows[:limit]
        ]
        return items, len(rows) > limit

    def head_change(self, before: Session, after: Session, now_ms: int) -> Update:
        """Move the head row from `before` to `after`, if nobody changed it meanwhile.

        Every change moves `revision`, so one condition on it guards the whole row.
        """
        return Update(
            session_pk(before.id),
            keys.HEAD,
            set={
                "head": after.head,
                "revision": after.revision,
                "itemCount": after.item_count,
                "processed": after.processed,
                "overrides": dict(after.overrides),
                "updatedAt": now_ms,
            },
            condition=Equals("revision", before.revision, name=SESSION_REVISION),
        )

    def item_put(self, session: Session, item: ItemToAdd, now_ms: int) -> Put:
        sk = item_sk(item.seq)
        row: Record = {
            "pk": session_pk(session.id),
            "sk": sk,
            "type": "item",
            "seq": item.seq,
            "role": item.role,
            "app": item.app,
            "model": item.model,
            "turnId": item.turn_id,
            "edit": item.edit,
            "text": self._cipher.seal(item.content, scope=self._scope(session), row=sk),
            "createdAt": now_ms,
        }
        return Put(row, Absent())

    def entry_put(
        self, session: Session, meta: EntryMeta, content: str, previous: EntryMeta | None
    ) -> list[Action]:
        """A new entry, or one replacing `previous` (the one under its key)."""
        return self.pools.put(session_pool(session), meta, content, previous=previous)

    def entry_retract(
        self, session: Session, previous: EntryMeta, after: EntryMeta
    ) -> list[Action]:
        """An entry retracted; its content stays as it was."""
        return self.pools.change(session_pool(session), previous, after)

    def fork(
        self, source: Session, fork: Session, now_ms: int, also: Sequence[Action] = ()
    ) -> None:
        """Copy the history and memory of `source` into `fork`, re-sealed for the fork.

        Rows go in transactions of at most 100 actions, the fork's head row in the LAST one,
        together with a check that the source is still at the revision it was read at: the
        fork is invisible until complete, and a source that changed while it was copied
        raises WriteConflict (rows already written stay unreachable; a retry with the same
        fork id overwrites them). `also` joins that last transaction (agent memory's rows).
        """
        page = self._store.query(
            session_pk(source.id), KeyRange(low=keys.ITEM_PREFIX, high=keys.RECENT_END)
        )
        puts: list[Action] = [
            Put(self._resealed(source, fork, row))
            for row in page.records
            if row.get("type") == "item"
        ]
        puts += [
            Put(row)
            for row in self.pools.copy_rows(session_pool(source), session_pool(fork), page.records)
        ]
        last: list[Action] = [
            Check(session_pk(source.id), keys.HEAD, Equals("revision", source.revision)),
            Put(self._head_row(fork, now_ms), Absent()),
            self.index_put(fork, now_ms),
            *also,
        ]
        write_last(self._store, puts, last)

    def _resealed(self, source: Session, fork: Session, item: Record) -> Record:
        """An item of `source` as `fork` holds it."""
        plain = self._cipher.open(item["text"], scope=self._scope(source), row=item["sk"])
        sealed = self._cipher.seal(plain, scope=self._scope(fork), row=item["sk"])
        return item | {"pk": session_pk(fork.id), "text": sealed}

    def _head_row(self, session: Session, now_ms: int) -> Record:
        return {
            "pk": session_pk(session.id),
            "sk": keys.HEAD,
            "type": "session",
            "orgId": session.org_id,
            "agentId": session.agent_id,
            "owner": session.owner,
            "kind": session.kind,
            "model": session.model,
            "head": session.head,
            "revision": session.revision,
            "itemCount": session.item_count,
            "processed": session.processed,
            "overrides": dict(session.overrides),
            "parentId": session.parent_id,
            "createdAt": now_ms,
            "updatedAt": now_ms,
        }


def _head(row: Record | None) -> Session | None:
    """The Session in a head row; None for no row or a session being deleted."""
    return session_of(row) if row is not None and row.get("type") == "session" else None


def session_of(row: Record) -> Session:
    return Session(
        id=str(row["pk"]).removeprefix(keys.SESSION_PREFIX),
        org_id=str(row["orgId"]),
        agent_id=str(row["agentId"]),
        owner=str(row["owner"]),
        kind=row["kind"],
        model=row.get("model"),
        head=str(row["head"]),
        revision=int(row["revision"]),
        item_count=int(row.get("itemCount", 0)),
        processed=int(row.get("processed", 0)),
        overrides={str(k): bool(v) for k, v in (row.get("overrides") or {}).items()},
        parent_id=row.get("parentId"),
    )


def _item(row: Record) -> StoredItem:
    return StoredItem(
        seq=int(row["seq"]),
        role=str(row["role"]),
        app=row.get("app"),
        model=row.get("model"),
        sealed=bytes(row["text"]),
    )
