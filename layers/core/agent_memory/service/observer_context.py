"""The observer on the request path; it runs synchronously only past `blockAfter`."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.domain import observation as rules
from agent_memory.domain import threads as thread_rules
from agent_memory.domain.bounds import RECALL_MAX
from agent_memory.domain.errors import ThreadConflict, Unavailable, WriteConflict
from agent_memory.domain.memory_options import MAX_TOP_K
from agent_memory.domain.observation import Chunk, ShownLog
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.observation import OBSERVATION
from agent_memory.domain.threads import Found, Message, Thread
from agent_memory.persistence.observations import Head, Log
from agent_memory.persistence.threads import StoredThread
from agent_memory.ports import Action, ModelFailure
from agent_memory.service.learning_pools import Workflow
from agent_memory.service.observer import (
    MAX_CHANGED,
    OBSERVE_KIND,
    Observed,
    Observer,
    merged,
    observer_model,
    reflection_ask,
)
from agent_memory.service.recall import RecallService
from agent_memory.service.thread_learning import thread_pool

log = logging.getLogger(__name__)

MAX_RAW_MESSAGES = 1000
# Newest messages per thread, and threads in resource scope, the recall tool reads.
RECALL_THREAD_MESSAGES = 1000
RECALL_THREADS = 20
RECALL_RESOURCE_MESSAGES = 200
DEFAULT_RECALL_LIMIT = 10
_FAILED = (ModelFailure, InvalidModelOutput, TimeoutError)
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="observer")


@dataclass(frozen=True)
class ObservedContext:
    messages: list[Message]
    observations: str | None
    recall: bool
    tools: list[dict[str, Any]]


@dataclass
class _LogChange:
    """How one context request changes the log: its chunks, the head after, the writes."""

    chunks: dict[int, Chunk]
    after: Head
    actions: list[Action] = field(default_factory=list)

    @property
    def active(self) -> list[Chunk]:
        return [c for c in self.chunks.values() if c.status == "active"]


class ObserverService:
    def __init__(self, observer: Observer, learning: Workflow) -> None:
        self._observer = observer
        self._threads = observer.threads
        self._logs = observer.logs
        self.block_deadline_s = rules.BLOCK_DEADLINE_S
        self._learning = learning

    def context(self, stored: StoredThread, options: Mapping[str, Any]) -> ObservedContext:
        """The messages after the active observations, the observations, and the recall tool."""
        t = rules.thresholds(options["observationalMemory"])
        started = time.monotonic()
        thread = stored.thread
        log_ = self._logs.log(thread)
        writable = not options["readOnly"]
        blocked = writable and rules.must_block(thread.tokens - thread.observed_tokens, t)
        if blocked and self._observe_now(stored, options, log_, t, started):
            stored = self._threads.get(thread.id) or stored
            thread = stored.thread
            log_ = self._logs.log(thread)
        # The newest 1,000 after the active observations (numbers are never reused).
        start = max(log_.head.active, stored.seq - MAX_RAW_MESSAGES)
        raw = self._threads.numbered(thread, start, stored.seq, MAX_RAW_MESSAGES)
        last = raw[-1][1] if raw else next(iter(self._threads.latest(thread, 1)), None)
        if writable:
            log_ = self._activate(thread, options, log_, last, t, started, stored.seq)
        shown = [m for seq, m in raw if seq >= log_.head.active]
        active = log_.active
        text = self._observer.rendered(thread, log_, active) if active else ""
        retrieval = options["observationalMemory"]["retrieval"]
        return ObservedContext(
            messages=thread_rules.newest_within(shown, thread_rules.CONTEXT_MESSAGES_BUDGET),
            observations=text or None,
            recall=bool(retrieval["enabled"]),
            tools=[rules.recall_tool(retrieval["instructions"])] if retrieval["enabled"] else [],
        )

    def _ask(self, om: Mapping[str, Any], asked: Ask[Any, Any], started: float) -> Any | None:
        """The phase's model's parsed answer; None when it fails or is late (past the
        deadline the call finishes alone)."""
        deadline_s = self.block_deadline_s - (time.monotonic() - started)
        name = observer_model(om, self._observer.platform_model, asked.name)
        model = self._observer.models.resolve(name)
        try:
            if model is None:
                raise ModelFailure(
                    "unavailable", f"no model named {name!r} is configured", retryable=False
                )
            future = _POOL.submit(model.propose, asked.request(max(0.1, deadline_s)))
            return asked.parse(future.result(timeout=max(0.01, deadline_s)).text)
        except _FAILED as error:
            log.warning("the synchronous %s failed: %s", asked.name, type(error).__name__)
            return None

    def _observe_now(
        self,
        stored: StoredThread,
        options: Mapping[str, Any],
        log_: Log,
        t: rules.Thresholds,
        started: float,
    ) -> bool:
        """Observe now, within the deadline; False when the model fails or is late."""
        thread = stored.thread
        mark = self._threads.mark(thread.id, OBSERVE_KIND)
        position = mark.position
        read = self._threads.numbered(thread, position, stored.seq, MAX_RAW_MESSAGES)
        if len(read) == MAX_RAW_MESSAGES:
            upto = read[-1][0] + 1
        else:
            kept = rules.kept_raw([m.content for _seq, m in read], t)
            read = read[: len(read) - kept] if kept < len(read) else read
            upto = read[-1][0] + 1 if kept else stored.seq
        if not read:
            return False
        asked, tokens = self._observer.observation_input(stored, options, log_, read, upto)
        answer = self._ask(options["observationalMemory"], Ask(OBSERVATION, asked), started)
        if answer is None:
            return False
        observed = Observed(position, upto, tokens, answer)
        actions, _outcome = self._observer.observation_actions(thread, options, log_, observed)
        now = self._observer.clock.now_ms()
        advance = self._threads.advance(thread.id, OBSERVE_KIND, mark, upto, now)
        # A conflict: the background run observed them first, and its chunk is as good.
        with contextlib.suppress(WriteConflict):
            self._observer.store.write([*actions, advance])
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
        """Activate what the thresholds say; the write that makes a reflection due starts it
        at once, so it never waits for the next save."""
        now = self._observer.clock.now_ms()
        at = last.created_at if last is not None else None
        change = _LogChange({c.n: c for c in log_.chunks}, log_.head)
        self._activate_buffered(thread, log_, change, t, quiet=rules.idle(at, now, t.idle_ms))
        reserve = next(iter(log_.of("reflection", "buffered")), None)
        reserved = reserve is not None
        active_log = rules.log_tokens(change.active)
        quiet_log = rules.idle(at, now, t.reflect_idle_ms)
        if reserve is not None and rules.activates_reflection(active_log, t, quiet=quiet_log):
            self._activate_reflection(thread, reserve, change)
            reserved = False
        elif reserve is None and rules.must_reflect(active_log, t):
            self._reflect_now(thread, options, log_, change, started)
        if not change.actions:
            return log_
        committed = self._commit(thread, log_.head, change, now)
        passed = rules.passes_reflection_share(
            log_.active, reserve is not None, change.active, reserved, t
        )
        if committed and passed:
            self._reflect_soon(thread, seq)
        return self._logs.log(thread)

    def _activate_buffered(
        self, thread: Thread, log_: Log, change: _LogChange, t: rules.Thresholds, *, quiet: bool
    ) -> None:
        head = log_.head
        buffered = log_.of("observation", "buffered")
        raw = thread.tokens - head.active_tokens
        count = rules.activate_count(buffered, raw, head.active_tokens, t, quiet=quiet)
        count = min(count, MAX_CHANGED)
        for chunk in buffered[:count]:
            change.chunks[chunk.n] = replace(chunk, status="active")
            change.actions.append(self._logs.set_status(thread, chunk, "active"))
        if count:
            last = buffered[count - 1]
            change.after = replace(change.after, active=last.upto, active_tokens=last.upto_tokens)

    def _activate_reflection(self, thread: Thread, reserve: Chunk, change: _LogChange) -> None:
        for n in range(reserve.first, reserve.upto):
            chunk = change.chunks.get(n)
            if chunk is not None and chunk.status == "active" and len(change.actions) < MAX_CHANGED:
                change.actions.append(self._logs.remove(thread, change.chunks.pop(n)))
        change.chunks[reserve.n] = replace(reserve, status="active")
        change.actions.append(self._logs.set_status(thread, reserve, "active"))
        change.after = replace(change.after, reflections=change.after.reflections + 1)

    def _reflect_now(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        log_: Log,
        change: _LogChange,
        started: float,
    ) -> None:
        om = options["observationalMemory"]
        condensed, items = self._observer.reflecting(thread, log_, change.active)
        if len(condensed) < rules.MIN_REFLECTED_CHUNKS:
            return
        answer = self._ask(om, reflection_ask(items, om["reflection"]["instruction"]), started)
        if answer is None:
            return
        chunk, added = self._observer.reflection(thread, log_, condensed, answer, "active")
        for c in condensed:
            change.actions.append(self._logs.remove(thread, change.chunks.pop(c.n)))
        change.chunks[chunk.n] = chunk
        change.actions += added
        after = change.after
        change.after = replace(after, next=after.next + 1, reflections=after.reflections + 1)

    def _commit(self, thread: Thread, head: Head, change: _LogChange, now: int) -> bool:
        """False when another request or run changed the log first."""
        head_action = self._logs.head_action(thread, head, change.after, now)
        try:
            self._observer.store.write(merged([*change.actions, head_action]))
        except WriteConflict:
            return False
        return True

    def _reflect_soon(self, thread: Thread, seq: int) -> None:
        """Start the background reflection now; not started, the next save's run reflects."""
        try:
            self._learning.start(thread_pool(OBSERVE_KIND, thread), upto=seq, reason="reflect")
        except Unavailable:
            log.warning("the background reflection was not started; the next save starts it")

    def observations(self, thread: Thread) -> ShownLog:
        """Every observation after the active reflection, with how many reflections condensed it."""
        log_ = self._logs.log(thread)
        text = self._observer.rendered(thread, log_, log_.shown)
        return ShownLog(text, rules.count_tokens(text), log_.head.reflections)

    def recall(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        query: str,
        limit: int | None,
        semantic: RecallService,
        seq: int,
    ) -> list[Found]:
        """The user's messages best matching `query` by BM25, fused with semantic recall's
        nearest when `retrieval.vector`; 409 when retrieval is off."""
        retrieval = options["observationalMemory"]["retrieval"]
        if not (options["observationalMemory"]["enabled"] and retrieval["enabled"]):
            raise ThreadConflict("recall needs observationalMemory.retrieval on")
        wanted = max(1, min(limit or DEFAULT_RECALL_LIMIT, RECALL_MAX))
        searched = self._searched(thread, retrieval["scope"])
        ranked = rules.lexical_rank(query, [m.content for _t, m in searched])[:wanted]
        lexical = [Found(searched[i][0].id, searched[i][1], round(s, 4)) for i, s in ranked]
        if not retrieval["vector"]:
            return lexical
        nearest = self._nearest(thread, options, query, wanted, semantic, seq)
        return rules.fuse([lexical, nearest])[:wanted] if nearest else lexical

    def _searched(self, thread: Thread, scope: str) -> list[tuple[Thread, Message]]:
        if scope == "thread":
            return [(thread, m) for m in self._threads.latest(thread, RECALL_THREAD_MESSAGES)]
        found: list[tuple[Thread, Message]] = []
        page = self._threads.of_user(
            thread.org_id, thread.resource_id, thread.agent_id, RECALL_THREADS
        )
        for other in page.threads:
            # The list is the user's own: never another user's thread.
            if other.resource_id != thread.resource_id:
                continue
            count = RECALL_THREAD_MESSAGES if other.id == thread.id else RECALL_RESOURCE_MESSAGES
            found += [(other, m) for m in self._threads.latest(other, count)]
        return found

    @staticmethod
    def _nearest(
        thread: Thread,
        options: Mapping[str, Any],
        query: str,
        wanted: int,
        semantic: RecallService,
        seq: int,
    ) -> list[Found]:
        """Semantic recall's nearest messages; none while `semanticRecall` is off."""
        recall = options["semanticRecall"]
        if not recall["enabled"]:
            return []
        scope = options["observationalMemory"]["retrieval"]["scope"]
        asked = {
            **options,
            "semanticRecall": {
                **recall,
                "topK": min(wanted, MAX_TOP_K),
                "messageRange": {"before": 0, "after": 0},
                "scope": scope,
            },
        }
        windows = semantic.recall(thread, seq, asked, query, ())
        return [
            Found(window.thread_id, message, float(window.score))
            for window in windows
            for message in window.messages
        ]
