"""The memory Bot's rows in the single table.

In the Chat's partition `CHAT#<chatId>` (persistence/bots.py), beside its items:
- `CONFESS#<at:013d>#<turnId>`: one confession, and the encrypted call log of its model
  call: `sealed` holds {text, answer} under {org, pool: chat id, field: details}, bound to
  the row, with {request, reply} beside them when a model was asked; `calm` and `at` in the
  clear, and the call's task, model, how it ended, tokens and latency. No ttl: the call
  lives and goes as the confession does (the Chat's erasure, persistence/erasure.py).
- `ENRICH#<at:013d>#<turnId>`: one rewritten input; `sealed` holds {input, original} the
  same way; the entry ids used (ids are metadata) in the clear.
- `CALL#<at:013d>#<turnId>#<task>`: the encrypted call log of the enrichment's model calls
  (its request holds memory entries' text), and of a confide whose confession could not be
  written: `sealed` holds {request, reply} the same way;
  the task, model, how it ended, tokens and latency in the clear; expires after `ttl` (7
  days, as the learning steps' saved calls). Attribute names differ from the learning
  steps' CALL# rows (`request`, `reply`, `usage`...), which the API may never write
  (template.yaml).

In the Bot's partition `BOT#<botId>` (persistence/bots.py):
- `MEMBOT`: the memory Bot's settings (`version`, `instructions`, `concurrency`, `budget`);
- `LEASE#<slot>`: one of the memory Bot's `concurrency` slots (`holder`, `expiresAt`), taken
  by a conditional write when absent or expired, deleted by its holder;
- `SPEND#<period>`: the confirmed model cost of that budget period in micro-USD over all
  organizations (`micros`), and how many calls had no price or no usage (`unknown`).

In the Bot memory pool's partition `BOTMEM#<botId>#<orgId>` (persistence/bot_memory.py):
- `LEARNPOS#<chatId>`: how far learning has read that Chat (persistence/positions.py).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from agent_memory.domain.bots import Chat
from agent_memory.domain.errors import VersionConflict, WriteConflict
from agent_memory.domain.memory_bot import (
    STALE_SETTINGS,
    BotSettings,
    Budget,
    BudgetPeriod,
    Confession,
    Enriched,
    ModelCall,
    ReadMark,
    period_key,
)
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import pool_pk
from agent_memory.persistence.bot_rows import bot_pk, chat_of, chat_pk
from agent_memory.persistence.keys import MEMORY_BOT_SK
from agent_memory.persistence.positions import mark_of
from agent_memory.persistence.rows import SealedRows, StoreRows
from agent_memory.ports import (
    Absent,
    AbsentOrLessThan,
    Delete,
    Equals,
    KeyRange,
    Put,
    Record,
    Update,
)

# The call log is kept as long as the learning steps' saved calls.
CALL_TTL_S = 7 * 24 * 3600
SEALED_FIELD = "details"
SETTINGS_VERSION = "memory-bot-settings-version"
PERIODS: tuple[BudgetPeriod, ...] = ("day", "month")
# A Chat's confessions or enrichments one answer lists (newest first).
LIST_LIMIT = 200


class MemoryBotRepository(SealedRows):
    def _scope(self, chat: Chat) -> dict[str, str]:
        return {"org": chat.org_id, "pool": chat.id, "field": SEALED_FIELD}

    # -- confessions and enrichments ---------------------------------------------------------

    def add_confession(
        self, chat: Chat, confession: Confession, call: ModelCall | None = None
    ) -> None:
        """Write the confession, with `call` (its model call, if one was made) on the same
        row as its call log entry: one write per confide. The row has one `at`,
        the confession's (the call ended just before it)."""
        sk = keys.timed_sk(keys.CONFESSION_PREFIX, confession.at, confession.turn_id)
        payload: dict[str, Any] = {"text": confession.text, "answer": confession.answer}
        if call is not None:
            payload |= {"request": call.request, "reply": call.reply}
        sealed = json.dumps(payload, ensure_ascii=False)
        row = self._row(chat, sk, "confession", confession.turn_id, confession.at, sealed)
        row["calm"] = confession.calm
        if call is not None:
            row |= _call_attributes(call)
        self._store.write([Put(row, Absent())])

    def confessions(self, chat: Chat) -> list[Confession]:
        """The Chat's confessions, newest first."""
        return [
            Confession(
                str(row["turnId"]),
                str(opened["text"]),
                str(opened["answer"]),
                bool(row["calm"]),
                int(row["at"]),
            )
            for row, opened in self._newest(chat, keys.CONFESSION_PREFIX)
        ]

    def add_enrichment(self, chat: Chat, enriched: Enriched) -> None:
        sk = keys.timed_sk(keys.ENRICHMENT_PREFIX, enriched.at, enriched.turn_id)
        sealed = json.dumps({"input": enriched.input, "original": enriched.original})
        row = self._row(chat, sk, "enrichment", enriched.turn_id, enriched.at, sealed)
        row["entryIds"] = list(enriched.entry_ids)
        self._store.write([Put(row, Absent())])

    def enrichments(self, chat: Chat) -> list[Enriched]:
        """The Chat's rewritten inputs, newest first."""
        return [
            Enriched(
                str(row["turnId"]),
                str(opened["input"]),
                str(opened["original"]),
                tuple(str(i) for i in row.get("entryIds") or ()),
                int(row["at"]),
            )
            for row, opened in self._newest(chat, keys.ENRICHMENT_PREFIX)
        ]

    def log_call(self, chat: Chat, call: ModelCall) -> None:
        """Save one model call on a call log row of its own (7 days)."""
        sk = keys.timed_sk(keys.CALL_PREFIX, call.at, f"{call.turn_id}#{call.task}")
        sealed = json.dumps({"request": call.request, "reply": call.reply}, ensure_ascii=False)
        row = self._row(chat, sk, "memory-bot-call", call.turn_id, call.at, sealed)
        row |= _call_attributes(call) | {"ttl": call.at // 1000 + CALL_TTL_S}
        self._store.write([Put(row)])

    def _row(self, chat: Chat, sk: str, kind: str, turn_id: str, at: int, sealed: str) -> Record:
        """A row of the Chat's partition with its `sealed` attribute."""
        return {
            "pk": chat_pk(chat.id),
            "sk": sk,
            "type": kind,
            "turnId": turn_id,
            "at": at,
            "sealed": self._cipher.seal(sealed, scope=self._scope(chat), row=sk),
        }

    def _newest(self, chat: Chat, prefix: str) -> list[tuple[Record, dict[str, Any]]]:
        """The Chat's rows under `prefix`, newest first, each with its `sealed` opened."""
        span = KeyRange(prefix=prefix)
        page = self._store.query(chat_pk(chat.id), span, limit=LIST_LIMIT, newest_first=True)
        scope = self._scope(chat)
        return [
            (row, json.loads(self._cipher.open(bytes(row["sealed"]), scope=scope, row=row["sk"])))
            for row in page.records
        ]

    # -- the read position of learning, per Chat ---------------------------------------------

    def chat_and_position(
        self, bot_id: str, org_id: str, chat_id: str
    ) -> tuple[Chat | None, ReadMark]:
        """A Chat's row and the learning's read mark for it in the pool of `bot_id` in
        `org_id` (nothing read yet when never moved), in one batch read: LoadEvidence knows
        both keys from its pool and source before it reads."""
        chat_key = (chat_pk(chat_id), keys.HEAD)
        position_key = (pool_pk(bot_id, org_id), keys.position_sk(chat_id))
        rows = {
            (str(r["pk"]), str(r["sk"])): r for r in self._store.get_many([chat_key, position_key])
        }
        chat_row = rows.get(chat_key)
        chat = (
            chat_of(chat_row) if chat_row is not None and chat_row.get("type") == "chat" else None
        )
        return chat, mark_of(rows.get(position_key))


class BotSettingsRepository(StoreRows):
    """The memory Bot's settings and spend rows of a Bot."""

    def get(self, bot_id: str) -> BotSettings:
        return _settings_of(self._store.get(bot_pk(bot_id), MEMORY_BOT_SK))

    def with_spent(self, bot_id: str, now_ms: int) -> tuple[BotSettings, int]:
        """The settings and the spend of the period `now_ms` falls in that they budget (the
        month's when no budget), in one batch read."""
        pk = bot_pk(bot_id)
        periods = [period_key(p, now_ms) for p in PERIODS]
        wanted = [(pk, MEMORY_BOT_SK)] + [(pk, keys.spend_sk(p)) for p in periods]
        rows = {str(r["sk"]): r for r in self._store.get_many(wanted)}
        settings = _settings_of(rows.get(MEMORY_BOT_SK))
        spend = rows.get(keys.spend_sk(settings.period(now_ms)))
        return settings, int(spend.get("micros", 0)) if spend is not None else 0

    def save(self, bot_id: str, settings: BotSettings, now: int) -> None:
        """Write `settings`, conditional on the version before it (409 when it moved)."""
        before = settings.version - 1
        condition = Absent() if before == 0 else Equals("version", before, name=SETTINGS_VERSION)
        row: Record = {
            "pk": bot_pk(bot_id),
            "sk": MEMORY_BOT_SK,
            "type": "memory-bot-settings",
            "version": settings.version,
            "instructions": settings.instructions,
            "concurrency": settings.concurrency,
            "budget": None
            if settings.budget is None
            else {"period": settings.budget.period, "limitMicros": settings.budget.limit_micros},
            "home": settings.home,
            "updatedAt": now,
        }
        try:
            self._store.write([Put(row, condition)])
        except WriteConflict as error:
            raise VersionConflict(STALE_SETTINGS.format(expected=before), ["expected"]) from error

    def spent(self, bot_id: str, period: str) -> int:
        row = self._store.get(bot_pk(bot_id), keys.spend_sk(period))
        return int(row.get("micros", 0)) if row is not None else 0

    def charge(self, bot_id: str, period: str, micros: int | None, now: int) -> None:
        """Add one call's confirmed cost to the period (`None`: unknown, counted apart)."""
        self._store.write([charge_action(bot_id, period, micros, now)])

    def take_slot(self, bot_id: str, slots: int, holder: str, now: int, ttl_ms: int) -> int | None:
        """Take one of `slots` leases (absent or expired) for `holder`: its number, or
        None when all are held. One conditional write per slot tried."""
        for slot in range(slots):
            row: Record = {
                "pk": bot_pk(bot_id),
                "sk": keys.lease_sk(slot),
                "type": "memory-bot-lease",
                "holder": holder,
                "expiresAt": now + ttl_ms,
            }
            try:
                self._store.write([Put(row, AbsentOrLessThan("expiresAt", now))])
                return slot
            except WriteConflict:
                continue
        return None

    def free_slot(self, bot_id: str, slot: int, holder: str) -> None:
        """Give back `holder`'s lease (one it no longer holds, expired and taken, stays)."""
        with contextlib.suppress(WriteConflict):
            self._store.write(
                [Delete(bot_pk(bot_id), keys.lease_sk(slot), Equals("holder", holder))]
            )


def charge_action(bot_id: str, period: str, micros: int | None, now: int) -> Update:
    """One call's cost added to the period's spend, for the caller's own write
    (`None`: no price or no usage, counted as unknown)."""
    add = {"micros": micros} if micros is not None else {"unknown": 1}
    return Update(
        bot_pk(bot_id),
        keys.spend_sk(period),
        set={"type": "memory-bot-spend", "updatedAt": now},
        add=add,
    )


def _call_attributes(call: ModelCall) -> Record:
    """What a call log entry keeps in the clear: the task, the model, how it ended, the
    tokens and the latency."""
    return {
        "task": call.task,
        "model": call.model,
        "ended": call.ended,
        "tokens": list(call.tokens) if call.tokens is not None else None,
        "ms": call.latency_ms,
    }


def _settings_of(row: Record | None) -> BotSettings:
    """The settings a `MEMBOT` row holds (the defaults when there is none)."""
    if row is None:
        return BotSettings()
    raw = row.get("budget")
    budget = Budget(raw["period"], int(raw["limitMicros"])) if raw else None
    concurrency = row.get("concurrency")
    return BotSettings(
        int(row["version"]),
        row.get("instructions"),
        int(concurrency) if concurrency is not None else None,
        budget,
        row.get("home"),
    )
