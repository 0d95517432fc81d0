"""Session memory: every command is one transaction conditional on the head's `revision`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent_memory.domain.access import Action as Access
from agent_memory.domain.access import authorized
from agent_memory.domain.bounds import check_history, check_remember
from agent_memory.domain.entries import Entry, EntryMeta
from agent_memory.domain.errors import SessionConflict, WriteConflict
from agent_memory.domain.identity import Principal
from agent_memory.domain.memory_text import MemoryText, empty, first_page
from agent_memory.domain.runs import RunView
from agent_memory.domain.session_memory import (
    Command,
    Configure,
    Forget,
    Refresh,
    Remember,
    check_command,
    configure,
    edit_note,
    entry_id,
    fact,
    item_sources,
)
from agent_memory.domain.sessions import Session, item_id
from agent_memory.persistence.events import event_action
from agent_memory.persistence.pools import StoredEntry
from agent_memory.persistence.sessions import ItemToAdd
from agent_memory.ports import Action, Clock
from agent_memory.service.learning_pools import Workflow
from agent_memory.service.memory_texts import newest_text
from agent_memory.service.sessions import (
    SessionAccess,
    learning_runs,
    session_pool_ref,
)

STALE = "the session changed since you read it; read it again and retry"


@dataclass(frozen=True)
class MemoryRead:
    session: Session
    entries: list[Entry]
    switches: dict[str, bool]


class SessionMemoryService:
    def __init__(
        self,
        access: SessionAccess,
        clock: Clock,
        *,
        max_text_length: int,
        learning: Workflow | None = None,
    ) -> None:
        self._access = access
        self._repo = access.repo
        self._clock = clock
        self._max_text_length = max_text_length
        self.learning = learning

    def _memory(
        self, principal: Principal, session_id: str, action: Access = "read"
    ) -> tuple[Session, list[StoredEntry]]:
        session, stored = self._repo.memory(session_id) or (None, [])
        return authorized(principal, session, action, what="session"), stored

    def read(self, principal: Principal, session_id: str) -> MemoryRead:
        session, stored = self._memory(principal, session_id)
        entries = [Entry(s.meta, self._repo.open_entry(session, s)) for s in stored]
        return MemoryRead(session, entries, self._access.switches(session))

    def text(self, principal: Principal, session_id: str) -> MemoryText:
        """Decrypts only what it shows."""
        limit = self._max_text_length
        found, newest = self._repo.newest(session_id, first_page(limit))
        session = authorized(principal, found, "read", what="session")
        if not self._access.switches(session)["use"]:
            return empty(limit)
        return newest_text(newest, lambda entry: self._repo.open_entry(session, entry), limit)

    def command(
        self, principal: Principal, session_id: str, expected: str, revision: int, command: Command
    ) -> Session:
        check_command(command)
        previous: EntryMeta | None = None
        pool: list[EntryMeta] = []
        if isinstance(command, Remember):
            # The pool's bound is checked on the entries' lengths: nothing is decrypted.
            whole = self._memory(principal, session_id, "change")
            session, pool = whole[0], [s.meta for s in whole[1]]
            previous = next((m for m in pool if m.id == entry_id(command.key)), None)
        elif isinstance(command, Forget):
            found, stored = self._repo.with_entry(session_id, entry_id(command.key))
            session = authorized(principal, found, "change", what="session")
            previous = stored.meta if stored is not None else None
        else:
            session = self._access.load(principal, session_id, "change")
        if isinstance(command, Refresh):
            # Refresh does not check expected and revision, though both are sent.
            return self._refresh(session)
        if session.head != expected or session.revision != revision:
            raise SessionConflict(STALE)
        if isinstance(command, Remember | Forget):
            check_history(session.item_count, 1, ["command"])  # the edit Item
        if isinstance(command, Remember):
            check_remember(pool, previous, len(command.content))
        after, actions = self._plan(session, command, previous)
        try:
            self._repo.write(actions)
        except WriteConflict as error:
            raise SessionConflict(STALE) from error
        return after

    def _plan(
        self, session: Session, command: Remember | Forget | Configure, previous: EntryMeta | None
    ) -> tuple[Session, list[Action]]:
        now = self._clock.now_ms()
        if isinstance(command, Configure):
            after = session.configured(configure(session.overrides, command.changes))
            return after, [self._repo.head_change(session, after, now)]
        # The edit's Item is the change's source; read too when all before it was read.
        seq = session.item_count + 1
        after = session.with_items(1, mark_processed=session.processed == session.item_count)
        sources = item_sources([item_id(seq)])
        edit: Literal["Remember", "Forget"] = (
            "Remember" if isinstance(command, Remember) else "Forget"
        )
        note = ItemToAdd(seq, "notice", edit_note(command), edit=edit)
        change: list[Action]
        if isinstance(command, Remember):
            meta = fact(
                command.key, command.kind, command.content, sources, now, after.revision, previous
            )
            change = self._repo.entry_put(session, meta, command.content, previous)
        else:
            if previous is None:
                raise SessionConflict(f"no fact has the key {command.key!r}")
            retracted = previous.retracted(sources, now, after.revision)
            change = self._repo.entry_retract(session, previous, retracted)
        return after, [
            self._repo.head_change(session, after, now),
            self._repo.item_put(session, note, now),
            *change,
            event_action(session.org_id, "memory.changed", {"sessionId": session.id}, now),
        ]

    def _refresh(self, session: Session) -> Session:
        if not self._access.switches(session)["generate"]:
            return session
        if self._access.missing_model(session.model) is not None:
            raise SessionConflict("the session has no model to learn with")
        if self.learning is not None:
            self.learning.start(
                session_pool_ref(session), upto=session.item_count, reason="refresh"
            )
        return session

    def executions(self, principal: Principal, session_id: str) -> list[RunView]:
        session = self._access.load(principal, session_id, "read")
        return learning_runs(self.learning, session_pool_ref(session))
