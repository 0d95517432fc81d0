"""Threads whose newest messages semantic recall may not have indexed yet, for the schedule's
idle flush (service/recall_step.py).

`LEARN#recall-idle#<shard>` / `<threadId>`: organization, thread, `upto` (the thread's
message count after its last save), `at`, and `indexed` once a run indexed through `upto`.
Every save with recall on puts the row whole before its transaction; a run sets `indexed`
and the flush deletes a done row, both conditional on `upto` (a later save wins). Ids and
counts only, under `LEARN#` so that the schedule's function may read and delete them.

`RESOURCE#<orgId>#<userId>` / `RECALL-TAIL#<agentId>#<threadId>` (`RecallTails`): the same
save's count in the user's own partition, so that the next turn's recall finds, in one
Query, the user's threads whose newest messages may not be indexed yet and ranks them
itself (service/recall.py). The turn that reads a row whose messages are all indexed (or
whose thread is gone) deletes it, conditional on `upto`; erasing the person deletes the
partition.
"""

from __future__ import annotations

import contextlib
import logging
import zlib
from dataclasses import dataclass

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.threads import Thread
from agent_memory.persistence.keys import (
    OBSERVER_HEAD,
    RECALL_PENDING_PREFIX,
    RECALL_TAIL_PREFIX,
    resource_pk,
    thread_pk,
)
from agent_memory.persistence.rows import StoreRows
from agent_memory.ports import AtMost, Delete, Equals, KeyRange, Put, Store, Update
from agent_memory.ports.store import partition_rows

log = logging.getLogger(__name__)

SHARDS = 4
# Condition name: a save after the run (or the flush's read) moved the row's `upto`.
PENDING_MOVED = "recall-pending-moved"
# `indexed` of a thread that is gone or has recall off: nothing of it is left to index.
NOTHING_LEFT = 2**62


def pending_pk(thread_id: str) -> str:
    return f"{RECALL_PENDING_PREFIX}{zlib.crc32(thread_id.encode()) % SHARDS}"


def observed_boundary(store: Store, thread_id: str) -> int:
    """Messages of the thread numbered below this are shown as the observer's active
    observations, not verbatim (the `active` of its log head, persistence/observations.py;
    0 before any activation). One read of one small row."""
    head = store.get(thread_pk(thread_id), OBSERVER_HEAD)
    return int(head.get("active", 0)) if head is not None else 0


@dataclass(frozen=True)
class PendingRecall:
    org_id: str
    thread_id: str
    upto: int
    at: int
    indexed: int | None

    @property
    def done(self) -> bool:
        """Indexed through its last save."""
        return self.indexed is not None and self.indexed >= self.upto


class PendingRecalls(StoreRows):
    def saved(self, thread: Thread, upto: int, now_ms: int) -> None:
        """Put the row of a save of `thread` that will leave `upto` messages (replacing the
        row, `indexed` included). Raises Unavailable when the table is."""
        row = Put(
            {
                "pk": pending_pk(thread.id),
                "sk": thread.id,
                "type": "recall-pending",
                "orgId": thread.org_id,
                "threadId": thread.id,
                "upto": upto,
                "at": now_ms,
            }
        )
        self._store.write([row])

    def indexed(self, thread_id: str, reached: int) -> None:
        """Messages below `reached` are indexed: the row is done if no later save came.
        Best effort (the flush then runs once more and finds nothing to index)."""
        moved = AtMost("upto", reached, name=PENDING_MOVED)
        done = Update(pending_pk(thread_id), thread_id, set={"indexed": reached}, condition=moved)
        try:
            self._store.write([done])
        except WriteConflict:
            pass  # no row, or a later save: the flush indexes the rest
        except Unavailable:
            log.warning("recall's pending row was not marked: the flush will look again")

    def rows(self) -> list[PendingRecall]:
        """Every pending row, shard by shard."""
        found: list[PendingRecall] = []
        for shard in range(SHARDS):
            found.extend(
                PendingRecall(
                    org_id=str(row["orgId"]),
                    thread_id=str(row["threadId"]),
                    upto=int(row["upto"]),
                    at=int(row["at"]),
                    indexed=int(row["indexed"]) if "indexed" in row else None,
                )
                for row in partition_rows(self._store, f"{RECALL_PENDING_PREFIX}{shard}")
            )
        return found

    def forget(self, row: PendingRecall) -> None:
        """Delete a done row, unless a save moved it since it was read (then it stays for
        the next flush)."""
        with contextlib.suppress(WriteConflict):
            _delete_unmoved(self._store, pending_pk(row.thread_id), row.thread_id, row.upto)


# A user's tail rows read per turn: rows are deleted once indexed, so few are left at once.
TAIL_ROWS = 100


def tail_sk(agent_id: str, thread_id: str) -> str:
    return f"{RECALL_TAIL_PREFIX}{agent_id}#{thread_id}"


@dataclass(frozen=True)
class Tail:
    """A thread of the user whose messages below `upto` were saved, at `at` (ms)."""

    thread_id: str
    upto: int
    at: int


class RecallTails(StoreRows):
    """The user's threads whose newest messages the index may not hold yet."""

    def saved(self, thread: Thread, upto: int, now_ms: int) -> None:
        """Put the row of a save of `thread` that will leave `upto` messages. Raises
        Unavailable when the table is."""
        row = Put(
            {
                "pk": resource_pk(thread.org_id, thread.resource_id),
                "sk": tail_sk(thread.agent_id, thread.id),
                "type": "recall-tail",
                "threadId": thread.id,
                "upto": upto,
                "at": now_ms,
            }
        )
        self._store.write([row])

    def of_user(self, org_id: str, user_id: str, agent_id: str) -> list[Tail]:
        """The user's rows with the agent, the most recently saved first (one Query)."""
        page = self._store.query(
            resource_pk(org_id, user_id),
            KeyRange(prefix=tail_sk(agent_id, "")),
            limit=TAIL_ROWS,
        )
        tails = [
            Tail(str(row["threadId"]), int(row["upto"]), int(row["at"])) for row in page.records
        ]
        return sorted(tails, key=lambda t: -t.at)

    def forget(self, org_id: str, user_id: str, agent_id: str, tail: Tail) -> None:
        """Delete a row found indexed (or of a gone thread), unless a save moved it since."""
        with contextlib.suppress(WriteConflict, Unavailable):
            pk, sk = resource_pk(org_id, user_id), tail_sk(agent_id, tail.thread_id)
            _delete_unmoved(self._store, pk, sk, tail.upto)


def _delete_unmoved(store: Store, pk: str, sk: str, upto: int) -> None:
    """Delete a row unless a save moved its `upto` since it was read (WriteConflict)."""
    store.write([Delete(pk, sk, condition=Equals("upto", upto, name=PENDING_MOVED))])
