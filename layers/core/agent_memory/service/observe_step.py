"""The background observer and reflector: the thread step `thread-observe`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from agent_memory.domain import observation as rules
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.observation import (
    OBSERVATION,
    ObservationInput,
    Reflection,
    WorkingMemory,
)
from agent_memory.domain.threads import Thread
from agent_memory.persistence.observations import Log
from agent_memory.persistence.threads import StoredThread
from agent_memory.ports import Action
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolRef,
)
from agent_memory.service.observer import (
    OBSERVE_KIND,
    Observed,
    Observer,
    observer_model,
    reflection_ask,
)
from agent_memory.service.thread_learning import Saved, ThreadReader, ThreadStep


@dataclass(frozen=True)
class ObservationDetail:
    """What the task is asked (its messages are the evidence's items), and the observed
    tokens after them."""

    asked: ObservationInput
    observed_tokens: int
    phase: Literal["observation"] = "observation"


@dataclass(frozen=True)
class ReflectionDetail:
    instructions: str | None
    chunks: tuple[int, ...]
    phase: Literal["reflection"] = "reflection"


ObserveDetail = ObservationDetail | ReflectionDetail


class ObserveStep(ThreadStep):
    kind = OBSERVE_KIND

    def __init__(
        self, reader: ThreadReader, observer: Observer, riders: tuple[ThreadStep, ...] = ()
    ) -> None:
        self._reader = reader
        self._observer = observer
        self.store = observer.store
        self.riders = riders

    def wanted(self, saved: Saved) -> bool:
        """Unobserved tokens reached `bufferTokens`, or a turn ended with `bufferOnIdle`."""
        if not rules.observing(saved.options):
            return False
        t = rules.thresholds(saved.options["observationalMemory"])
        batch = rules.total_message_tokens([m.content for m in saved.messages])
        pending = saved.thread.tokens + batch - saved.thread.observed_tokens
        return rules.wants_observation(pending, t, turn_ended=saved.turn_ended)

    def detail_of(self, data: Any) -> ObserveDetail:
        if data["phase"] == "reflection":
            return ReflectionDetail(data["instructions"], tuple(data["chunks"]))
        fields, memory = data["asked"], data["asked"]["working_memory"]
        working = WorkingMemory(**memory) if memory else None
        asked = ObservationInput(**{**fields, "messages": (), "working_memory": working})
        return ObservationDetail(asked, data["observed_tokens"])

    def task(self, evidence: Evidence[ObserveDetail]) -> Ask[Any, Any]:
        detail = evidence.detail
        if isinstance(detail, ReflectionDetail):
            return reflection_ask(evidence.items, detail.instructions)
        return Ask(OBSERVATION, replace(detail.asked, messages=tuple(evidence.items)))

    def read_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """A reflection when due and none waits in reserve, else the unread messages."""
        found = self._reader.thread(pool)
        if found is None or not rules.observing(found[1]):
            return None
        stored, options = found
        log_ = self._observer.logs.log(stored.thread)
        t = rules.thresholds(options["observationalMemory"])
        if rules.wants_reflection(log_.active, bool(log_.of("reflection", "buffered")), t):
            return self._reflection_evidence(pool, stored.thread, options, log_)
        return self._observation_evidence(pool, stored, options, log_, upto)

    def _reflection_evidence(
        self, pool: PoolRef, thread: Thread, options: Mapping[str, Any], log_: Log
    ) -> Evidence[Any]:
        om = options["observationalMemory"]
        condensed, items = self._observer.reflecting(thread, log_, log_.active)
        position = self._reader.repo.position(thread.id, self.kind)
        return Evidence(
            pool=pool,
            position=position,
            upto=position,
            items=items,
            memory=(),
            model=observer_model(om, self._observer.platform_model, "reflection"),
            allowed_kinds=(),
            detail=ReflectionDetail(om["reflection"]["instruction"], tuple(c.n for c in condensed)),
        )

    def _observation_evidence(
        self,
        pool: PoolRef,
        stored: StoredThread,
        options: Mapping[str, Any],
        log_: Log,
        upto: int | None,
    ) -> Evidence[Any] | None:
        batch = self._reader.load(pool, upto)
        if batch is None or not batch.messages:
            return None
        read = batch.messages
        asked, tokens = self._observer.observation_input(stored, options, log_, read, batch.upto)
        return batch.evidence(
            pool,
            observer_model(options["observationalMemory"], self._observer.platform_model),
            ObservationDetail(replace(asked, messages=()), tokens),
        )

    def change(self, evidence: Evidence[Any], changes: Any, finish: FinishActions) -> Change:
        """AlreadyApplied when the thread or observer is gone."""
        stored, options = self._reader.current(evidence.pool)
        if not rules.observing(options):
            raise AlreadyApplied("the thread's observer is off")
        thread = stored.thread
        log_ = self._observer.logs.log(thread)
        detail = evidence.detail
        if isinstance(detail, ReflectionDetail):
            actions, outcome = self._reflection(thread, log_, detail, changes)
        else:
            observed = Observed(evidence.position, evidence.upto, detail.observed_tokens, changes)
            actions, outcome = self._observer.observation_actions(thread, options, log_, observed)
        return self._reader.change(evidence, actions, outcome, finish)

    def _reflection(
        self, thread: Thread, log_: Log, detail: ReflectionDetail, changes: Reflection
    ) -> tuple[list[Action], Outcome]:
        wanted = set(detail.chunks)
        condensed = [c for c in log_.active if c.n in wanted]
        if len(condensed) != len(wanted) or log_.of("reflection", "buffered"):
            raise AlreadyApplied("the log changed: the reflection is no longer needed")
        chunk, added = self._observer.reflection(thread, log_, condensed, changes)
        now = self._observer.clock.now_ms()
        after = replace(log_.head, next=log_.head.next + 1)
        actions = [*added, self._observer.logs.head_action(thread, log_.head, after, now)]
        return actions, Outcome(
            applied=[{"key": f"reflection:{chunk.n}", "op": "reflect"}], rejected=[]
        )
