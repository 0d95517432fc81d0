"""Purge and erasure in bot memory: batches of one transaction each, reading no content."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.domain.bot_memory import without_person
from agent_memory.domain.bot_memory_purge import erasure_targets, purge_targets
from agent_memory.domain.errors import WriteConflict
from agent_memory.persistence.bot_memory import ENTRY_ROWS
from agent_memory.persistence.pools import Pool
from agent_memory.ports import Action, Present
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS

if TYPE_CHECKING:
    from agent_memory.service.bot_memory import BotMemoryService

# The head row, the log row and the change's event take three actions of the transaction.
PURGE_ROOM = MAX_TRANSACTION_ACTIONS - 3
# Entries of one audience (base row, recency copy, audience row) one batch removes; an entry
# naming more audiences leaves room for fewer.
PURGE_BATCH = PURGE_ROOM // ENTRY_ROWS


def purge_pool(memory: BotMemoryService, pool: Pool, tag: str, *, erased: str | None = None) -> int:
    """Remove the targets of `tag` (or `erased`'s); how many entries this call removed."""
    removed = 0
    while True:
        snap = memory.snapshot(pool)
        metas = snap.metas()
        now, version = memory.clock.now_ms(), snap.version + 1
        if erased is None:
            gone, afters = purge_targets(metas.values(), tag), []
        else:
            gone, kept = erasure_targets(metas.values(), erased)
            afters = [without_person(metas[i], erased, now, version) for i in kept]
        if not gone and not afters:
            return removed
        batch: list[str] = []
        changes: list[Action] = []
        for entry_id in sorted(gone)[:PURGE_BATCH]:
            rows = memory.repo.pools.remove(pool, metas[entry_id], condition=Present())
            # Every transaction makes progress: its first entry always goes in.
            if batch and len(changes) + len(rows) > PURGE_ROOM:
                break
            batch.append(entry_id)
            changes += rows
        stored = snap.by_id()
        changed: list[str] = []
        for after in afters:
            change = memory.entry_change(pool, snap, stored[after.id], after)
            # Every transaction makes progress: its first change always goes in.
            if (batch or changed) and len(changes) + len(change) > PURGE_ROOM:
                break
            changes += change
            changed.append(after.id)
        going = set(batch)
        left = [t for i, tags in snap.stored_tags().items() if i not in going for t in tags]
        names = snap.topics.collected(left)
        renamed = names if names != snap.topics else None
        try:
            memory.commit_change(pool, snap.version, now, changes, (*batch, *changed), renamed)
        except WriteConflict as error:
            if not memory.lost(error):
                raise  # another change took the version first: the next batch reads again
        else:
            removed += len(batch)
