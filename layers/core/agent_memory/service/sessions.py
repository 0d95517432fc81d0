"""Sessions: create, read, list, append a completed Turn, fork; a Turn only starts learning."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, Protocol

from agent_memory.domain.access import Action, authorized, require_tenant
from agent_memory.domain.agents import AGENTS_BELONG_TO_A_PERSON
from agent_memory.domain.bounds import SkipReason, check_history
from agent_memory.domain.errors import SessionConflict, Unavailable, ValidationFailed
from agent_memory.domain.identity import Principal, person_of
from agent_memory.domain.model_names import ModelPolicy, disallowed, parse_model_name
from agent_memory.domain.runs import RunView
from agent_memory.domain.session_memory import SWITCHES, effective_switches
from agent_memory.domain.sessions import (
    NewItem,
    Session,
    SessionItem,
    check_turn,
    forked,
    item_id,
    item_seq,
    new_session,
    only_runs_an_app_action,
)
from agent_memory.persistence.retrying import once, until_it_lands
from agent_memory.persistence.sessions import ItemToAdd, SessionRepository
from agent_memory.ports import Action as WriteAction
from agent_memory.ports import Clock, Ids, ModelCatalog
from agent_memory.service.agents import AgentService
from agent_memory.service.learning_pools import PoolRef, Workflow
from agent_memory.service.model_choice import ModelChoice

LearningAnswer = Literal["started", "skipped"]


class Default(Enum):
    """`model` left out: the deployment's default model."""

    MODEL = "default"


class AgentLearning(Protocol):
    def after_turn(self, session: Session, upto: int, *, generate: bool) -> LearningAnswer: ...

    def fork_actions(self, source: Session, fork: Session) -> Sequence[WriteAction]:
        """Rows written with a Fork: its copied history is the source's to teach."""
        ...


class OrgDefaults(Protocol):
    def effective(self, org_id: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TurnResult:
    session: Session
    turn_id: str
    item_ids: list[str]
    learning: LearningAnswer
    agent_learning: LearningAnswer
    # Set exactly when `learning` is "skipped".
    learning_reason: SkipReason | None = None


def session_pool_ref(session: Session) -> PoolRef:
    return PoolRef("session", session.org_id, session.id)


def learning_runs(learning: Workflow | None, pool: PoolRef) -> list[RunView]:
    """The pool's newest learning runs, newest first."""
    return learning.executions(pool) if learning is not None else []


class SessionAccess:
    """A Session as its caller may see it, its switches, and whether its model can run."""

    def __init__(
        self,
        repo: SessionRepository,
        org_settings: OrgDefaults,
        models: ModelCatalog | None = None,
        *,
        allowed: ModelPolicy | None = None,
    ) -> None:
        self.repo = repo
        self._org_settings = org_settings
        self._models = models
        self._choice = ModelChoice(allowed, models)

    def load(self, principal: Principal, session_id: str, action: Action) -> Session:
        require_tenant(principal)  # before the read: the operator learns no session ids
        return authorized(principal, self.repo.get(session_id), action, what="session")

    def switches(self, session: Session) -> dict[str, bool]:
        """The organization is read only for a switch not overridden."""
        org_memory: Mapping[str, Any] = {}
        if any(name not in session.overrides for name in SWITCHES):
            org_memory = self._org_settings.effective(session.org_id)["memory"]
        return effective_switches(org_memory, session.overrides)

    def check_model(self, name: str, org_id: str, path: list[str | int]) -> None:
        """A 400 at `path` unless `name` is allowed and runs here."""
        narrowed = self._org_settings.effective(org_id).get("allowedModels")
        self._choice.check(name, path, narrowed)

    def refused_model(self, name: str | None, org_id: str) -> str | None:
        """Why a run may not call the stored `name` under the organization's current
        `allowedModels`, in words; None when it may."""
        if name is None:
            return None
        return disallowed(name, self._org_settings.effective(org_id).get("allowedModels"))

    def missing_model(self, name: str | None) -> SkipReason | None:
        """Why `name` cannot run here; None when it can."""
        if name is None:
            return "noModel"
        if self._models is not None and self._models.resolve(name) is None:
            return "modelNotConfigured"
        return None


class SessionService:
    def __init__(
        self,
        access: SessionAccess,
        agents: AgentService,
        clock: Clock,
        ids: Ids,
        *,
        default_model: str | None,
        learning: Workflow | None = None,
        agent_learning: AgentLearning | None = None,
    ) -> None:
        self._access = access
        self._repo = access.repo
        self._agents = agents
        self._clock = clock
        self._ids = ids
        self._default_model = default_model
        self.learning = learning
        self.agent_learning = agent_learning

    def create(
        self,
        principal: Principal,
        agent_id: str,
        *,
        model: str | Default | None = Default.MODEL,
        kind: str = "chat",
    ) -> Session:
        """`model` None is a Session without a model; left out, the deployment's default."""
        owner, _org = person_of(principal, AGENTS_BELONG_TO_A_PERSON)
        if isinstance(model, str):
            parse_model_name(model, ["model"])
        agent = self._agents.usable(principal, agent_id)
        if isinstance(model, str):
            self._access.check_model(model, agent.org_id, ["model"])
        name = self._default_model if model is Default.MODEL else model
        session = new_session(self._ids.new("s_"), agent.org_id, agent.id, owner, kind, name)
        self._repo.create(session, self._clock.now_ms())
        return session

    def get(self, principal: Principal, session_id: str) -> Session:
        return self._access.load(principal, session_id, "read")

    def list_sessions(
        self, principal: Principal, agent_id: str, *, limit: int, starting_after: str | None
    ) -> tuple[list[Session], bool]:
        """Newest first (an organization admin sees everyone's); whether more follow."""
        user, org_id = person_of(principal, AGENTS_BELONG_TO_A_PERSON)
        agent = self._agents.usable(principal, agent_id)

        def visible(owner: str) -> bool:
            return owner == user or principal.administers(org_id)

        return self._repo.listed(agent.id, visible, limit=limit, after=starting_after)

    def items(
        self, principal: Principal, session_id: str, *, limit: int, starting_after: str | None
    ) -> tuple[list[SessionItem], bool]:
        after = 0
        if starting_after is not None:
            seq = item_seq(starting_after)
            if seq is None:
                raise ValidationFailed("an item id such as i-01", ["starting_after"])
            after = seq
        session = self._access.load(principal, session_id, "read")
        return self._repo.item_page(session, limit=limit, after=after)

    def turn(
        self,
        principal: Principal,
        session_id: str,
        items: Sequence[NewItem],
        *,
        model: str | None = None,
        expected: str | None = None,
        revision: int | None = None,
    ) -> TurnResult:
        """Append a completed Turn, then start learning; with `expected`/`revision` only to
        that state (409 otherwise), else retried until it lands."""
        check_turn(items)
        if model is not None:
            parse_model_name(model, ["model"])
        turn_id = self._ids.new("t_")

        def attempt() -> Session:
            session = self._access.load(principal, session_id, "change")
            if model is not None:
                self._access.check_model(model, session.org_id, ["model"])
            if (expected is not None and expected != session.head) or (
                revision is not None and revision != session.revision
            ):
                raise _changed()
            return self._append(session, items, model, turn_id)

        guarded = expected is not None or revision is not None
        after = once(attempt, _changed) if guarded else until_it_lands(attempt, _changed)
        skipped, agent_learning = self._after_turn(after, items, model)
        first = after.item_count - len(items) + 1
        ids = [item_id(seq) for seq in range(first, after.item_count + 1)]
        learning: LearningAnswer = "started" if skipped is None else "skipped"
        return TurnResult(after, turn_id, ids, learning, agent_learning, skipped)

    def _append(
        self, session: Session, items: Sequence[NewItem], model: str | None, turn_id: str
    ) -> Session:
        check_history(session.item_count, len(items), ["items"])
        after = session.with_items(len(items))
        now = self._clock.now_ms()
        adds = [
            ItemToAdd(session.item_count + n, i.role, i.content, i.app, model, turn_id)
            for n, i in enumerate(items, start=1)
        ]
        self._repo.write(
            [
                self._repo.head_change(session, after, now),
                *(self._repo.item_put(session, add, now) for add in adds),
            ]
        )
        return after

    def _after_turn(
        self, after: Session, items: Sequence[NewItem], model: str | None
    ) -> tuple[SkipReason | None, LearningAnswer]:
        """An outage here only skips learning: the next Turn learns these items."""
        try:
            generate = self._access.switches(after)["generate"]
        except Unavailable:
            return "unavailable", "skipped"
        skipped = self._learn(after, items, model, generate)
        if self.agent_learning is None:
            return skipped, "skipped"
        try:
            return skipped, self.agent_learning.after_turn(
                after, after.item_count, generate=generate
            )
        except Unavailable:
            return skipped, "skipped"

    def _learn(
        self, session: Session, items: Sequence[NewItem], model: str | None, generate: bool
    ) -> SkipReason | None:
        if only_runs_an_app_action(items):
            return "appOnly"
        if not generate:
            return "generateOff"
        missing = self._access.missing_model(model or session.model)
        if missing is not None:
            return missing
        if self.learning is None:
            return "workflowUnreachable"
        try:
            answer = self.learning.start(
                session_pool_ref(session), upto=session.item_count, reason="turn"
            )
        except Unavailable:
            return "workflowUnreachable"
        if answer == "started":
            return None
        # "skipped": no workflow here, or its service did not answer a turn's start.
        return "throttled" if answer == "throttled" else "workflowUnreachable"

    def fork(self, principal: Principal, session_id: str) -> Session:
        """A copy at its source's head; one racing a change of its source copies again."""
        fork_id = self._ids.new("s_")

        def attempt() -> Session:
            source = self._access.load(principal, session_id, "read")
            fork = forked(source, fork_id, principal.user_id or source.owner)
            also = self.agent_learning.fork_actions(source, fork) if self.agent_learning else ()
            self._repo.fork(source, fork, self._clock.now_ms(), also)
            return fork

        return until_it_lands(attempt, _changed)


def _changed() -> SessionConflict:
    return SessionConflict("the session changed since you read it")
