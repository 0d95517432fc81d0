"""The memory Bot's enrichment: a person's input rewritten with entries every reader may see.

Every entry the model says it used is checked again on the newest memory first.
"""

from __future__ import annotations

from agent_memory.domain.audiences import chat_readers
from agent_memory.domain.bot_memory import topics_of
from agent_memory.domain.bots import Chat
from agent_memory.domain.errors import Unavailable
from agent_memory.domain.memory_bot import BotSettings, Enriched, used_reason
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.memory_bot_requests import (
    ENRICHMENT,
    EnrichmentInput,
    Rewrite,
    VisibleEntry,
)
from agent_memory.persistence.bot_memory import bot_pool
from agent_memory.persistence.memory_bot import MemoryBotRepository
from agent_memory.ports import LearningModel
from agent_memory.service.bot_memory import BotMemoryService, for_reader
from agent_memory.service.bots import Members
from agent_memory.service.memory_bot_calls import RequestCalls
from agent_memory.service.sessions import OrgDefaults

ENRICH_ENTRIES = 50


class Enrichment:
    def __init__(
        self,
        memory: BotMemoryService,
        repo: MemoryBotRepository,
        calls: RequestCalls,
        org_settings: OrgDefaults,
    ) -> None:
        self._memory = memory
        self._repo = repo
        self._calls = calls
        self._org_settings = org_settings

    def enrich(self, chat: Chat, turn_id: str, text: str, *, notice: bool) -> tuple[str, bool]:
        """The input the Bot's model should see, and whether the memory Bot rewrote it;
        `chat` as this request read it (what the enrichment uses of it never changes)."""
        if notice:
            return text, False  # a notice is never a person's words: nothing is read
        model, bot = self._model(chat)
        if model is None:
            return text, False
        rewrite = self._rewrite(chat, turn_id, text, model, bot)
        if rewrite is None or rewrite.input is None:
            return text, False
        enriched = Enriched(
            turn_id,
            rewrite.input,
            text,
            tuple(dict.fromkeys(rewrite.used)),
            self._memory.clock.now_ms(),
        )
        try:
            self._repo.add_enrichment(chat, enriched)
        except Unavailable:
            return text, False  # an unrecorded rewrite is not given
        return rewrite.input, True

    def _model(self, chat: Chat) -> tuple[LearningModel | None, BotSettings]:
        settings = self._org_settings.effective(chat.org_id)
        if self._calls.skip(chat, settings) is not None:
            return None, BotSettings()
        return self._calls.usable(chat, settings)

    def _rewrite(
        self, chat: Chat, turn_id: str, text: str, model: LearningModel, bot: BotSettings
    ) -> Rewrite | None:
        """The rewrite, when every entry it used is one the readers still see."""
        pool = bot_pool(chat.bot_id, chat.org_id)
        members = Members(self._memory.bots.repo, chat.owner, chat.org_id)
        readers = chat_readers(chat.org_id, chat.owner, chat.channel_id, members)
        # Only the audience rows that can admit the Chat's readers (ADR 0083); a change
        # committing meanwhile is found by the version read after the answer.
        readable = for_reader(pool, readers, members)
        snap = self._memory.repo.read_for_change(readable)
        seen = self._memory.seen_by(readers, members, snap)[:ENRICH_ENTRIES]
        if not seen:
            return None  # nothing the readers may see: the model is not asked
        stored, open_content = snap.by_id(), self._memory.repo.pools.open_content
        visible = [VisibleEntry(m.id, open_content(pool, stored[m.id]), topics_of(m)) for m in seen]
        given = EnrichmentInput(text, tuple(visible), bot.instructions_in(chat.org_id))
        asked: Ask[EnrichmentInput, Rewrite] = Ask(ENRICHMENT, given)
        answered = self._calls.ask(chat, turn_id, bot, model, asked)
        answer, call = answered
        self._calls.save(chat, call)
        if answer is None or answer.input is None:
            return None
        if used_reason(answer.used, [e.id for e in visible]) is not None:
            return None
        if self._memory.repo.version(pool) != snap.version:
            snap = self._memory.snapshot(readable)
        # The Chat's readers read again too: one may have left a Channel meanwhile.
        members = Members(self._memory.bots.repo, chat.owner, chat.org_id)
        readers = chat_readers(chat.org_id, chat.owner, chat.channel_id, members)
        still = [m.id for m in self._memory.seen_by(readers, members, snap)]
        return answer if used_reason(answer.used, still) is None else None
