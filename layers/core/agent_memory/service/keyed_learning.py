"""What the keyed pools (session and agent memory) read and write the same way."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from agent_memory.domain.agent_memory import known
from agent_memory.domain.bounds import within_bound
from agent_memory.domain.consolidation import Decision, PoolRules, consolidate
from agent_memory.domain.entries import EntryMeta, Source, keyed_entry
from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.evidence import EvidenceItem, KnownEntry
from agent_memory.domain.proposals import ProposedChange, ProposedRemember
from agent_memory.domain.sessions import Session, item_id
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.memory_changes import LearningRequest, consolidation
from agent_memory.persistence.pools import Pool, PoolRepository, StoredEntry
from agent_memory.persistence.sessions import SessionRepository, StoredItem
from agent_memory.ports import Action
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS
from agent_memory.service.learning_pools import (
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolDefaults,
    PoolKind,
    json_size,
)

# A pool's newest state, as its change reads it.
S = TypeVar("S")
# Bytes of the current entries shown to the model, JSON-encoded.
MEMORY_BUDGET = 90_000
# The evidence is kept in one execution row; what is left is read by the next run.
MAX_ITEMS = 200
ITEM_BUDGET = 150_000


def session_items(
    sessions: SessionRepository,
    session: Session,
    stored: Sequence[StoredItem],
    source: str | None = None,
) -> list[tuple[StoredItem, EvidenceItem]]:
    """A Session's items within `ITEM_BUDGET` (the first one always)."""
    items: list[tuple[StoredItem, EvidenceItem]] = []
    used = 0
    for row in stored:
        content = sessions.open_item(session, row)
        used += json_size(content)
        if items and used > ITEM_BUDGET:
            break
        items.append((row, EvidenceItem(item_id(row.seq), row.role, content, row.app, source)))
    return items


def known_entries(
    stored: Sequence[StoredEntry], open_content: Callable[[StoredEntry], str]
) -> tuple[KnownEntry, ...]:
    """Active entries, then retracted keys without text, so a key does not come back."""
    known: list[KnownEntry] = []
    used = 0
    for entry in sorted(stored, key=lambda s: (not s.meta.active, -s.meta.updated_at)):
        meta = entry.meta
        content = open_content(entry) if meta.active else ""
        used += json_size(meta.name) + json_size(content) + 64
        if used > MEMORY_BUDGET:
            break
        known.append(KnownEntry(meta.name, content, meta.kind, meta.status))
    return tuple(known)


def change_actions(
    pools: PoolRepository,
    pool: Pool,
    namespace: str,
    decision: Decision,
    current: Mapping[str, EntryMeta],
    sources: Callable[[tuple[str, ...]], tuple[Source, ...]],
    *,
    now: int,
    rev: int,
    by: str | None = None,
) -> list[Action]:
    """A Remember replaces the entry under its key; a Forget retracts it, content kept."""
    actions: list[Action] = []
    # Entries written together share time and revision; their names order them.
    ranked = sorted(decision.accepted, key=lambda change: change.key)
    order = {change.key: position for position, change in enumerate(ranked)}
    for change in decision.accepted:
        previous = current.get(change.key)
        if isinstance(change, ProposedRemember):
            meta = keyed_entry(
                namespace,
                change.key,
                change.kind,
                change.content,
                now_ms=now,
                rev=rev,
                sources=sources(change.sources),
                previous=previous,
                by=by,
            )
            actions += pools.put(
                pool, meta, change.content, previous=previous, order=order[change.key]
            )
        elif previous is not None:
            after = previous.retracted(sources(change.sources), now, rev, by)
            actions += pools.change(pool, previous, after)
    return actions


class KeyedPool(PoolDefaults, ABC, Generic[S]):
    """A pool of entries under keys (a session's, an agent's): the consolidation task, the
    condition its version guards, and one change: the pool's newest state `S`, the
    consolidation rules' decision on it, and the pool's actions for that decision."""

    kind: PoolKind
    # The write condition on the pool's version: losing it means another writer won.
    version_condition: ClassVar[str]

    def task(self, evidence: Evidence[Any]) -> Ask[LearningRequest, tuple[ProposedChange, ...]]:
        return consolidation(self.kind, evidence)

    def lost(self, error: WriteConflict) -> bool:
        return error.raced or error.condition == self.version_condition

    @abstractmethod
    def newest(self, evidence: Evidence[Any]) -> tuple[S, Sequence[StoredEntry]]:
        """The pool's state and entries now; AlreadyApplied when the read position moved."""

    @abstractmethod
    def actions(
        self,
        state: S,
        evidence: Evidence[Any],
        decision: Decision,
        current: Mapping[str, EntryMeta],
    ) -> list[Action]:
        """The accepted changes, the pool's version and the read position's move."""

    def decide(
        self, evidence: Evidence[Any], changes: list[Any], entries: Sequence[StoredEntry]
    ) -> Decision:
        """The rules of consolidation for the pool's kinds and the items this run read."""
        rules = PoolRules.of(evidence.allowed_kinds, evidence.items)
        # An entry written after the version the run read (its detail's) keeps that write.
        newest = known((entry.meta for entry in entries), evidence.detail.version)
        return consolidate(changes, newest, rules)

    def change(
        self, evidence: Evidence[Any], changes: Sequence[Any], finish: FinishActions
    ) -> Change:
        """The decision within the pool's bound (a Remember past it is refused: POOL_FULL),
        then the largest prefix of its changes that fits one transaction; the rest are
        rejected."""
        state, entries = self.newest(evidence)
        current = {entry.meta.name: entry.meta for entry in entries}
        decision = within_bound(self.decide(evidence, list(changes), entries), current)
        while True:
            outcome = Outcome(decision.applied_records(), decision.rejected_records())
            finishing = list(finish(outcome))
            actions = self.actions(state, evidence, decision, current)
            excess = len(actions) + len(finishing) - MAX_TRANSACTION_ACTIONS
            if excess <= 0 or not decision.accepted:
                return Change([*actions, *finishing], outcome)
            # A change costs at most three actions (its row, its copy, a stale copy).
            decision = decision.limited(max(0, len(decision.accepted) - max(1, excess // 3)))
