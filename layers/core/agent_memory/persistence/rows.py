"""What every repository does with rows the same way: head rows of one type, a list
partition read newest first, a pool's change log, partitions deleted, and writes larger
than one transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from agent_memory.persistence import keys
from agent_memory.ports import Action, Cipher, Delete, KeyRange, Record, Store
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS, partition_rows, write_in_batches

T = TypeVar("T")

# Index rows read per Query while a list steps over rows the caller may not see.
LIST_READ = 100


class StoreRows:
    def __init__(self, store: Store) -> None:
        self._store = store

    def _rows(self, pk: str, key_range: KeyRange | None = None) -> Iterator[Record]:
        """Every row of a partition (in `key_range`), read only as far as the caller iterates."""
        return partition_rows(self._store, pk, key_range)

    def _delete_all(
        self, pk: str, key_range: KeyRange | None = None, *, but_head: bool = False
    ) -> list[Record]:
        """Every row of a partition (in `key_range`; but its head row), deleted in batches;
        the rows it held."""
        rows = [r for r in self._rows(pk, key_range) if not (but_head and r["sk"] == keys.HEAD)]
        write_in_batches(self._store, [Delete(pk, str(r["sk"])) for r in rows])
        return rows


class SealedRows(StoreRows):
    def __init__(self, store: Store, cipher: Cipher) -> None:
        super().__init__(store)
        self._cipher = cipher


def head_row(store: Store, pk: str, row_type: str) -> Record | None:
    """A partition's head row when it is of `row_type` (one being deleted is not)."""
    row = store.get(pk, keys.HEAD)
    return row if row is not None and row.get("type") == row_type else None


def head_rows(store: Store, pks: Sequence[str], row_type: str) -> list[Record]:
    """The head rows of `row_type` of several partitions, in one batch read (missing ones
    and others left out)."""
    if not pks:
        return []
    rows = store.get_many([(pk, keys.HEAD) for pk in pks])
    return [row for row in rows if row.get("type") == row_type]


def people_of(store: Store, org_id: str, user_ids: Sequence[str]) -> set[str]:
    """Which of `user_ids` are people of `org_id` (one batch read)."""
    if not user_ids:
        return set()
    rows = store.get_many([(keys.user(org_id, u), keys.HEAD) for u in user_ids])
    return {str(row["pk"]).removeprefix(keys.user(org_id, "")) for row in rows}


def newest_kept(
    store: Store, pk: str, keep: Callable[[Record], T | None], *, limit: int, after: str | None
) -> tuple[list[T], bool]:
    """A list partition's rows newest first after the sort key `after`, each turned by
    `keep` into what the page shows (None: stepped over): (at most `limit`, whether more
    follow)."""
    kept: list[T] = []
    while True:
        page = store.query(pk, limit=LIST_READ, after=after, newest_first=True)
        kept += [shown for shown in map(keep, page.records) if shown is not None]
        if len(kept) > limit or page.next is None:
            return kept[:limit], len(kept) > limit
        after = page.next


def numbered_rows(
    store: Store,
    pk: str,
    prefix: str,
    sk_of: Callable[[int], str],
    limit: int,
    before: int | None = None,
) -> list[Record]:
    """Rows numbered under `prefix` (`sk_of(n)`: a change log's versions, an agent's
    published versions) newest first, `limit` at most, numbered below `before` when given."""
    if before is not None and before <= 1:
        return []
    high = sk_of(before - 1) if before is not None else f"{prefix}~"
    page = store.query(pk, KeyRange(low=prefix, high=high), limit=limit, newest_first=True)
    return page.records


def log_rows(store: Store, pk: str, *, limit: int, before: int | None) -> list[Record]:
    """A pool's change log (`LOG#<version>`) newest first, older than `before` when given."""
    return numbered_rows(store, pk, keys.LOG_PREFIX, keys.log_sk, limit, before)


def write_groups(store: Store, groups: Iterable[Sequence[Action]]) -> None:
    """Each group within one transaction, as many groups as fit in 100 actions."""
    batch: list[Action] = []
    for group in groups:
        if batch and len(batch) + len(group) > MAX_TRANSACTION_ACTIONS:
            store.write(batch)
            batch = []
        batch += group
    if batch:
        store.write(batch)


def write_last(
    store: Store,
    actions: Sequence[Action],
    last: Sequence[Action],
    *,
    size: int = MAX_TRANSACTION_ACTIONS,
) -> None:
    """`actions` in transactions of `size` and `last` in the final one (with as many of
    `actions` as fit beside it): what `last` writes (a head row) appears only once every
    other row is written."""
    tail = actions[max(0, len(actions) - (size - len(last))) :]
    write_in_batches(store, actions[: len(actions) - len(tail)], size=size)
    store.write([*last, *tail])
