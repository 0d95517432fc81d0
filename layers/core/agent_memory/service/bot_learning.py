"""The Bot memory pool of the learning workflow: one Chat's unread items of ended Turns.

The Chat's read mark passes over items of Turns still open and holds them for a later run
(docs/adr/0024).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.domain.audiences import chat_readers
from agent_memory.domain.bot_changes import Learned
from agent_memory.domain.bot_memory import topics_of
from agent_memory.domain.bots import Chat
from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.learning_notes import OPEN_TURN_AHEAD, SOURCE_GONE, budget_note
from agent_memory.domain.memory_bot import (
    BotSettings,
    ReadMark,
    budget_event,
    learning_view,
    next_period_key,
    spent,
)
from agent_memory.domain.model_gate import refusal_record
from agent_memory.domain.tasks.base import Ask
from agent_memory.domain.tasks.learning_changes import (
    LEARNING_CHANGES,
    KnownBotEntry,
    LearningChanges,
    LearningInput,
    TurnItem,
)
from agent_memory.persistence.bot_memory import bot_pool, pool_pk
from agent_memory.persistence.events import without
from agent_memory.persistence.memory_bot import (
    MemoryBotRepository,
    charge_action,
)
from agent_memory.persistence.positions import position_move
from agent_memory.persistence.retrying import AGAIN, Again
from agent_memory.ports import Action, ModelReply
from agent_memory.service.bot_memory import BotMemoryService, for_reader
from agent_memory.service.bot_memory_learn import learned_change
from agent_memory.service.bots import Members
from agent_memory.service.learning_pools import (
    Change,
    Deferred,
    Evidence,
    FinishActions,
    Outcome,
    PoolKind,
    PoolRef,
    Skipped,
    SourceRef,
    json_size,
)
from agent_memory.service.memory_bot_calls import RequestCalls
from agent_memory.service.sessions import OrgDefaults

KIND: PoolKind = "bot"
# The sealed evidence must fit one row; the rest is read by the next run.
MAX_ITEMS = 200
ITEM_BUDGET = 120_000
# How far past the read position a run without a last item looks.
MAX_SCAN = 1_000
# Held items of open Turns, so the read mark's row stays small.
MAX_HELD = 1_000
# Bytes of the entries shown to the model.
ENTRY_BUDGET = 120_000


def learning_pool_id(bot_id: str, org_id: str) -> str:
    """Each organization of a shared Bot has its own memory and executions."""
    return f"{bot_id}@{org_id}"


def pool_ref(chat: Chat) -> PoolRef:
    """The pool a Chat's Turns teach: its Bot's memory in the Chat's organization."""
    pool_id = learning_pool_id(chat.bot_id, chat.org_id)
    return PoolRef(KIND, chat.org_id, pool_id, SourceRef("chat", chat.id))


def bot_and_chat(pool: PoolRef) -> tuple[str, str]:
    """The Bot and the Chat a run of `pool` reads (`pool_ref` read back); Skipped when the
    pool names no Chat of a Bot in its organization."""
    suffix = f"@{pool.org_id}"
    if pool.source is None or not pool.pool_id.endswith(suffix):
        raise Skipped(SOURCE_GONE)
    return pool.pool_id.removesuffix(suffix), pool.source.id


@dataclass(frozen=True)
class BotDetail:
    """What a run read of one Chat besides its items (the Chat and its Bot are the pool's:
    `bot_and_chat`)."""

    actors: dict[str, str]
    read_mark: ReadMark
    read_mark_after: ReadMark
    instructions: str | None
    # The budget period CallModel charges its call to: the one its budget was checked in.
    budget_period: str
    # Topic counts are over every entry the model may see, not only those shown.
    entries: tuple[KnownBotEntry, ...]
    topic_counts: dict[str, int]

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> BotDetail:
        return cls(
            **{
                **data,
                "read_mark": _mark_of(data["read_mark"]),
                "read_mark_after": _mark_of(data["read_mark_after"]),
                "entries": tuple(
                    KnownBotEntry(e["id"], e["layer"], e["content"], tuple(e["topics"]))
                    for e in data["entries"]
                ),
            }
        )


class BotLearningPool:
    kind: PoolKind = KIND

    def __init__(
        self,
        memory: BotMemoryService,
        positions: MemoryBotRepository,
        org_settings: OrgDefaults,
        calls: RequestCalls,
    ) -> None:
        self._calls = calls
        self._bots = memory.bots.repo
        self._memory = memory
        self._positions = positions
        self._org_settings = org_settings
        self._clock = memory.clock

    def detail_of(self, data: Any) -> BotDetail:
        return BotDetail.of(data)

    def task(self, evidence: Evidence[BotDetail]) -> Ask[LearningInput, LearningChanges]:
        detail = evidence.detail
        items = tuple(
            TurnItem(item.id, item.role, detail.actors.get(item.id), item.content, item.app)
            for item in evidence.items
        )
        return Ask(
            LEARNING_CHANGES,
            LearningInput(items, detail.entries, detail.topic_counts, detail.instructions),
        )

    def load_evidence(self, pool: PoolRef, upto: int | None) -> Evidence[Any] | None:
        """Skipped when the Chat may not teach or waits for an open Turn; Deferred when the
        budget is spent."""
        chat, mark = self._chat_and_position(pool)
        model = self._model(chat)
        now = self._clock.now_ms()
        bot = self._within_budget(chat, now)
        # The chat row's count is not the last item: item writers never move it.
        through = mark.position + MAX_SCAN if upto is None else upto
        read = self._items(chat, mark, through, now)
        if not read.items:
            if read.waiting:
                raise Skipped(OPEN_TURN_AHEAD)
            return None
        return Evidence(
            pool=pool,
            position=mark.position,
            upto=read.mark.position,
            items=tuple(read.items),
            memory=(),
            model=model,
            allowed_kinds=("fact", "observation"),
            detail=BotDetail(
                read.actors,
                mark,
                read.mark,
                bot.instructions_in(chat.org_id),
                bot.period(now),
                *self._entries(chat),
            ),
        )

    def _model(self, chat: Chat) -> str | None:
        settings = self._org_settings.effective(chat.org_id)
        model = settings.get("botMemoryModel")
        skip = self._calls.skip(chat, settings)
        if skip is not None:
            raise Skipped(skip)
        return model

    def _within_budget(self, chat: Chat, now: int) -> BotSettings:
        """The memory Bot's settings; Deferred to the next period when its budget is spent."""
        bot, spent_micros = self._calls.settings.with_spent(chat.bot_id, now)
        budget = bot.budget
        if budget is not None and spent(budget, spent_micros):
            upcoming = next_period_key(budget.period, now)
            raise Deferred(budget_event(upcoming), budget_note(upcoming))
        return bot

    def charge(self, evidence: Evidence[BotDetail], reply: ModelReply) -> list[Action]:
        """The call's cost added to the Bot's spend of this period, over all organizations."""
        micros = self._calls.cost(reply)
        now = self._clock.now_ms()
        bot_id, _chat_id = bot_and_chat(evidence.pool)
        return [charge_action(bot_id, evidence.detail.budget_period, micros, now)]

    def _chat_and_position(self, pool: PoolRef) -> tuple[Chat, ReadMark]:
        """Skipped when the source is not a Chat of this pool's Bot in its organization."""
        bot_id, chat_id = bot_and_chat(pool)
        chat, mark = self._positions.chat_and_position(bot_id, pool.org_id, chat_id)
        if chat is None or (chat.bot_id, chat.org_id) != (bot_id, pool.org_id):
            raise Skipped(SOURCE_GONE)
        return chat, mark

    def _items(self, chat: Chat, mark: ReadMark, through: int, now: int) -> Read:
        """Held items whose Turn has ended, then newer ones; an open Turn's items are held,
        so no Turn stops another's learning."""
        held = [h for h in mark.held if h <= through]
        rows = self._bots.items_at(chat, held)
        gone = set(held) - {item.seq for item, _sealed in rows}
        if through > mark.position:
            limit = min(through - mark.position, MAX_SCAN)
            newer = self._bots.items(chat, after=mark.position, limit=limit)
            rows += [(item, sealed) for item, sealed in newer if item.seq <= through]
        turns = self._bots.turns(chat.id, [item.turn_id for item, _sealed in rows])
        read = Read(mark)
        used, looked, kept = 0, mark.position, len(mark.held)
        read_seqs: list[int] = []
        newly_held: list[int] = []
        for item, sealed in rows:
            turn = turns.get(item.turn_id)
            if turn is not None and not turn.ended(now):
                read.waiting = True
                if item.seq > mark.position:
                    if kept >= MAX_HELD:
                        break
                    newly_held.append(item.seq)
                    kept += 1
                    looked = item.seq
                continue
            if len(read.items) >= MAX_ITEMS:
                break
            content = self._bots.open_item(chat, item, sealed)
            used += json_size(content)
            if read.items and used > ITEM_BUDGET:
                break
            read.items.append(EvidenceItem(item.id, item.role, content, item.app, chat.id))
            if item.actor is not None:
                read.actors[item.id] = item.actor
            read_seqs.append(item.seq)
            if item.seq > mark.position:
                looked = item.seq
        read.mark = mark.moved(read_seqs, newly_held, gone, looked)
        return read

    def _entries(self, chat: Chat) -> tuple[tuple[KnownBotEntry, ...], dict[str, int]]:
        """Entries every reader of the Chat may see, so the model never copies words to a
        reader not allowed them; ApplyLearning reads the pool again for its change."""
        pool = bot_pool(chat.bot_id, chat.org_id)
        members = Members(self._bots, chat.owner, chat.org_id)
        # Only the audience rows that can admit the Chat's readers (ADR 0083).
        reader = chat_readers(chat.org_id, chat.owner, chat.channel_id, members)
        snap = self._memory.snapshot(for_reader(pool, reader, members))
        shown, topic_counts = learning_view(self._memory.seen_by(reader, members, snap))
        stored = snap.by_id()
        entries: list[KnownBotEntry] = []
        used = 0
        for meta in shown:
            content = self._memory.repo.pools.open_content(pool, stored[meta.id])
            used += json_size(content)
            if used > ENTRY_BUDGET:
                break
            entries.append(KnownBotEntry(meta.id, meta.layer, content, topics_of(meta)))
        return tuple(entries), topic_counts

    def lost(self, error: WriteConflict) -> bool:
        return self._memory.lost(error)

    def change(
        self, evidence: Evidence[BotDetail], changes: LearningChanges, finish: FinishActions
    ) -> Change | Again:
        """The answer as bot memory judges it, with the read mark's move in its transaction."""
        pool = evidence.pool
        detail = evidence.detail
        bot_id, chat_id = bot_and_chat(pool)
        now = self._clock.now_ms()
        move = position_move(
            pool_pk(bot_id, pool.org_id), chat_id, detail.read_mark, detail.read_mark_after, now
        )

        def ending(learned: Learned) -> list[Action]:
            # `learned_change` tells its own `memory.changed` in the same event row.
            return [move, *without(finish(_outcome(learned)), "memory.changed")]

        planned = learned_change(
            self._memory,
            bot_id,
            pool.org_id,
            chat_id,
            changes.changes,
            evidence=[item.id for item in evidence.items],
            also=ending,
        )
        if isinstance(planned, Again):
            return AGAIN
        actions, learned = planned
        return Change(actions, _outcome(learned))


@dataclass
class Read:
    """What a run reads of a Chat; `waiting` when items of open Turns were passed over."""

    mark: ReadMark
    items: list[EvidenceItem] = field(default_factory=list)
    actors: dict[str, str] = field(default_factory=dict)
    waiting: bool = False


def _mark_of(record: Mapping[str, Any]) -> ReadMark:
    return ReadMark(int(record["position"]), tuple(record["held"]), int(record["moves"]))


def _outcome(learned: Learned) -> Outcome:
    """Ids and reasons, never words or topics: a Bot's writer reads every run, not entries."""
    return Outcome(
        applied=[{"key": a.entry_id, "op": a.op} for a in learned.applied],
        rejected=[refusal_record(r.op, r.index, r.reason, r.ids) for r in learned.rejected],
    )
