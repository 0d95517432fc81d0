"""Observational memory (seed 003, "The observer"): the observer and the reflector.

- In the background: `ObserveStep` is the thread step `thread-observe` of the learning
  workflow (service/thread_learning.py). A save starts a run only when the unobserved
  message tokens reach `bufferTokens` (or, with `bufferOnIdle`, when a turn ends): the run
  reads every message after the step's read position, asks the `observation` task once and
  keeps its answer as a *buffered* chunk of the log; when the active log has reached
  `reflection.bufferActivation` of `observationTokens`, the run asks the `reflection` task
  instead and keeps a buffered reflection.
- In the context request (`ObserverService.context`): buffered chunks replace raw history
  once the thresholds say so (domain/observation.py), the reflection in reserve replaces
  what it condensed, and the observer runs synchronously only past `blockAfter`, under a
  20 s deadline (after it: raw history). The activation that takes the active log past
  `reflection.bufferActivation` starts the background reflection at once (a run of its
  own), so it never waits for the next save.

Decisions: docs/decisions.md, "Observational memory".
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from agent_memory.domain import observation as rules
from agent_memory.domain import threads as thread_rules
from agent_memory.domain.errors import (
    ThreadConflict,
    Unavailable,
    ValidationFailed,
    WriteConflict,
)
from agent_memory.domain.observation import Chunk
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.memory_changes import EvidenceItem
from agent_memory.domain.tasks.observation import (
    OBSERVATION,
    Observation,
    ObservationInput,
    WorkingMemory,
)
from agent_memory.domain.tasks.observation import (
    Message as ObservedMessage,
)
from agent_memory.domain.tasks.reflection import REFLECTION, Reflection, ReflectionInput
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.observations import Log, ObservationRepository
from agent_memory.persistence.threads import THREAD_POSITION, StoredThread, ThreadRepository
from agent_memory.ports import Action, Clock, Delete, ModelCatalog, ModelFailure, Store, Update
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Evidence,
    FinishActions,
    Outcome,
    PoolKind,
    PoolRef,
)
from agent_memory.service.thread_learning import (
    Learning,
    Saved,
    StepDefaults,
    ThreadReader,
    thread_pool,
)

log = logging.getLogger(__name__)

OBSERVE_KIND: PoolKind = "thread-observe"
DEFAULT_OBSERVER_MODEL = "local/rules"
# The observer is shown the newest part of the log so far (it appends to it).
LOG_SHOWN_CHARS = 40_000
# Chunks changed in one transaction (DynamoDB: 100 actions with the head and the rest).
MAX_CHANGED = 80
# The raw history a context carries after the active observations (rows read at most).
MAX_RAW_MESSAGES = 1000
# The recall tool reads this many of the newest messages per thread, and of this many
# threads in resource scope.
RECALL_THREAD_MESSAGES = 1000
RECALL_THREADS = 20
RECALL_RESOURCE_MESSAGES = 200
DEFAULT_RECALL_LIMIT = 10
# Semantic recall's index answers at most this many per query (S3 Vectors' top-K bound).
MAX_VECTOR_K = 30


class Semantic(Protocol):
    """Semantic recall's query (service/recall.RecallService.recall)."""

    def recall(
        self,
        thread: Thread,
        seq: int,
        options: Mapping[str, Any],
        message: str | None,
        recent: Sequence[Message],
    ) -> list[dict[str, Any]]: ...


_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="observer")


def observer_model(om: Mapping[str, Any], platform: str | None) -> str:
    """`observation.model`, else the top-level `model`, else OBSERVER_MODEL, else
    local/rules."""
    return str(om["observation"]["model"] or om["model"] or platform or DEFAULT_OBSERVER_MODEL)


def reflector_model(om: Mapping[str, Any], platform: str | None) -> str:
    """`reflection.model` (which follows `observation.model`), else the top-level `model`,
    else OBSERVER_MODEL, else local/rules."""
    return str(om["reflection"]["model"] or om["model"] or platform or DEFAULT_OBSERVER_MODEL)


def _observing(options: Mapping[str, Any]) -> bool:
    return bool(options["observationalMemory"]["enabled"]) and not options["readOnly"]


def _thresholds(options: Mapping[str, Any], platform: str | None) -> rules.Thresholds:
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
        if not _observing(saved.options):
            return False
        t = _thresholds(saved.options, self._observer.platform_model)
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
        if found is None or not _observing(found[1]):
            return None
        stored, options = found
        thread, om = stored.thread, options["observationalMemory"]
        log_ = self._observer.logs.log(thread)
        platform = self._observer.platform_model
        t = _thresholds(options, platform)
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
                model=reflector_model(om, platform),
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
        if found is None or not _observing(found[1]):
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


class ObserverService:
    """The observer on the request path: the context's observations, the log's view, and
    the recall tool."""

    def __init__(
        self,
        observer: Observer,
        *,
        block_deadline_s: float = rules.BLOCK_DEADLINE_S,
        learning: Learning | None = None,
    ) -> None:
        self._observer = observer
        self._threads = observer.threads
        self._logs = observer.logs
        # API.md: the synchronous observation has 20 s (a test passes less).
        self.block_deadline_s = block_deadline_s
        # Starts the background reflection an activation makes due (None: the next save's).
        self._learning = learning

    # -- the turn context ------------------------------------------------------------------

    def context(self, stored: StoredThread, options: Mapping[str, Any]) -> dict[str, Any]:
        """`messages`, `observations`, the observer's system part and its tools, for a
        thread whose version has the observer on."""
        om = options["observationalMemory"]
        platform = self._observer.platform_model
        t = _thresholds(options, platform)
        started = time.monotonic()
        thread = stored.thread
        log_ = self._logs.log(thread)
        writable = not options["readOnly"]
        blocked = writable and rules.must_block(thread.tokens - thread.observed_tokens, t)
        if blocked and self._observe_now(stored, options, log_, t, started):
            again = self._threads.get(thread.id)
            if again is not None:
                stored, thread = again, again.thread
            log_ = self._logs.log(thread)
        # The newest 1,000 after the active observations (numbers are never reused).
        start = max(log_.head.active, stored.seq - MAX_RAW_MESSAGES)
        raw = self._threads.numbered(thread, start, stored.seq, MAX_RAW_MESSAGES)
        last = raw[-1][1] if raw else next(iter(self._threads.latest(thread, 1)), None)
        if writable:
            log_ = self._activate(thread, options, log_, last, t, started, stored.seq)
        shown = [m for seq, m in raw if seq >= log_.head.active]
        messages = thread_rules.newest_within(shown, thread_rules.CONTEXT_MESSAGES_BUDGET)
        active = log_.active
        text = rules.render(active, self._logs.texts(thread, log_, active)) if active else ""
        retrieval = om["retrieval"]
        return {
            "messages": messages,
            "observations": text or None,
            "recall": bool(retrieval["enabled"]),
            "tools": [rules.recall_tool(retrieval["instructions"])] if retrieval["enabled"] else [],
        }

    def _remaining(self, started: float) -> float:
        return self.block_deadline_s - (time.monotonic() - started)

    def _observe_now(
        self,
        stored: StoredThread,
        options: Mapping[str, Any],
        log_: Log,
        t: rules.Thresholds,
        started: float,
    ) -> bool:
        """`blockAfter`: observe the unobserved messages now, within the deadline, but the
        newest that the activation share leaves raw. False when the model fails or is late
        (the context answers raw history)."""
        thread = stored.thread
        om = options["observationalMemory"]
        position = self._threads.position(thread.id, OBSERVE_KIND)
        read = self._threads.numbered(thread, position, stored.seq, MAX_RAW_MESSAGES)
        if len(read) == MAX_RAW_MESSAGES:
            upto = read[-1][0] + 1
        else:
            kept = rules.kept_raw([m.content for _seq, m in read], t)
            read = read[: len(read) - kept] if kept < len(read) else read
            upto = read[-1][0] + 1 if kept else stored.seq
        if not read:
            return False
        messages = [m for _seq, m in read]
        asked = self._observer.observation_input(thread, options, log_, messages)
        model = observer_model(om, self._observer.platform_model)
        try:
            answer = self._observer.ask(model, Ask(OBSERVATION, asked), self._remaining(started))
        except (ModelFailure, InvalidModelOutput, TimeoutError) as error:
            log.warning("the synchronous observation failed: %s", type(error).__name__)
            return False
        observed = Observed(
            position, upto, observed_upto(stored, thread.observed_tokens, upto, messages), answer
        )
        actions, _outcome = self._observer.observation_actions(thread, options, log_, observed)
        advance = self._threads.advance(
            thread.id, OBSERVE_KIND, position, upto, self._observer.clock.now_ms()
        )
        try:
            self._observer.store.write([*actions, advance])
        except WriteConflict:
            # The background run observed them first: its chunk is as good.
            return True
        return True

    def _activate(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        log_: Log,
        last: Message | None,
        t: rules.Thresholds,
        started: float,
        seq: int,
    ) -> Log:
        """Buffered observations replace raw history past the threshold (or when idle);
        the reflection in reserve replaces what it condensed past its own; past
        `reflection.blockAfter` the reflector runs now. The write that takes the active
        log past its reflection share starts the background reflection at once. Answers
        the log as it now is."""
        now = self._observer.clock.now_ms()
        at = last.created_at if last is not None else None
        head = log_.head
        chunks = {c.n: c for c in log_.chunks}
        buffered = log_.of("observation", "buffered")
        raw = thread.tokens - head.active_tokens
        quiet = rules.idle(at, now, t.idle_ms)
        count = min(
            rules.activate_count(buffered, raw, head.active_tokens, t, quiet=quiet), MAX_CHANGED
        )
        actions: list[Action] = []
        after = head
        for chunk in buffered[:count]:
            chunks[chunk.n] = replace(chunk, status="active")
            actions.append(self._logs.set_status(thread, chunk, "active"))
        if count:
            last_active = buffered[count - 1]
            after = replace(after, active=last_active.upto, active_tokens=last_active.upto_tokens)
        active = [c for c in chunks.values() if c.status == "active"]
        active_log = rules.log_tokens(active)
        reserve = next(
            (c for c in log_.chunks if c.kind == "reflection" and c.status == "buffered"), None
        )
        reserved = reserve is not None
        quiet_log = rules.idle(at, now, t.reflect_idle_ms)
        if reserve is not None and rules.activates_reflection(active_log, t, quiet=quiet_log):
            for n in range(reserve.first, reserve.upto):
                if n in chunks and chunks[n].status == "active" and len(actions) < MAX_CHANGED:
                    actions.append(self._logs.remove(thread, chunks.pop(n)))
            chunks[reserve.n] = replace(reserve, status="active")
            actions.append(self._logs.set_status(thread, reserve, "active"))
            after = replace(after, reflections=after.reflections + 1)
            reserved = False
        elif reserve is None and rules.must_reflect(active_log, t):
            reflected = self._reflect_now(thread, options, log_, active, started)
            if reflected is not None:
                chunk, text = reflected
                for c in active[:MAX_CHANGED]:
                    if c.n >= chunk.first and c.n < chunk.upto:
                        actions.append(self._logs.remove(thread, chunks.pop(c.n)))
                chunks[chunk.n] = chunk
                actions += self._logs.add_chunk(thread, chunk, text)
                after = replace(after, next=after.next + 1, reflections=after.reflections + 1)
        if not actions:
            return log_
        actions.append(self._logs.head_action(thread, head, after, now))
        # A chunk activated and condensed in the same call is only deleted.
        gone = {(a.pk, a.sk) for a in actions if isinstance(a, Delete)}
        actions = [a for a in actions if not (isinstance(a, Update) and (a.pk, a.sk) in gone)]
        try:
            self._observer.store.write(actions)
        except WriteConflict:
            # Another request or run changed the log first: answer with the log as it is.
            return self._logs.log(thread)
        now_active = [c for c in chunks.values() if c.status == "active"]
        if rules.passes_reflection_share(log_.active, reserve is not None, now_active, reserved, t):
            self._reflect_soon(thread, seq)
        return self._logs.log(thread)

    def _reflect_soon(self, thread: Thread, seq: int) -> None:
        """Start the background reflection now (a run of the observer's pool: its evidence
        is the reflection while the log wants one). Not started, the next save's run
        reflects."""
        if self._learning is None:
            return
        try:
            self._learning.start(thread_pool(OBSERVE_KIND, thread), upto=seq, reason="reflect")
        except Unavailable:
            log.warning("the background reflection was not started; the next save starts it")

    def _reflect_now(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        log_: Log,
        active: Sequence[Chunk],
        started: float,
    ) -> tuple[Chunk, str] | None:
        """`reflection.blockAfter`: condense the active log now, within the deadline."""
        om = options["observationalMemory"]
        condensed = sorted(active, key=lambda c: c.n)[:MAX_CHANGED]
        if len(condensed) < rules.MIN_REFLECTED_CHUNKS:
            return None
        texts = self._logs.texts(thread, log_, condensed)
        asked = ReflectionInput(rules.render(condensed, texts), om["reflection"]["instruction"])
        model = reflector_model(om, self._observer.platform_model)
        try:
            answer: Reflection = self._observer.ask(
                model, Ask(REFLECTION, asked), self._remaining(started)
            )
        except (ModelFailure, InvalidModelOutput, TimeoutError) as error:
            log.warning("the synchronous reflection failed: %s", type(error).__name__)
            return None
        text = answer.observations.strip()
        chunk = replace(self._observer.reflection_chunk(log_, condensed, text), status="active")
        return chunk, text

    # -- the log and recall ----------------------------------------------------------------

    def observations(self, thread: Thread) -> dict[str, Any]:
        """`GET .../observations`: every observation made (buffered or active) after the
        active reflection, its tokens, and how many reflections condensed it."""
        log_ = self._logs.log(thread)
        shown = log_.shown
        text = rules.render(shown, self._logs.texts(thread, log_, shown))
        return {
            "log": text,
            "tokens": rules.count_tokens(text),
            "reflections": log_.head.reflections,
        }

    def recall(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        query: str,
        limit: int | None,
        *,
        semantic: Semantic | None = None,
        seq: int = 0,
    ) -> list[dict[str, Any]]:
        """`POST .../recall`: the user's messages that best match `query` (Okapi BM25 over
        the newest messages of this thread, or of the user's threads with this agent in
        resource scope), best first. With `retrieval.vector` and semantic recall's index
        (messages are embedded while `semanticRecall` is on), its nearest messages join by
        reciprocal rank fusion. 409 when the version's retrieval is off."""
        retrieval = options["observationalMemory"]["retrieval"]
        if not (options["observationalMemory"]["enabled"] and retrieval["enabled"]):
            raise ThreadConflict("recall needs observationalMemory.retrieval on")
        wanted = max(1, min(limit or DEFAULT_RECALL_LIMIT, rules.RECALL_MAX))
        found: list[tuple[Thread, Message]] = []
        if retrieval["scope"] == "thread":
            found = [(thread, m) for m in self._threads.latest(thread, RECALL_THREAD_MESSAGES)]
        else:
            page = self._threads.of_user(thread.resource_id, thread.agent_id, RECALL_THREADS)
            for other in page.threads:
                # The list is the user's own: never another user's thread.
                if other.resource_id != thread.resource_id:
                    continue
                count = (
                    RECALL_THREAD_MESSAGES if other.id == thread.id else RECALL_RESOURCE_MESSAGES
                )
                found += [(other, m) for m in self._threads.latest(other, count)]
        ranked = rules.lexical_rank(query, [m.content for _t, m in found])[:wanted]
        lexical = [
            {**found[i][1].view(), "threadId": found[i][0].id, "score": round(score, 4)}
            for i, score in ranked
        ]
        if not (retrieval["vector"] and semantic is not None):
            return lexical
        nearest = self._nearest(thread, options, query, wanted, semantic, seq)
        return rules.fuse([lexical, nearest])[:wanted] if nearest else lexical

    @staticmethod
    def _nearest(
        thread: Thread,
        options: Mapping[str, Any],
        query: str,
        wanted: int,
        semantic: Semantic,
        seq: int,
    ) -> list[dict[str, Any]]:
        """Semantic recall's nearest messages to `query` (no range around them), in the
        retrieval's scope; none while `semanticRecall` is off (nothing is embedded)."""
        recall = options["semanticRecall"]
        if not recall["enabled"]:
            return []
        scope = options["observationalMemory"]["retrieval"]["scope"]
        asked = {
            **options,
            "semanticRecall": {
                **recall,
                "topK": min(wanted, MAX_VECTOR_K),
                "messageRange": {"before": 0, "after": 0},
                "scope": scope,
            },
        }
        windows = semantic.recall(thread, seq, asked, query, ())
        return [
            {**message, "threadId": window["threadId"], "score": float(window["score"])}
            for window in windows
            for message in window["messages"]
        ]
