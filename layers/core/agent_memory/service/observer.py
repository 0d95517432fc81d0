"""Observational memory (seed 003, "The observer") in the background: `ObserveStep` is the
thread step `thread-observe`. A save starts a run only when the unobserved message tokens
reach `bufferTokens` (or, with `bufferOnIdle`, when a turn ends): the run asks the
`observation` task once for every message after the step's read position and keeps its
answer as a *buffered* chunk of the log; when the active log has reached
`reflection.bufferActivation` of `observationTokens`, the run asks the `reflection` task
instead and keeps a buffered reflection. `Observer` is what this step and the request path
(service/observer_context.py) share. Decisions: docs/decisions.md, "Observational memory".
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent_memory.domain import observation as rules
from agent_memory.domain import threads as thread_rules
from agent_memory.domain.errors import ValidationFailed, WriteConflict
from agent_memory.domain.observation import Chunk
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.memory_changes import EvidenceItem
from agent_memory.domain.tasks.observation import (
    OBSERVATION,
    Observation,
    ObservationInput,
    WorkingMemory,
)
from agent_memory.domain.tasks.observation import Message as ObservedMessage
from agent_memory.domain.tasks.reflection import REFLECTION, Reflection, ReflectionInput
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.observations import Log, ObservationRepository
from agent_memory.persistence.threads import THREAD_POSITION, StoredThread, ThreadRepository
from agent_memory.ports import Action, Clock, ModelCatalog, ModelFailure, Store, Update
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Evidence,
    FinishActions,
    Outcome,
    PoolKind,
    PoolRef,
)
from agent_memory.service.thread_learning import Saved, StepDefaults, ThreadReader

log = logging.getLogger(__name__)

OBSERVE_KIND: PoolKind = "thread-observe"
DEFAULT_OBSERVER_MODEL = "local/rules"
# The observer is shown the newest part of the log so far (it appends to it).
LOG_SHOWN_CHARS = 40_000
# Chunks changed in one transaction (DynamoDB: 100 actions with the head and the rest).
MAX_CHANGED = 80

_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="observer")


def observer_model(om: Mapping[str, Any], platform: str | None, phase: str = "observation") -> str:
    """The phase's own model (`reflection.model` follows `observation.model`), else the
    top-level `model`, else OBSERVER_MODEL, else local/rules."""
    return str(om[phase]["model"] or om["model"] or platform or DEFAULT_OBSERVER_MODEL)


def thresholds(options: Mapping[str, Any], platform: str | None) -> rules.Thresholds:
    om = options["observationalMemory"]
    return rules.thresholds(om, observer_model(om, platform))


@dataclass(frozen=True)
class Observed:
    """One observation ready to commit: the messages numbered `position <= seq < upto`."""

    position: int
    upto: int
    observed_tokens: int
    answer: Observation


class Observer:
    """What the background step and the synchronous path share: the observation input,
    and the rows an answer writes."""

    def __init__(
        self,
        threads: ThreadRepository,
        logs: ObservationRepository,
        store: Store,
        clock: Clock,
        models: ModelCatalog,
        platform_model: str | None = None,
    ) -> None:
        self.threads = threads
        self.logs = logs
        self.store = store
        self.clock = clock
        self.models = models
        self.platform_model = platform_model

    # -- what the observer is shown --------------------------------------------------------

    def working_memory(self, thread: Thread, options: Mapping[str, Any]) -> WorkingMemory | None:
        """The notes as the observer may rewrite them (`manageWorkingMemory`), else None."""
        om, working = options["observationalMemory"], options["workingMemory"]
        if not (om["observation"]["manageWorkingMemory"] and working["enabled"]):
            return None
        text = self.threads.working_memory(thread, working["scope"])
        return WorkingMemory(
            format="json" if working["schema"] is not None else "markdown",
            content=thread_rules.working_memory_content(text, options),
            template=working["template"],
            schema=working["schema"],
        )

    def shown_log(self, thread: Thread, log: Log) -> str | None:
        shown = log.shown
        text = rules.render(shown, self.logs.texts(thread, log, shown))
        return text[-LOG_SHOWN_CHARS:] if text else None

    def observation_input(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        log: Log,
        messages: Sequence[Message],
    ) -> ObservationInput:
        obs = options["observationalMemory"]["observation"]
        return ObservationInput(
            messages=tuple(ObservedMessage(m.id, m.role, m.content) for m in messages),
            observations=self.shown_log(thread, log),
            # Shown its own previous title: until its first, it names the thread anew.
            title=thread.title if log.head.titled else None,
            thread_title=bool(obs["threadTitle"]),
            working_memory=self.working_memory(thread, options),
            instruction=obs["instruction"],
        )

    # -- what an answer writes -------------------------------------------------------------

    def observation_actions(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        log: Log,
        observed: Observed,
    ) -> tuple[list[Action], Outcome]:
        """The buffered chunk, the head, the thread's observed tokens, and the title and
        working memory when the observer changed them (a working memory that breaks the
        version's schema is refused, with its reason)."""
        now = self.clock.now_ms()
        answer, head = observed.answer, log.head
        obs = options["observationalMemory"]["observation"]
        applied: list[dict[str, str]] = []
        rejected: list[dict[str, Any]] = []
        actions: list[Action] = []
        after = replace(head, next=head.next + 1)
        text = answer.observations.strip()
        if text:
            chunk = Chunk(
                n=head.next,
                kind="observation",
                status="buffered",
                first=observed.position,
                upto=observed.upto,
                tokens=rules.count_tokens(text),
                upto_tokens=observed.observed_tokens,
                at=now,
            )
            actions += self.logs.add_chunk(thread, chunk, text)
            applied.append({"key": f"observation:{chunk.n}", "op": "observe"})
        if obs["threadTitle"] and answer.title is not None:
            title = " ".join(answer.title.split())[:100]
            if title != thread.title:
                actions += self.threads.title_actions(thread, title, now)
                applied.append({"key": "title", "op": "title"})
            after = replace(after, titled=True)
        if answer.workingMemory is not None and self.working_memory(thread, options) is not None:
            try:
                notes = thread_rules.check_working_memory(answer.workingMemory, options)
            except ValidationFailed as error:
                # The refused notes are content, and a schema's message may quote them: the
                # record names what was refused and where, not its words.
                where = "/".join(str(p) for p in error.path)
                reason = f"the working memory does not fit this agent's options (at {where})"
                rejected.append({"change": {"op": "workingMemory"}, "reason": reason})
            else:
                scope = options["workingMemory"]["scope"]
                actions += self.threads.working_memory_actions(
                    thread, scope, notes, now, by="observer"
                )
                applied.append({"key": "workingMemory", "op": "update"})
        actions.append(self.logs.head_action(thread, head, after, now))
        actions.append(self.logs.observed_tokens(thread, observed.observed_tokens))
        return merged(actions), Outcome(applied=applied, rejected=rejected)

    def reflection_chunk(self, log: Log, condensed: Sequence[Chunk], text: str) -> Chunk:
        return Chunk(
            n=log.head.next,
            kind="reflection",
            status="buffered",
            first=condensed[0].n,
            upto=condensed[-1].n + 1,
            tokens=rules.count_tokens(text),
            at=self.clock.now_ms(),
        )

    def ask(self, model_name: str, request_ask: Ask[Any, Any], deadline_s: float) -> Any:
        """One call of `model_name` for the task, parsed; raises ModelFailure, a parse
        error, or TimeoutError past `deadline_s` (the call is left to finish alone)."""
        model = self.models.resolve(model_name)
        if model is None:
            raise ModelFailure(
                "unavailable", f"no model named {model_name!r} is configured", retryable=False
            )
        request = request_ask.request(max(0.1, deadline_s))
        future = _POOL.submit(model.propose, request)
        reply = future.result(timeout=max(0.01, deadline_s))
        return request_ask.parse(reply.text)


def merged(actions: Sequence[Action]) -> list[Action]:
    """Updates of one row as one (a title and the observed tokens both set the thread's
    row; a transaction touches a row once). The first update's condition stands."""
    out: list[Action] = []
    at: dict[tuple[str, str], int] = {}
    for action in actions:
        if isinstance(action, Update):
            key = (action.pk, action.sk)
            if key in at:
                first = out[at[key]]
                assert isinstance(first, Update)
                out[at[key]] = replace(
                    first,
                    set={**first.set, **action.set},
                    add={**first.add, **action.add},
                    condition=first.condition or action.condition,
                )
                continue
            at[key] = len(out)
        out.append(action)
    return out


def observed_upto(
    stored: StoredThread, observed_from: int, upto: int, messages: Sequence[Message]
) -> int:
    """The thread's message tokens through `upto`: exact (the thread's own count) when the
    batch reaches the newest message, else the tokens before it plus the batch's."""
    if upto >= stored.seq:
        return stored.thread.tokens
    return observed_from + rules.total_message_tokens([m.content for m in messages])


class ObserveStep(StepDefaults):
    """The background observer and reflector: the `thread-observe` learning pool."""

    kind: PoolKind = OBSERVE_KIND

    def __init__(self, reader: ThreadReader, observer: Observer) -> None:
        self._reader = reader
        self._observer = observer

    def wanted(self, saved: Saved) -> bool:
        """Unobserved message tokens reached `bufferTokens`, or a turn ended with
        `bufferOnIdle` (no I/O: the thread's own token counts)."""
        if not rules.observing(saved.options):
            return False
        t = thresholds(saved.options, self._observer.platform_model)
        batch = rules.total_message_tokens([m.content for m in saved.messages])
        pending = saved.thread.tokens + batch - saved.thread.observed_tokens
        ended = any(m.role == "assistant" for m in saved.messages)
        return rules.wants_observation(pending, t, turn_ended=ended)

    def task(self, evidence: Evidence) -> Ask[Any, Any]:
        extra = evidence.extra
        if extra["phase"] == "reflection":
            texts = "\n".join(item.content for item in evidence.items)
            return Ask(REFLECTION, ReflectionInput(texts, extra.get("instruction")))
        memory = extra.get("workingMemory")
        return Ask(
            OBSERVATION,
            ObservationInput(
                messages=tuple(ObservedMessage(i.id, i.role, i.content) for i in evidence.items),
                observations=extra.get("log"),
                title=extra.get("title"),
                thread_title=bool(extra.get("threadTitle")),
                working_memory=WorkingMemory(**memory) if memory is not None else None,
                instruction=extra.get("instruction"),
            ),
        )

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None:
        """A reflection when the active log reached its share and none waits in reserve;
        else the messages after the read position. None when the observer is off."""
        found = self._reader.thread(pool)
        if found is None or not rules.observing(found[1]):
            return None
        stored, options = found
        thread, om = stored.thread, options["observationalMemory"]
        log_ = self._observer.logs.log(thread)
        platform = self._observer.platform_model
        t = thresholds(options, platform)
        reserve = bool(log_.of("reflection", "buffered"))
        if rules.wants_reflection(log_.active, reserve, t):
            condensed = log_.active[:MAX_CHANGED]
            texts = self._observer.logs.texts(thread, log_, condensed)
            position = self._reader.repo.position(thread.id, self.kind)
            return Evidence(
                pool=pool,
                position=position,
                upto=position,
                items=tuple(EvidenceItem(str(c.n), c.kind, texts[c.n]) for c in condensed),
                memory=(),
                model=observer_model(om, platform, "reflection"),
                allowed_kinds=(),
                extra={
                    "phase": "reflection",
                    "instruction": om["reflection"]["instruction"],
                    "chunks": [c.n for c in condensed],
                },
            )
        batch = self._reader.load(pool, upto)
        if batch is None or not batch.messages:
            return None
        messages = [m for _seq, m in batch.messages]
        asked = self._observer.observation_input(thread, options, log_, messages)
        memory = asked.working_memory
        return Evidence(
            pool=pool,
            position=batch.position,
            upto=batch.upto,
            items=batch.items(),
            memory=(),
            model=observer_model(om, platform),
            allowed_kinds=(),
            extra={
                "phase": "observation",
                "log": asked.observations,
                "title": asked.title,
                "threadTitle": asked.thread_title,
                "instruction": asked.instruction,
                "workingMemory": None
                if memory is None
                else {
                    "format": memory.format,
                    "content": memory.content,
                    "template": memory.template,
                    "schema": memory.schema,
                },
                "observedTokens": observed_upto(
                    stored, thread.observed_tokens, batch.upto, messages
                ),
            },
        )

    def apply(self, evidence: Evidence, changes: Any, finish: FinishActions) -> Outcome:
        """Keep the answer as a buffered chunk (or reflection), move the read position and
        end the execution in one write; AlreadyApplied when another run moved it first."""
        found = self._reader.thread(evidence.pool)
        if found is None or not rules.observing(found[1]):
            raise AlreadyApplied("the thread is gone or its observer is off")
        stored, options = found
        thread = stored.thread
        log_ = self._observer.logs.log(thread)
        advance = self._reader.advance(thread.id, self.kind, evidence.position, evidence.upto)
        if evidence.extra["phase"] == "reflection":
            actions, outcome = self._reflection(thread, log_, evidence, changes)
        else:
            observed = Observed(
                evidence.position,
                evidence.upto,
                int(evidence.extra["observedTokens"]),
                changes,
            )
            actions, outcome = self._observer.observation_actions(thread, options, log_, observed)
        try:
            self._observer.store.write([*actions, advance, *finish(outcome)])
        except WriteConflict as error:
            if error.condition == THREAD_POSITION:
                raise AlreadyApplied("another run observed these messages") from error
            raise
        return outcome

    def _reflection(
        self, thread: Thread, log_: Log, evidence: Evidence, changes: Reflection
    ) -> tuple[list[Action], Outcome]:
        wanted = {int(n) for n in evidence.extra["chunks"]}
        condensed = [c for c in log_.active if c.n in wanted]
        if len(condensed) != len(wanted) or log_.of("reflection", "buffered"):
            raise AlreadyApplied("the log changed: the reflection is no longer needed")
        text = changes.observations.strip()
        chunk = self._observer.reflection_chunk(log_, condensed, text)
        now = self._observer.clock.now_ms()
        after = replace(log_.head, next=log_.head.next + 1)
        actions = [
            *self._observer.logs.add_chunk(thread, chunk, text),
            self._observer.logs.head_action(thread, log_.head, after, now),
        ]
        return actions, Outcome(
            applied=[{"key": f"reflection:{chunk.n}", "op": "reflect"}], rejected=[]
        )
