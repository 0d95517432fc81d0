"""The memory Bot: the model that keeps bot memory (service/bot_memory.py), not the memory."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from agent_memory.domain.bots import BOTS_BELONG_TO_A_PERSON, Chat, Turn, owner_only
from agent_memory.domain.errors import Unavailable
from agent_memory.domain.identity import Principal, person_of
from agent_memory.domain.memory_bot import (
    ONLY_OWNER_READS,
    TURN_WAS_ABANDONED,
    BotSettings,
    Confession,
    Enriched,
    ModelCall,
    budget_events,
    may_confide,
    patched_settings,
    turn_event,
    turn_of_event,
)
from agent_memory.domain.runs import RunView
from agent_memory.domain.sessions import check_content
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.memory_bot_requests import (
    CALM_ANSWER,
    CONFIDE_ANSWER,
    ConfideAnswer,
    ConfideInput,
)
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.memory_bot import MemoryBotRepository
from agent_memory.service.bot_learning import KIND, learning_pool_id, pool_ref
from agent_memory.service.bot_memory import BotMemoryService
from agent_memory.service.enrichment import Enrichment
from agent_memory.service.learning import LearningService
from agent_memory.service.memory_bot_calls import RequestCalls
from agent_memory.service.sessions import OrgDefaults

log = logging.getLogger(__name__)

EXECUTIONS_LIMIT = 100


class MemoryBotService:
    def __init__(
        self,
        memory: BotMemoryService,
        repo: MemoryBotRepository,
        runs: ExecutionRepository,
        org_settings: OrgDefaults,
        calls: RequestCalls,
        learning: LearningService,
    ) -> None:
        self._bots = memory.bots
        self.repo = repo
        self._runs = runs
        self._org_settings = org_settings
        self._clock = memory.clock
        self._learning = learning
        self.calls = calls
        # A Turn's input rewritten with entries that help (`POST /v1/chats/{chatId}/turns`).
        self.enrichment = Enrichment(memory, repo, calls, org_settings)

    def bot_settings(self, principal: Principal, bot_id: str) -> tuple[BotSettings, int]:
        """The settings and this period's spend (write on a Bot not linked)."""
        bot, _reach = self._bots.reach(principal, bot_id, "configure")
        return self.calls.settings.with_spent(bot.id, self._clock.now_ms())

    def patch_bot_settings(
        self, principal: Principal, bot_id: str, expected: int, changes: Mapping[str, Any]
    ) -> tuple[BotSettings, int]:
        """Set, remove (null) or keep (missing); 409 when `expected` is not the version."""
        bot, _reach = self._bots.reach(principal, bot_id, "configure")
        after = patched_settings(self.calls.settings.get(bot.id), expected, changes, bot.org_id)
        now = self._clock.now_ms()
        self.calls.settings.save(bot.id, after, now)
        return after, self.calls.settings.spent(bot.id, after.period(now))

    def confide(self, principal: Principal, chat_id: str, turn_id: str, text: str) -> Confession:
        """The answer to a confession during an open Turn, recorded sealed; the calm answer
        when no model answers in time."""
        person_of(principal, BOTS_BELONG_TO_A_PERSON)
        check_content(text, ["text"])
        chat, turn = self._bots.chat_turn(principal, chat_id, turn_id)
        may_confide(chat, turn, self._clock.now_ms())
        org_settings = self._org_settings.effective(chat.org_id)
        answer, call = self._answer(chat, turn.id, text, org_settings)
        calm = answer is None
        confession = Confession(turn.id, text, answer or CALM_ANSWER, calm, self._clock.now_ms())
        self._confess(chat, confession, call)
        self._learn(chat, turn, self.calls.skip(chat, org_settings))
        return confession

    def _answer(
        self, chat: Chat, turn_id: str, text: str, org_settings: Mapping[str, Any]
    ) -> tuple[str | None, ModelCall | None]:
        model, settings = self.calls.usable(chat, org_settings)
        if model is None:
            return None, None
        given = ConfideInput(text, settings.instructions_in(chat.org_id))
        asked: Ask[ConfideInput, ConfideAnswer] = Ask(CONFIDE_ANSWER, given)
        answered = self.calls.ask(chat, turn_id, settings, model, asked)
        parsed, call = answered
        return (parsed.answer if parsed is not None else None), call

    def _confess(self, chat: Chat, confession: Confession, call: ModelCall | None) -> None:
        """The confession with its call on one row; if that fails, the call is still saved:
        the model was asked and charged."""
        try:
            self.repo.add_confession(chat, confession, call)
        except Unavailable:
            if call is not None:
                self.calls.save(chat, call)
            raise

    def _learn(self, chat: Chat, turn: Turn, skip: str | None) -> None:
        """The Turn's learning, waiting for the Turn to end or skipped with why (`skip`).
        Best effort: a later confide of the Turn records it too."""
        pool, event = pool_ref(chat), turn_event(chat.org_id, chat.id, turn.id)
        try:
            if skip is None:
                self._learning.wait(pool, event=event, reason="confide")
            else:
                self._learning.skipped(
                    pool, event=event, reason="confide", note=skip, at=turn.created_at
                )
        except Unavailable:
            log.warning("memory bot: the learning of a confide was not recorded")

    def turn_completed(self, chat: Chat, turn: Turn) -> None:
        """Release the learning waiting on the completed Turn through its last item, so
        items of another open Turn are not read early."""
        if chat.kind == "review":
            return
        self._learning.release(turn_event(chat.org_id, chat.id, turn.id), upto=turn.last_item)

    def wake_learning(self) -> int:
        """The budget tick: learning deferred while a budget was spent starts again."""
        events = budget_events(self._clock.now_ms())
        return sum(run.started for event in events for run in self._learning.wake(event))

    def confessions(self, principal: Principal, chat_id: str) -> list[Confession]:
        """Newest first: its owner only."""
        chat, _members = self._bots.readable_chat(principal, chat_id)
        owner_only(principal, chat, ONLY_OWNER_READS)
        return self.repo.confessions(chat)

    def enrichments(self, principal: Principal, chat_id: str) -> list[Enriched]:
        """Newest first: its owner only."""
        chat, _members = self._bots.readable_chat(principal, chat_id)
        owner_only(principal, chat, ONLY_OWNER_READS)
        return self.repo.enrichments(chat)

    def executions(self, principal: Principal, bot_id: str) -> list[RunView]:
        """All of them for a writer of the Bot, else those of Chats the caller owns."""
        user, _org = person_of(principal, BOTS_BELONG_TO_A_PERSON)
        bot, reach = self._bots.reach(principal, bot_id, "read")
        pool_id = learning_pool_id(bot.id, reach.org_id)
        rows = self._runs.newest(KIND, pool_id, EXECUTIONS_LIMIT)
        runs = [
            replace(run, turn_id=turn_of_event(row.record.get("waitFor")))
            for row, run in zip(rows, self._learning.shown(rows), strict=True)
        ]
        if reach.level != "write":
            read = self._bots.repo.chats(list({r.source_id for r in runs if r.source_id}))
            owned = {chat.id for chat in read if chat.owner == user}
            runs = [run for run in runs if run.source_id in owned]
        return self._abandoned_waits(runs)

    def _abandoned_waits(self, runs: list[RunView]) -> list[RunView]:
        """A wait whose Turn was abandoned never starts: it is shown skipped, with why."""
        waiting: dict[str, list[str]] = {}
        for run in runs:
            if run.status == "waiting" and run.source_id and run.turn_id:
                waiting.setdefault(run.source_id, []).append(run.turn_id)
        now = self._clock.now_ms()
        abandoned = {
            (chat_id, turn_id)
            for chat_id, turn_ids in waiting.items()
            for turn_id, turn in self._bots.repo.turns(chat_id, turn_ids).items()
            if turn.state(now) == "abandoned"
        }
        return [
            replace(run, status="skipped", note=TURN_WAS_ABANDONED)
            if run.status == "waiting" and (run.source_id, run.turn_id) in abandoned
            else run
            for run in runs
        ]
