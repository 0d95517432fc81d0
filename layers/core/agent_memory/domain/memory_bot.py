"""The memory Bot's rules (seed 002, "The memory Bot", "Confessions and additions"): when a
Bot may confide, when a confide teaches, what a confession and an enrichment record, and
who sees them. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from agent_memory.domain.bot_memory import topics_of
from agent_memory.domain.bots import TURN_ABANDONED, Chat, Turn
from agent_memory.domain.bounds import MAX_MEMORY_BOT_CONCURRENCY, MAX_MEMORY_BOT_INSTRUCTIONS
from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.errors import ChatConflict, ValidationFailed, VersionConflict

REVIEW_HAS_NO_CONFIDE = "a review chat has no confide tool"
CONFIDE_NEEDS_OPEN_TURN = "the turn completed; confide belongs to an open turn"
ONLY_OWNER_READS = "only the chat's owner sees its confessions and enrichments"
# Why a confide teaches nothing (it is still answered).
REVIEW_TEACHES_NOTHING = "a review chat teaches nothing"
BOT_MEMORY_OFF = "botMemory is off in this organization"
NO_MODEL = "the organization names no botMemoryModel this deployment has"
# A confide's learning whose Turn never completed: it never starts (docs/adr/0025).
TURN_WAS_ABANDONED = (
    "its turn was closed as abandoned (not completed within 24 hours of its last item); "
    "its items are read by the chat's next learning run"
)


def may_confide(chat: Chat, turn: Turn, now_ms: int) -> None:
    """A Bot confides during an open Turn of a Chat that is not a review (409 otherwise)."""
    if chat.kind == "review":
        raise ChatConflict(REVIEW_HAS_NO_CONFIDE)
    state = turn.state(now_ms)
    if state == "abandoned":
        raise ChatConflict(TURN_ABANDONED)
    if state != "open":
        raise ChatConflict(CONFIDE_NEEDS_OPEN_TURN)


def learning_skip(chat: Chat, *, bot_memory: bool, has_model: bool) -> str | None:
    """Why the memory Bot reads nothing of `chat`: a confide in it saves no learning
    execution and a person's input is not enriched (None: it reads)."""
    if chat.kind == "review":
        return REVIEW_TEACHES_NOTHING
    if not bot_memory:
        return BOT_MEMORY_OFF
    if not has_model:
        return NO_MODEL
    return None


@dataclass(frozen=True)
class ReadMark:
    """How far learning has read one Chat (docs/adr/0024): every item through `position`
    except the `held` ones, items of Turns still open when a run read past them, which a
    later run reads once their Turn has ended. `moves` counts the moves: a run's move is
    conditional on the count it read, so the same evidence is never applied twice."""

    position: int = 0
    held: tuple[int, ...] = ()
    moves: int = 0

    def moved(
        self, read: Iterable[int], held: Iterable[int], gone: Iterable[int], through: int
    ) -> ReadMark:
        """The mark once a run read `read`, held back `held` (items of open Turns after the
        position), found `gone` of the held ones deleted, and looked through `through`."""
        done = set(read) | set(gone)
        kept = {h for h in self.held if h not in done} | set(held)
        position = max(self.position, through)
        return ReadMark(position, tuple(sorted(kept)), self.moves + 1)


def turn_event(org_id: str, chat_id: str, turn_id: str) -> str:
    """The event a confide's learning waits for: its Turn completing."""
    return f"turn:{org_id}:{chat_id}:{turn_id}"


def turn_of_event(event: str | None) -> str | None:
    """The Turn id a `turn_event` names (None for any other event)."""
    if not event or not event.startswith("turn:"):
        return None
    parts = event.split(":")
    return parts[3] if len(parts) == 4 else None


def learning_view(seen: Sequence[EntryMeta]) -> tuple[Sequence[EntryMeta], dict[str, int]]:
    """What the learning task shows its model of `seen` (valid entries in memory order, as
    `BotMemoryService.seen_by` answers them): the first `MAX_ENTRIES`, and topic counts over
    all of them."""
    # The learning task's rules load with learning, not with the bot routes' settings.
    from agent_memory.domain.tasks.learning_changes import MAX_ENTRIES

    counts = Counter(topic for m in seen for topic in topics_of(m))
    return seen[:MAX_ENTRIES], dict(counts)


@dataclass(frozen=True)
class Confession:
    """One confide: what the Bot said, what it was answered, and whether calmly."""

    turn_id: str
    text: str
    answer: str
    calm: bool
    at: int


@dataclass(frozen=True)
class Enriched:
    """One rewritten input: the new text, the person's words and the entries used."""

    turn_id: str
    input: str
    original: str
    entry_ids: tuple[str, ...]
    at: int


@dataclass(frozen=True)
class ModelCall:
    """One request-path call of the memory Bot's model (confide, enrichment) for the
    encrypted call log: the request and the reply are content (sealed at rest)."""

    turn_id: str
    task: str
    model: str
    request: str
    reply: str | None
    # How it ended: `answered`, `timeout`, `no_slot`, or the provider's failure kind.
    ended: str
    tokens: tuple[int, int] | None
    latency_ms: float | None
    at: int


def used_reason(used: Sequence[str], allowed: Iterable[str]) -> str | None:
    """Why an enrichment's `used` voids the rewrite: an entry the readers may not see, or
    none named at all (a rewrite must say what it used). None: the rewrite stands."""
    shown = set(allowed)
    if not used:
        return "the rewrite names no entry it used"
    for entry_id in used:
        if entry_id not in shown:
            return f"{entry_id!r} is not an entry every reader of the chat may see"
    return None


# --- The memory Bot's settings, budget and cost -------------------------------------------

BudgetPeriod = Literal["day", "month"]
STALE_SETTINGS = "the memory bot's settings changed since version {expected}; read them again"


@dataclass(frozen=True)
class Budget:
    """The most confirmed model cost per period, in micro-USD, over all organizations."""

    period: BudgetPeriod
    limit_micros: int


@dataclass(frozen=True)
class BotSettings:
    """The memory Bot's settings of one Bot (version 0: never written)."""

    version: int = 0
    instructions: str | None = None
    concurrency: int | None = None
    budget: Budget | None = None
    # The Bot's own organization, whose writers set these: a linked organization is
    # another tenant, and the home organization's rules never steer its memory Bot.
    home: str | None = None

    def instructions_in(self, org_id: str) -> str | None:
        """The instructions the memory Bot follows for a Chat of `org_id`."""
        return self.instructions if org_id == self.home else None

    def period(self, now_ms: int) -> str:
        """The period `now_ms` falls in that spend is counted by: the budget's, else the
        month."""
        return period_key(self.budget.period if self.budget else "month", now_ms)


def patched_settings(
    current: BotSettings, expected: int, changes: Mapping[str, Any], home: str
) -> BotSettings:
    """The settings after a PATCH: a field sent sets it, null removes it, a missing one
    stays; the version moves by one. 409 VersionConflict when `expected` is stale; 400
    naming the field for a value out of bounds."""
    if expected != current.version:
        raise VersionConflict(STALE_SETTINGS.format(expected=expected), ["expected"])
    instructions = changes.get("instructions", current.instructions)
    if instructions is not None and (
        not instructions.strip() or len(instructions) > MAX_MEMORY_BOT_INSTRUCTIONS
    ):
        raise ValidationFailed(
            f"instructions are 1 to {MAX_MEMORY_BOT_INSTRUCTIONS} characters, or null",
            ["instructions"],
        )
    concurrency = changes.get("concurrency", current.concurrency)
    if concurrency is not None and not 1 <= concurrency <= MAX_MEMORY_BOT_CONCURRENCY:
        raise ValidationFailed(
            f"concurrency is 1 to {MAX_MEMORY_BOT_CONCURRENCY}, or null", ["concurrency"]
        )
    budget = current.budget
    if "budget" in changes:
        raw = changes["budget"]
        budget = None if raw is None else Budget(raw["period"], int(raw["limitMicros"]))
        if budget is not None and budget.limit_micros < 0:
            raise ValidationFailed("limitMicros is 0 or more", ["budget", "limitMicros"])
    return BotSettings(current.version + 1, instructions, concurrency, budget, home)


def period_key(period: BudgetPeriod, now_ms: int) -> str:
    """The budget period `now_ms` falls in (UTC): `day:2026-12-01` or `month:2026-12`."""
    moment = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    return f"day:{moment:%Y-%m-%d}" if period == "day" else f"month:{moment:%Y-%m}"


def next_period_key(period: BudgetPeriod, now_ms: int) -> str:
    """The budget period after the one `now_ms` falls in (UTC)."""
    moment = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    if period == "day":
        return f"day:{moment.date() + timedelta(days=1):%Y-%m-%d}"
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return f"month:{year:04d}-{month:02d}"


def budget_event(period: str) -> str:
    """The event a budget period starting is (`budget:day:2026-12-02`): learning skipped
    while a budget was spent waits for the next period's; one event for every Bot, so the
    tick that starts a period releases them all with one Query."""
    return f"budget:{period}"


def budget_events(now_ms: int) -> tuple[str, str]:
    """The events of the day and of the month `now_ms` falls in (the tick releases both)."""
    return budget_event(period_key("day", now_ms)), budget_event(period_key("month", now_ms))


def spent(budget: Budget | None, spent_micros: int) -> bool:
    """The budget is spent when the confirmed cost reached its limit (API.md)."""
    return budget is not None and spent_micros >= budget.limit_micros


@dataclass(frozen=True)
class Price:
    """A model's list price in micro-USD per million tokens."""

    input_micros_per_mtok: int
    output_micros_per_mtok: int


def parse_prices(text: str | None) -> dict[str, Price]:
    """The deployment's price table (`MODEL_PRICES`): JSON mapping a model name
    (`provider/model`) to `[input, output]` micro-USD per million tokens. A malformed table
    is a configuration error at start, never a silent zero."""
    if not text:
        return {}
    table = json.loads(text)
    if not isinstance(table, dict):
        raise ValueError("MODEL_PRICES is a JSON object of model name -> [input, output]")
    prices: dict[str, Price] = {}
    for name, pair in table.items():
        valid = isinstance(pair, list) and len(pair) == 2
        if not valid or not all(isinstance(p, int) and p >= 0 for p in pair):
            raise ValueError(f"MODEL_PRICES[{name!r}] must be [input, output] whole micro-USD")
        prices[str(name)] = Price(pair[0], pair[1])
    return prices


def cost_micros(price: Price | None, input_tokens: int, output_tokens: int) -> int | None:
    """The cost of one call's confirmed usage; None when the model has no price (unknown)
    or the provider confirmed no usage."""
    if price is None or (input_tokens <= 0 and output_tokens <= 0):
        return None
    total = (
        input_tokens * price.input_micros_per_mtok + output_tokens * price.output_micros_per_mtok
    )
    return -(-total // 1_000_000)  # rounded up: a call is never free
