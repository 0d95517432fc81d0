"""`generateTitle`: the thread's title from its first user message, a background step."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_memory.domain import threads as rules
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.learning_notes import (
    ALREADY_TITLED,
    NO_USER_MESSAGE,
    SOURCE_GONE,
    TITLES_OFF,
)
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.observation import TITLE, Title, TitleInput
from agent_memory.ports import Store
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Change,
    Evidence,
    FinishActions,
    Outcome,
    PoolKind,
    PoolRef,
    Skipped,
)
from agent_memory.service.thread_learning import (
    Saved,
    ThreadReader,
    ThreadStep,
)

TITLE_KIND: PoolKind = "thread-title"
# The first user message is among the thread's first few.
TITLE_LOOKAHEAD = 10


@dataclass(frozen=True)
class TitleDetail:
    instructions: str | None


class TitleStep(ThreadStep):
    """A failed call leaves the thread untitled; the next save with an answer tries again."""

    kind = TITLE_KIND
    detail_type = TitleDetail

    def __init__(self, reader: ThreadReader, store: Store, title_model: str | None = None) -> None:
        self._reader = reader
        self._repo = reader.repo
        self.store = store
        self._title_model = title_model or "local/rules"

    def wanted(self, saved: Saved) -> bool:
        return (
            bool(saved.options["generateTitle"]["enabled"])
            and saved.thread.title is None
            and saved.turn_ended
        )

    def task(self, evidence: Evidence[TitleDetail]) -> Ask[TitleInput, Title]:
        return Ask(TITLE, TitleInput(evidence.items[0].content, evidence.detail.instructions))

    def read_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """Skipped when the thread is gone or titled, titles are off, or no user text yet."""
        found = self._reader.thread(pool)
        if found is None:
            raise Skipped(SOURCE_GONE)
        stored, options = found
        title = options["generateTitle"]
        if not title["enabled"]:
            raise Skipped(TITLES_OFF)
        if stored.thread.title is not None:
            raise Skipped(ALREADY_TITLED)
        position = self._repo.position(stored.thread.id, self.kind)
        if position > 0:
            raise Skipped(ALREADY_TITLED)
        first = rules.first_user_message(self._repo.first(stored.thread, TITLE_LOOKAHEAD))
        if first is None:
            raise Skipped(NO_USER_MESSAGE)
        return Evidence(
            pool=pool,
            position=position,
            upto=max(1, stored.seq if upto is None else upto),
            items=(EvidenceItem(first.id, first.role, first.content),),
            memory=(),
            model=title["model"] or self._title_model,
            allowed_kinds=(),
            detail=TitleDetail(title["instructions"]),
        )

    def change(self, evidence: Evidence[Any], changes: Title, finish: FinishActions) -> Change:
        """AlreadyApplied when another run titled it first (or the thread is gone)."""
        thread = self._reader.current(evidence.pool)[0].thread
        if thread.title is not None:
            raise AlreadyApplied("the thread is titled")
        outcome = Outcome(applied=[{"key": "title", "op": "title"}], rejected=[])
        titled = self._repo.title_actions(thread, changes.title, self._reader.clock.now_ms())
        return self._reader.change(evidence, titled, outcome, finish)
