"""The pools durable learning serves, each a rules module and a repository over the one
engine: a new pool kind is one more entry here, with the function that builds it (built,
and its rules module imported, by the first step that runs for its kind).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.service.learning_pools import LearningPool, PoolKind
    from agent_memory.service.learning_start import PoolBuilder
    from agent_memory.service.thread_learning import ThreadStep
    from agent_memory.wiring import Wiring


def pool_builders(wiring: Wiring) -> dict[PoolKind, PoolBuilder]:
    builders: dict[PoolKind, PoolBuilder] = {
        "session": functools.partial(_session_pool, wiring),
        "agent": functools.partial(_agent_pool, wiring),
        "bot": functools.partial(_bot_pool, wiring),
    }
    # A thread's steps are built together: they share one reader of the thread.
    for kind in ("thread-title", "thread-observe", "thread-recall"):
        builders[kind] = functools.partial(_thread_step, wiring, kind)
    return builders


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
    from agent_memory.service.bot_learning import BotLearningPool

    return BotLearningPool(
        wiring.bot_memory, wiring.memory_bot_repo, wiring.org_settings, wiring.memory_bot_calls
    )


def _thread_step(wiring: Wiring, kind: PoolKind) -> LearningPool:
    return next(step for step in wiring.thread_steps if step.kind == kind)


def thread_steps(wiring: Wiring) -> list[ThreadStep]:
    """Background work after a thread's saves, each a learning pool kind of its own (ADR 0059)."""
    from agent_memory.service.observe_step import ObserveStep
    from agent_memory.service.recall_step import RecallStep
    from agent_memory.service.thread_learning import ThreadReader
    from agent_memory.service.thread_title import TitleStep

    reader = ThreadReader(wiring.thread_repo, wiring.agent_versions, wiring.clock)
    # semanticRecall: the saved messages' embeddings, batched per save.
    recall = RecallStep(reader, wiring.recall, wiring.store)
    return [
        # TITLE_MODEL (API.md); local/rules when it is not set.
        TitleStep(reader, wiring.store, wiring.settings.title_model),
        # OBSERVER_MODEL (API.md); the options' own models win, local/rules without any.
        # A save the observer runs on embeds in the observer's execution (one, not two).
        ObserveStep(reader, wiring.observer, riders=(recall,)),
        recall,
    ]
