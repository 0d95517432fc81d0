"""Observational memory shared by the background step and the request path."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent_memory.domain import observation as rules
from agent_memory.domain import threads as thread_rules
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.observation import Chunk
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.observation import (
    MAX_TITLE_LENGTH,
    REFLECTION,
    Observation,
    ObservationInput,
    Reflection,
    ReflectionInput,
    WorkingMemory,
)
from agent_memory.domain.threads import Message, Thread
from agent_memory.persistence.observations import Log, ObservationRepository
from agent_memory.persistence.threads import StoredThread, ThreadRepository
from agent_memory.ports import Action, Clock, Delete, ModelCatalog, Store, Update
from agent_memory.service.learning_pools import AlreadyApplied, Outcome, PoolKind

OBSERVE_KIND: PoolKind = "thread-observe"
DEFAULT_OBSERVER_MODEL = "local/rules"
# The observer is shown the newest part of the log (it appends to it).
LOG_SHOWN_CHARS = 40_000
# Leaves room for the head and the rest within 100 actions.
MAX_CHANGED = 80


def observer_model(om: Mapping[str, Any], platform: str | None, phase: str = "observation") -> str:
    """The phase's model, else the top-level `model`, else OBSERVER_MODEL, else local/rules."""
    return str(om[phase]["model"] or om["model"] or platform or DEFAULT_OBSERVER_MODEL)


def _manages_notes(options: Mapping[str, Any]) -> bool:
    manages = options["observationalMemory"]["observation"]["manageWorkingMemory"]
    return bool(manages and options["workingMemory"]["enabled"])


@dataclass(frozen=True)
class Observed:
    """One observation ready to commit: messages `position <= seq < upto`."""

    position: int
    upto: int
    observed_tokens: int
    answer: Observation


class Observer:
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

    def working_memory(self, thread: Thread, options: Mapping[str, Any]) -> WorkingMemory | None:
        """The notes when `manageWorkingMemory` lets the observer rewrite them."""
        if not _manages_notes(options):
            return None
        working = options["workingMemory"]
        text = self.threads.notes.get(thread, working["scope"])
        return WorkingMemory(
            format=thread_rules.working_memory_format(options),
            content=thread_rules.working_memory_content(text, options),
            template=working["template"],
            schema=working["schema"],
        )

    def rendered(self, thread: Thread, log: Log, chunks: Sequence[Chunk]) -> str:
        """`chunks` of the log as the model and clients read them."""
        return rules.render(chunks, self.logs.texts(thread, log, chunks))

    def observation_input(
        self,
        stored: StoredThread,
        options: Mapping[str, Any],
        log: Log,
        read: Sequence[tuple[int, Message]],
        upto: int,
    ) -> tuple[ObservationInput, int]:
        """What the observer is asked about the messages `read` (through `upto`), and the
        thread's message tokens through them (exact when they reach the newest)."""
        thread = stored.thread
        messages = [m for _seq, m in read]
        if upto >= stored.seq:
            tokens = thread.tokens
        else:
            tokens = thread.observed_tokens + rules.total_message_tokens(
                [m.content for m in messages]
            )
        obs = options["observationalMemory"]["observation"]
        asked = ObservationInput(
            first=read[0][0] if read else upto,
            upto=upto,
            messages=tuple(EvidenceItem(m.id, m.role, m.content) for m in messages),
            observations=self.rendered(thread, log, log.shown)[-LOG_SHOWN_CHARS:] or None,
            # Shown its own previous title: until its first, it names the thread anew.
            title=thread.title if log.head.titled else None,
            thread_title=bool(obs["threadTitle"]),
            working_memory=self.working_memory(thread, options),
            instructions=obs["instruction"],
        )
        return asked, tokens

    def observation_actions(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        log: Log,
        observed: Observed,
    ) -> tuple[list[Action], Outcome]:
        """The buffered chunk, the head, observed tokens, and a changed title or notes."""
        now = self.clock.now_ms()
        answer, head = observed.answer, log.head
        obs = options["observationalMemory"]["observation"]
        applied: list[dict[str, str]] = []
        first, actions = self._overtaken(thread, log, observed)
        after = replace(head, next=head.next + 1)
        text = answer.observations.strip()
        if text:
            chunk = Chunk(
                n=head.next,
                kind="observation",
                status="buffered",
                first=first,
                upto=observed.upto,
                tokens=rules.count_tokens(text),
                upto_tokens=observed.observed_tokens,
                at=now,
            )
            actions += self.logs.add_chunk(thread, chunk, text)
            applied.append({"key": f"observation:{chunk.n}", "op": "observe"})
        if obs["threadTitle"] and answer.title is not None:
            title = " ".join(answer.title.split())[:MAX_TITLE_LENGTH]
            if title != thread.title:
                actions += self.threads.title_actions(thread, title, now)
                applied.append({"key": "title", "op": "title"})
            after = replace(after, titled=True)
        outcome = Outcome(applied=applied, rejected=[])
        actions += self._notes_actions(thread, options, answer, now, outcome)
        actions.append(self.logs.head_action(thread, head, after, now))
        actions.append(self.logs.observed_tokens(thread, observed.observed_tokens))
        return merged(actions), outcome

    def _overtaken(self, thread: Thread, log: Log, observed: Observed) -> tuple[int, list[Action]]:
        """Where the new chunk starts, and the removal of the buffered chunks another run
        wrote meanwhile for messages this answer observed too: the answer, written without
        them, replaces them, so each message is in the log once. AlreadyApplied when such a
        chunk is active already (the context reads it) or also holds messages the answer
        did not observe (replacing it would lose them)."""
        answered_from = observed.answer.observed[0]
        if answered_from >= observed.position:
            return observed.position, []
        overlap = [
            c
            for c in log.chunks
            if c.kind == "observation" and c.upto > answered_from and c.first < observed.position
        ]
        if any(c.status != "buffered" or c.first < answered_from for c in overlap):
            raise AlreadyApplied("another run observed some of these messages with others")
        first = min([observed.position, *(c.first for c in overlap)])
        return first, [self.logs.remove(thread, c) for c in overlap]

    def _notes_actions(
        self,
        thread: Thread,
        options: Mapping[str, Any],
        answer: Observation,
        now: int,
        outcome: Outcome,
    ) -> list[Action]:
        """The observer's notes, decided again on the notes as they are now and written
        only while they stay at the revision read (one user's threads share them)."""
        if answer.workingMemory is None or not _manages_notes(options):
            return []
        scope = options["workingMemory"]["scope"]
        text, rev = self.threads.notes.read(thread, scope)
        stored = thread_rules.working_memory_content(text, options)
        current = stored if stored is not None else options["workingMemory"]["template"]
        wanted = rules.rebased_notes(answer.shown_notes, answer.workingMemory, current)
        try:
            notes = thread_rules.check_working_memory(wanted, options)
        except ValidationFailed as error:
            # A schema's message may quote the refused notes: record only where.
            where = "/".join(str(p) for p in error.path)
            reason = f"the working memory does not fit this agent's options (at {where})"
            outcome.rejected.append({"change": {"op": "workingMemory"}, "reason": reason})
            return []
        outcome.applied.append({"key": "workingMemory", "op": "update"})
        return self.threads.notes.actions(thread, scope, notes, now, by="observer", read_rev=rev)

    def reflecting(
        self, thread: Thread, log: Log, active: Sequence[Chunk]
    ) -> tuple[list[Chunk], tuple[EvidenceItem, ...]]:
        """The oldest active chunks a reflection condenses, and their texts in reading order
        (a reflection where what it condensed was), as the reflector reads them."""
        condensed = sorted(active, key=lambda c: c.n)[:MAX_CHANGED]
        texts = self.logs.texts(thread, log, condensed)
        shown = sorted(condensed, key=rules.place)
        return condensed, tuple(EvidenceItem(str(c.n), c.kind, texts[c.n]) for c in shown)

    def reflection(
        self,
        thread: Thread,
        log: Log,
        condensed: Sequence[Chunk],
        answer: Reflection,
        status: rules.Status = "buffered",
    ) -> tuple[Chunk, list[Action]]:
        """The chunk condensing `condensed` (numbered in order) and the writes that add it."""
        text = answer.observations.strip()
        chunk = Chunk(
            n=log.head.next,
            kind="reflection",
            status=status,
            first=condensed[0].n,
            upto=condensed[-1].n + 1,
            tokens=rules.count_tokens(text),
            at=self.clock.now_ms(),
        )
        return chunk, self.logs.add_chunk(thread, chunk, text)


def reflection_ask(
    items: Sequence[EvidenceItem], instructions: str | None
) -> Ask[ReflectionInput, Reflection]:
    """The reflector's question: the condensed chunks' texts, one after another."""
    shown = "\n".join(item.content.strip() for item in items)
    return Ask(REFLECTION, ReflectionInput(shown, instructions))


def merged(actions: Sequence[Action]) -> list[Action]:
    """A transaction touches a row once: updates of one row as one (the first condition
    stands), and none of a row it deletes (a chunk activated and condensed at once)."""
    gone = {(a.pk, a.sk) for a in actions if isinstance(a, Delete)}
    out: list[Action] = []
    at: dict[tuple[str, str], int] = {}
    for action in actions:
        if isinstance(action, Update):
            key = (action.pk, action.sk)
            if key in gone:
                continue
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
