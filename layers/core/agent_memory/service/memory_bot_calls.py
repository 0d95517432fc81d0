"""The memory Bot's request-path model calls: budget, concurrency slots, window, call log.

A call past its window is abandoned; the provider's own timeout, given the same deadline,
ends it.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from agent_memory.domain.bots import Chat
from agent_memory.domain.errors import Unavailable
from agent_memory.domain.memory_bot import (
    BotSettings,
    ModelCall,
    Price,
    cost_micros,
    learning_skip,
    spent,
)
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import Ask, ModelRequest
from agent_memory.domain.tasks.memory_bot_requests import ENRICHMENT_DEADLINE_S
from agent_memory.persistence.memory_bot import BotSettingsRepository, MemoryBotRepository
from agent_memory.ports import Clock, LearningModel, ModelCatalog, ModelFailure, ModelReply

log = logging.getLogger(__name__)

In = TypeVar("In")
Out = TypeVar("Out")
T = TypeVar("T")

WINDOW_S = ENRICHMENT_DEADLINE_S
# A concurrency slot outlives a holder that crashed by this much.
LEASE_TTL_MS = 60_000
SLOT_POLL_S = 0.05
# A call past its window keeps its worker until the provider's timeout ends it.
_WORKERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="memory-bot")


class RequestCalls:
    def __init__(
        self,
        settings: BotSettingsRepository,
        repo: MemoryBotRepository,
        models: ModelCatalog,
        clock: Clock,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self.settings = settings
        self._repo = repo
        self._models = models
        self._clock = clock
        # A model without a price is charged as unknown.
        self.prices = dict(prices or {})

    def model(self, org_settings: Mapping[str, Any]) -> LearningModel | None:
        """The organization's `botMemoryModel`, if this deployment runs it (None: no name, or
        a name it does not run)."""
        return self._models.resolve(org_settings.get("botMemoryModel"))

    def skip(self, chat: Chat, org_settings: Mapping[str, Any]) -> str | None:
        """Why the memory Bot reads nothing of `chat` (`learning_skip`; None: it reads)."""
        bot_memory = bool(org_settings.get("botMemory"))
        has_model = self.model(org_settings) is not None
        return learning_skip(chat, bot_memory=bot_memory, has_model=has_model)

    def usable(
        self, chat: Chat, org_settings: Mapping[str, Any]
    ) -> tuple[LearningModel | None, BotSettings]:
        """The model to ask (None: no model, or the budget is spent) and the settings."""
        settings, spent_micros = self.settings.with_spent(chat.bot_id, self._clock.now_ms())
        model = self.model(org_settings)
        if model is not None and spent(settings.budget, spent_micros):
            return None, settings
        return model, settings

    def cost(self, reply: ModelReply) -> int | None:
        """The reply's cost in micro-USD (None: its model has no price)."""
        usage = reply.usage
        return cost_micros(self.prices.get(reply.model), usage.input_tokens, usage.output_tokens)

    def ask(
        self,
        chat: Chat,
        turn_id: str,
        settings: BotSettings,
        model: LearningModel,
        asked: Ask[In, Out],
    ) -> tuple[Out | None, ModelCall]:
        """The parsed answer (None when none came in time), charged, and the call to log."""
        request = asked.request(deadline_s=WINDOW_S)
        replied, ended = self._within_slot(chat.bot_id, settings, lambda: model.propose(request))
        self._charge(chat.bot_id, settings, replied)
        call = self._model_call(turn_id, model.name, request, replied, ended)
        if replied is None:
            return None, call
        try:
            return asked.parse(replied.text), call
        except InvalidModelOutput:
            log.warning("memory bot: the model's answer was not valid")
            return None, call

    def save(self, chat: Chat, call: ModelCall) -> None:
        """Best effort: the answer stands without it."""
        try:
            self._repo.log_call(chat, call)
        except Unavailable:
            log.warning("memory bot: a model call was not saved in the call log")

    def _within_slot(
        self, bot_id: str, settings: BotSettings, call: Callable[[], T]
    ) -> tuple[T | None, str]:
        """`call()` within the window, counting the wait for a slot, and how it ended."""
        deadline = time.monotonic() + WINDOW_S
        slots = settings.concurrency
        if slots is None:
            return _within(WINDOW_S, call)
        repo, holder = self.settings, uuid.uuid4().hex
        while True:
            slot = repo.take_slot(bot_id, slots, holder, self._clock.now_ms(), LEASE_TTL_MS)
            if slot is not None:
                break
            if time.monotonic() + SLOT_POLL_S >= deadline:
                log.warning("memory bot: no concurrency slot came free within the window")
                return None, "no_slot"
            time.sleep(SLOT_POLL_S)
        taken = slot

        def free() -> None:
            try:
                repo.free_slot(bot_id, taken, holder)
            except Unavailable:
                log.warning("memory bot: a concurrency slot is left to expire")

        return _within(max(deadline - time.monotonic(), 0.0), call, free)

    def _charge(self, bot_id: str, settings: BotSettings, reply: ModelReply | None) -> None:
        """Best effort: the answer stands."""
        if reply is None:
            return
        micros = self.cost(reply)
        now = self._clock.now_ms()
        try:
            self.settings.charge(bot_id, settings.period(now), micros, now)
        except Unavailable:
            log.warning("memory bot: a call's cost was not recorded")

    def _model_call(
        self,
        turn_id: str,
        model: str,
        request: ModelRequest,
        reply: ModelReply | None,
        ended: str,
    ) -> ModelCall:
        """A call for the Chat's encrypted call log; no reply when none came."""
        usage = reply.usage if reply is not None else None
        return ModelCall(
            turn_id,
            request.task,
            model,
            json.dumps(
                {"task": request.task, "system": request.system, "user": request.user},
                ensure_ascii=False,
            ),
            reply.text if reply is not None else None,
            ended,
            (usage.input_tokens, usage.output_tokens) if usage is not None else None,
            round(reply.latency_ms, 1) if reply is not None else None,
            self._clock.now_ms(),
        )


def _within(
    seconds: float, call: Callable[[], T], done: Callable[[], None] | None = None
) -> tuple[T | None, str]:
    """`call()`'s result and how it ended; `done` runs when the call really ends, even after
    its window, so a concurrency slot is held until then."""
    future = _WORKERS.submit(call)
    if done is not None:
        future.add_done_callback(lambda _future: done())
    try:
        return future.result(timeout=seconds), "answered"
    except FutureTimeout:
        log.warning("memory bot: the model took longer than %.0f s", seconds)
        return None, "timeout"
    except ModelFailure as failure:
        log.warning("memory bot: the model failed (%s)", failure.kind)
        return None, failure.kind
