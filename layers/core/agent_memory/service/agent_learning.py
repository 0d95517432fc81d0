"""Agent memory learning: the hook after a Turn and the agent pool of the learning workflow.

A Turn that teaches nothing still gets a skipped execution row, so the Agent's learning
lists one per Turn.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.agent_memory import (
    ENTRY_NAMESPACE,
    NO_HELPER,
    NOT_STARTED,
    PASSES_OVER,
    QUEUED,
    LogChange,
    explained,
    outside_only,
    skip_reason,
    sources_of,
)
from agent_memory.domain.consolidation import Decision
from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.errors import Unavailable
from agent_memory.domain.learning_notes import ONLY_APP_RESULTS, POOL_GONE, SOURCE_GONE
from agent_memory.domain.memory_bot import ReadMark
from agent_memory.domain.model_names import disallowed
from agent_memory.domain.proposals import LASTING_KINDS
from agent_memory.domain.session_memory import effective_switches
from agent_memory.domain.sessions import Session
from agent_memory.persistence.agent_memory import (
    MEMORY_VERSION,
    AgentMemory,
    AgentMemoryRepository,
    agent_pool,
)
from agent_memory.persistence.agents import agent_pk
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.identity import IdentityRepository
from agent_memory.persistence.pools import StoredEntry
from agent_memory.persistence.positions import advanced, position_move, position_put
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.persistence.sessions import SessionRepository
from agent_memory.ports import Action, Clock, ModelCatalog
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
    SourceRef,
    Workflow,
)
from agent_memory.service.learning_runs import execution_name, run_of
from agent_memory.service.sessions import LearningAnswer, OrgDefaults

log = logging.getLogger(__name__)

SKIP_TRIES = 3


def agent_pool_ref(session: Session) -> PoolRef:
    return PoolRef("agent", session.org_id, session.agent_id, SourceRef("session", session.id))


def _skip_reason(
    session: Session,
    settings: Mapping[str, Any],
    generate: bool,
    models: ModelCatalog | None = None,
) -> str | None:
    """Why a Turn of `session` teaches its agent nothing now; None when it may. With
    `models`, a helper model that none of them runs is none; a helper the organization's
    `allowedModels` leaves out is never called, and the skip says so."""
    helper = settings.get("helperModel")
    refused = disallowed(helper, settings.get("allowedModels"))
    reason = skip_reason(
        session_kind=session.kind,
        generate=generate,
        agent_memory=bool(settings.get("agentMemory", True)),
        has_helper=helper is not None
        and refused is None
        and (models is None or models.resolve(helper) is not None),
    )
    return refused if reason == NO_HELPER and refused is not None else reason


class AgentLearning:
    def __init__(
        self,
        repo: AgentMemoryRepository,
        runs: ExecutionRepository,
        sessions: SessionRepository,
        org_settings: OrgDefaults,
        models: ModelCatalog,
        clock: Clock,
        learning: Workflow,
    ) -> None:
        self._repo = repo
        self._runs = runs
        self._sessions = sessions
        self._org_settings = org_settings
        self._models = models
        self._clock = clock
        self._learning = learning

    def after_turn(self, session: Session, upto: int, *, generate: bool) -> LearningAnswer:
        """Start learning, or record why the Turn teaches nothing; never fails the Turn."""
        settings = self._org_settings.effective(session.org_id)
        reason = _skip_reason(session, settings, generate, self._models)
        if reason is None:
            fresh = self._sessions.get(session.id)
            if fresh is not None and fresh.item_count > upto:
                reason = QUEUED
        if reason is None:
            answer = self._learning.start(agent_pool_ref(session), upto=upto, reason="turn")
            if answer == "started":
                return "started"
            if answer == "throttled":
                return "skipped"  # the skip is recorded with the quota's reason
        self._skip(session, upto, reason or NOT_STARTED)
        return "skipped"

    def _skip(self, session: Session, upto: int, note: str) -> None:
        """A skip that passes over the items moves the read position in the same write."""
        ref = agent_pool_ref(session)

        def attempt() -> None:
            now = self._clock.now_ms()
            name = execution_name(ref, upto)
            run = run_of(ref, name, now, "turn", upto)
            actions = self._runs.skipped(run, now, note)
            if note in PASSES_OVER:
                mark = self._repo.position(session.agent_id, session.id)
                if mark.position < upto:
                    moved = advanced(mark, upto)
                    pk = agent_pk(session.agent_id)
                    actions.append(position_move(pk, session.id, mark, moved, now))
            self._repo.write(actions)  # another Turn moving the position first: read again

        try:
            until_it_lands(
                attempt, lambda: Unavailable("the position kept moving"), tries=SKIP_TRIES
            )
        except Unavailable:
            log.warning("agent learning: the skipped turn could not be recorded")

    def fork_actions(self, source: Session, fork: Session) -> Sequence[Action]:
        """A Fork's read position starts after its copied history, never taught twice."""
        mark = ReadMark(fork.item_count)
        return [position_put(agent_pk(fork.agent_id), fork.id, mark, self._clock.now_ms())]


@dataclass(frozen=True)
class AgentDetail:
    """The Session read and the memory's version then: an entry edited after is a person's."""

    session: str
    version: int


class AgentLearningPool(KeyedPool[tuple[AgentMemory, ReadMark]]):
    kind = "agent"
    detail_type = AgentDetail
    version_condition = MEMORY_VERSION

    def __init__(
        self,
        repo: AgentMemoryRepository,
        sessions: SessionRepository,
        people: IdentityRepository,
        org_settings: OrgDefaults,
        clock: Clock,
    ) -> None:
        self._repo = repo
        self._sessions = sessions
        self._people = people
        self._org_settings = org_settings
        self._clock = clock

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """Skipped when the Session may not teach now or only App results are unread."""
        source = pool.source
        session = self._sessions.get(source.id) if source and source.kind == "session" else None
        if session is None or (session.org_id, session.agent_id) != (pool.org_id, pool.pool_id):
            raise Skipped(SOURCE_GONE)
        settings = self._org_settings.effective(session.org_id)
        generate = effective_switches(settings["memory"], session.overrides)["generate"]
        reason = _skip_reason(session, settings, generate)
        if reason is not None:
            raise Skipped(reason)
        position = self._repo.position(pool.pool_id, session.id).position
        target = session.item_count if upto is None else min(upto, session.item_count)
        last = min(target, position + MAX_ITEMS)
        read = session_items(
            self._sessions, session, self._sessions.items(session, position, last), session.id
        )
        if not read:
            return None
        items, read_upto = [item for _row, item in read], read[-1][0].seq
        # App results alone support nothing, unless a full window would stick the position.
        if outside_only(items) and read_upto >= target:
            raise Skipped(ONLY_APP_RESULTS)
        found = self._repo.read(pool.pool_id)
        if found is None:
            raise Skipped(POOL_GONE)
        return Evidence(
            pool=pool,
            position=position,
            upto=read_upto,
            items=tuple(items),
            memory=known_entries(found.entries, lambda entry: self._repo.open(found.agent, entry)),
            model=settings.get("helperModel"),
            allowed_kinds=LASTING_KINDS,
            person=self._person(session.org_id, session.owner),
            detail=AgentDetail(session.id, found.version),
        )

    def _person(self, org_id: str, user_id: str) -> str:
        user = self._people.get_user(org_id, user_id)
        return user.name if user is not None and user.name else user_id

    def newest(
        self, evidence: Evidence[AgentDetail]
    ) -> tuple[tuple[AgentMemory, ReadMark], Sequence[StoredEntry]]:
        mark = self._repo.position(evidence.pool.pool_id, evidence.detail.session)
        if mark.position != evidence.position:
            raise AlreadyApplied("the read position moved: another run applied")
        found = self._repo.read(evidence.pool.pool_id)
        if found is None:
            raise AlreadyApplied("the agent is gone")
        return (found, mark), found.entries

    def decide(
        self, evidence: Evidence[Any], changes: list[Any], entries: Sequence[StoredEntry]
    ) -> Decision:
        """Says which kind of write a refused change lost to."""
        writers = {s.meta.name: s.meta.by or "consolidation" for s in entries}
        return explained(super().decide(evidence, changes, entries), writers)

    def actions(
        self,
        state: tuple[AgentMemory, ReadMark],
        evidence: Evidence[AgentDetail],
        decision: Decision,
        current: Mapping[str, EntryMeta],
    ) -> list[Action]:
        """A new version and its log line when a change is accepted; the read position last:
        a conflict there means another run applied."""
        (found, mark), now = state, self._clock.now_ms()
        agent, session_id = found.agent, evidence.detail.session
        actions: list[Action] = []
        if decision.accepted:
            version = found.version + 1
            keys = tuple(change.key for change in decision.accepted)
            actions.append(self._repo.head_change(agent, found.version, version, now))
            actions += change_actions(
                self._repo.pools,
                agent_pool(agent),
                ENTRY_NAMESPACE,
                decision,
                current,
                lambda items: sources_of(session_id, items),
                now=now,
                rev=version,
                by="consolidation",
            )
            change = LogChange(version, now, "consolidation", keys)
            actions.append(self._repo.log_put(agent, change, session_id))
        moved = advanced(mark, evidence.upto)
        actions.append(position_move(agent_pk(agent.id), session_id, mark, moved, now))
        return actions
