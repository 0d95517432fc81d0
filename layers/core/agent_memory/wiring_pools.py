"""The pools durable learning serves, each a rules module and a repository over the one
engine: a new pool kind is one more entry here, with the function that builds it.

A pool is built, and its rules module imported, by the first step that runs for its kind: a
learning step serves one pool, and every pool's rules together take about 20 ms to import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_memory.domain.errors import WriteConflict
    from agent_memory.domain.tasks.base import Ask
    from agent_memory.ports import Action, ModelReply
    from agent_memory.service.learning_pools import (
        Change,
        Evidence,
        FinishActions,
        LearningPool,
        PoolKind,
        PoolRef,
    )
    from agent_memory.service.retrying import Again
    from agent_memory.service.thread_learning import ThreadStep
    from agent_memory.wiring import Wiring


class PoolOnFirstUse:
    """The `LearningPool` of `kind` that `build` answers, built when a step first asks it
    something. `kind` is the built pool's own."""

    def __init__(self, kind: PoolKind, build: Callable[[], LearningPool]) -> None:
        self.kind = kind
        self._build = build

    @functools.cached_property
    def pool(self) -> LearningPool:
        return self._build()

    def charge(self, evidence: Evidence[Any], reply: ModelReply) -> Sequence[Action]:
        return self.pool.charge(evidence, reply)

    def task(self, evidence: Evidence[Any]) -> Ask[Any, Any] | None:
        return self.pool.task(evidence)

    def detail_of(self, data: Any) -> Any:
        return self.pool.detail_of(data)

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        return self.pool.load_evidence(pool, upto)

    def change(
        self, evidence: Evidence[Any], changes: Any, finish: FinishActions
    ) -> Change | Again:
        return self.pool.change(evidence, changes, finish)

    def lost(self, error: WriteConflict) -> bool:
        return self.pool.lost(error)


def learning_pools(wiring: Wiring) -> list[LearningPool]:
    thread_kinds = ("thread-title", "thread-observe", "thread-recall")
    return [
        PoolOnFirstUse("session", functools.partial(_session_pool, wiring)),
        PoolOnFirstUse("agent", functools.partial(_agent_pool, wiring)),
        PoolOnFirstUse("bot", functools.partial(_bot_pool, wiring)),
        # A thread's steps are built together: they share one reader of the thread.
        *(
            PoolOnFirstUse(kind, functools.partial(_thread_step, wiring, kind))
            for kind in thread_kinds
        ),
    ]


def _session_pool(wiring: Wiring) -> LearningPool:
    from agent_memory.service.session_learning import SessionLearningPool

    return SessionLearningPool(wiring.access, wiring.clock)


def _agent_pool(wiring: Wiring) -> LearningPool:
    from agent_memory.service.agent_learning import AgentLearningPool

    return AgentLearningPool(
        wiring.agent_memory_repo,
        wiring.access.repo,
        wiring.identity_repo,
        wiring.org_settings,
        wiring.clock,
    )


def _bot_pool(wiring: Wiring) -> LearningPool:
    from agent_memory.domain.memory_bot import parse_prices
    from agent_memory.service.bot_learning import BotLearningPool

    return BotLearningPool(
        wiring.bot_repo,
        wiring.bot_memory,
        wiring.memory_bot_repo,
        wiring.org_settings,
        wiring.models,
        wiring.clock,
        wiring.bot_settings,
        prices=parse_prices(wiring.settings.model_prices),
    )


def _thread_step(wiring: Wiring, kind: PoolKind) -> LearningPool:
    return next(step for step in wiring.thread_steps if step.kind == kind)


def thread_steps(wiring: Wiring) -> list[ThreadStep]:
    """Background work after a thread's saves, each a learning pool kind of its own (ADR 0059)."""
    from agent_memory.service.observe_step import ObserveStep
    from agent_memory.service.recall_step import RecallStep
    from agent_memory.service.thread_learning import Carrying, ThreadReader
    from agent_memory.service.thread_title import TitleStep

    reader = ThreadReader(wiring.thread_repo, wiring.agent_versions, wiring.clock)
    # semanticRecall: the saved messages' embeddings, batched per save.
    recall = RecallStep(reader, wiring.recall, wiring.store)
    return [
        # TITLE_MODEL (API.md); local/rules when it is not set.
        TitleStep(reader, wiring.store, wiring.clock, wiring.settings.title_model),
        # OBSERVER_MODEL (API.md); the options' own models win, local/rules without any.
        # A save the observer runs on embeds in the observer's execution (one, not two).
        Carrying(ObserveStep(reader, wiring.observer), recall),
        recall,
    ]
