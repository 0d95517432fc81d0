"""Session memory as a learning pool; its change is conditional on the head row's revision."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.consolidation import Decision
from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.learning_notes import GENERATE_OFF, SOURCE_GONE
from agent_memory.domain.proposals import MEMORY_KINDS
from agent_memory.domain.session_memory import ENTRY_NAMESPACE, item_sources
from agent_memory.domain.sessions import Session
from agent_memory.persistence.pools import StoredEntry
from agent_memory.persistence.sessions import SESSION_REVISION, session_pool
from agent_memory.ports import Action, Clock
from agent_memory.service.keyed_learning import (
    MAX_ITEMS,
    KeyedPool,
    change_actions,
    known_entries,
    session_items,
)
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Evidence,
    PoolRef,
    Skipped,
)
from agent_memory.service.sessions import SessionAccess


@dataclass(frozen=True)
class SessionDetail:
    """The session's revision the run read: an entry edited after it is a person's."""

    version: int


class SessionLearningPool(KeyedPool[Session]):
    kind = "session"
    detail_type = SessionDetail
    version_condition = SESSION_REVISION

    def __init__(self, access: SessionAccess, clock: Clock) -> None:
        self._access = access
        self._repo = access.repo
        self._clock = clock

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """Skipped when the session is gone or its `generate` is off."""
        session = self._repo.get(pool.pool_id)
        if session is None or session.org_id != pool.org_id:
            raise Skipped(SOURCE_GONE)
        if not self._access.switches(session)["generate"]:
            raise Skipped(GENERATE_OFF)
        last = session.item_count if upto is None else min(upto, session.item_count)
        last = min(last, session.processed + MAX_ITEMS)
        if last <= session.processed:
            return None
        stored_items, stored_entries = self._repo.items_and_memory(session, session.processed, last)
        read = session_items(self._repo, session, stored_items)
        if not read:
            return None
        items = [item for _row, item in read]
        model = next((row.model for row, _item in reversed(read) if row.model), session.model)
        refused = self._access.refused_model(model, session.org_id)
        if refused is not None:
            raise Skipped(refused)  # `processed` stays: a widened list reads these items again
        return Evidence(
            pool=pool,
            position=session.processed,
            upto=session.processed + len(items),
            items=tuple(items),
            memory=known_entries(stored_entries, lambda e: self._repo.open_entry(session, e)),
            model=model,
            allowed_kinds=MEMORY_KINDS,
            person=None,  # one person per Session: "the user"
            detail=SessionDetail(session.revision),
        )

    def newest(self, evidence: Evidence[Any]) -> tuple[Session, Sequence[StoredEntry]]:
        found = self._repo.memory(evidence.pool.pool_id)
        if found is None or found[0].processed != evidence.position:
            raise AlreadyApplied("the read position moved: another run applied")
        return found

    def actions(
        self,
        state: Session,
        evidence: Evidence[Any],
        decision: Decision,
        current: Mapping[str, EntryMeta],
    ) -> list[Action]:
        """The head's revision and `processed` move with the entries (`SESSION_REVISION`)."""
        after = state.consolidated(evidence.upto)
        now = self._clock.now_ms()
        return [
            self._repo.head_change(state, after, now),
            *change_actions(
                self._repo.pools,
                session_pool(state),
                ENTRY_NAMESPACE,
                decision,
                current,
                item_sources,
                now=now,
                rev=after.revision,
            ),
        ]
