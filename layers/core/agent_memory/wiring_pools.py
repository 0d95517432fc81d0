"""The pools durable learning serves, each a rules module and a repository over the one
engine: a new pool kind is one more line here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_memory.domain.memory_bot import parse_prices
from agent_memory.service.agent_learning import AgentLearningPool
from agent_memory.service.bot_learning import BotLearningPool
from agent_memory.service.observe_step import ObserveStep
from agent_memory.service.recall_step import RecallStep
from agent_memory.service.session_learning import SessionLearningPool
from agent_memory.service.thread_learning import Carrying, ThreadReader, ThreadStep
from agent_memory.service.thread_title import TitleStep

if TYPE_CHECKING:
    from agent_memory.service.learning_pools import LearningPool
    from agent_memory.wiring import Wiring


def learning_pools(wiring: Wiring) -> list[LearningPool]:
    agent_pool = AgentLearningPool(
        wiring.agent_memory_repo,
        wiring.access.repo,
        wiring.identity_repo,
        wiring.org_settings,
        wiring.clock,
    )
    bot_pool = BotLearningPool(
        wiring.bot_repo,
        wiring.bot_memory,
        wiring.memory_bot_repo,
        wiring.org_settings,
        wiring.models,
        wiring.clock,
        wiring.bot_settings,
        prices=parse_prices(wiring.settings.model_prices),
    )
    session_pool = SessionLearningPool(wiring.access, wiring.clock)
    return [session_pool, agent_pool, bot_pool, *wiring.thread_steps]


def thread_steps(wiring: Wiring) -> list[ThreadStep]:
    """Background work after a thread's saves, each a learning pool kind of its own
    (docs/decisions.md, "Thread background work")."""
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
