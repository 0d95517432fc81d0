"""A thread's working memory in the single table: ONE entry of the engine's model
(persistence/pools.py) under `MEM#<id>`, in `RESOURCE#<userId>` (scope resource: pool
`wm:<agent>:<user>`) or in `THREAD#<id>` (scope thread: pool `wm:<thread>`). A pool of one
entry needs no `RECENT#` copy."""

from __future__ import annotations

from agent_memory.domain.entries import EntryMeta, keyed_id
from agent_memory.domain.events import thread_object
from agent_memory.domain.threads import Thread
from agent_memory.persistence import keys
from agent_memory.persistence.events import event_action
from agent_memory.persistence.keys import resource_pk, thread_pk
from agent_memory.persistence.pools import OneRowLayout, Pool, PoolRows
from agent_memory.ports import Absent, Action, Equals

# A write of the notes conditional on the revision its writer read lost to another writer.
NOTES_REVISION = "working-memory-revision"

WORKING_MEMORY_KEY = "working-memory"


# A pool of one entry: its base row `MEM#<id>` and no copies.
SINGLE = OneRowLayout(keys.ENTRY_PREFIX)


def working_memory_pool(thread: Thread, scope: str) -> Pool:
    """Scope resource: one record per user (and agent), never across users; thread: one
    per thread."""
    if scope == "resource":
        pool_id = f"wm:{thread.agent_id}:{thread.resource_id}"
        return Pool(resource_pk(thread.org_id, thread.resource_id), thread.org_id, pool_id, SINGLE)
    return Pool(thread_pk(thread.id), thread.org_id, f"wm:{thread.id}", SINGLE)


class WorkingMemories(PoolRows):
    def get(self, thread: Thread, scope: str) -> str | None:
        return self.read(thread, scope)[0]

    def read(self, thread: Thread, scope: str) -> tuple[str | None, int]:
        """The notes and their revision (0: none yet), for a write conditional on it."""
        pool = working_memory_pool(thread, scope)
        stored = self.pools.get(pool, keyed_id(pool.pool_id, WORKING_MEMORY_KEY))
        if stored is None:
            return None, 0
        return self.pools.open_content(pool, stored), stored.meta.rev

    def put(self, thread: Thread, scope: str, text: str, now_ms: int) -> None:
        self._store.write(self.actions(thread, scope, text, now_ms))

    def actions(
        self,
        thread: Thread,
        scope: str,
        text: str,
        now_ms: int,
        by: str = "person",
        read_rev: int | None = None,
    ) -> list[Action]:
        """The notes replaced (and their event), to commit alone or with other rows; with
        `read_rev`, only while they are still at that revision (WriteConflict
        NOTES_REVISION otherwise)."""
        pool = working_memory_pool(thread, scope)
        entry_id = keyed_id(pool.pool_id, WORKING_MEMORY_KEY)
        previous = self.pools.get(pool, entry_id)
        meta = EntryMeta(
            id=entry_id,
            key=WORKING_MEMORY_KEY,
            kind="working-memory",
            created_at=previous.meta.created_at if previous is not None else now_ms,
            updated_at=now_ms,
            rev=(previous.meta.rev + 1) if previous is not None else 1,
            length=len(text),
            by=by,
        )
        ids = thread_object(thread.id, thread.agent_id, thread.resource_id)
        updated = event_action(thread.org_id, "working_memory.updated", ids, now_ms)
        condition = None
        if read_rev is not None:
            condition = (
                Equals("rev", read_rev, name=NOTES_REVISION)
                if read_rev
                else Absent(name=NOTES_REVISION)
            )
        return [*self.pools.put(pool, meta, text, condition=condition), updated]
