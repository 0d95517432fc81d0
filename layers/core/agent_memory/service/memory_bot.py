"""The memory Bot (seed 002, "The memory Bot"; API.md "Bots, channels and chats"): it
answers a confide at once, saves the learning that waits for the confide's Turn, releases
it when the Turn completes, lists executions, confessions and enrichments, and rewrites a
person's input with the entries every reader of the Chat may see.

Request-path model calls (confide, enrichment) wait at most 15 s (`WINDOW_S`): the call runs
in a worker thread and is abandoned past its window (the provider's own timeout, given the
same deadline, ends it); then the calm answer or the unchanged input stands.
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

from agent_memory.domain.audiences import Reader, chat_readers, valid
from agent_memory.domain.bot_memory import channels_named, memory_order
from agent_memory.domain.bots import Chat, Turn, check_content, person_of
from agent_memory.domain.errors import NotFound, Unavailable
from agent_memory.domain.identity import Principal
from agent_memory.domain.memory_bot import (
    TURN_WAS_ABANDONED,
    BotSettings,
    Confession,
    Enriched,
    ModelCall,
    Price,
    budget_events,
    cost_micros,
    enriches,
    learning_skip,
    may_confide,
    owner_only,
    patched_settings,
    period_key,
    spent,
    topics_of,
    turn_event,
    turn_of_event,
    used_reason,
)
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.domain.tasks.confide_answer import CALM_ANSWER, CONFIDE_ANSWER
from agent_memory.domain.tasks.confide_answer import Confession as ConfideInput
from agent_memory.domain.tasks.enrichment import (
    ENRICHMENT,
    ENRICHMENT_DEADLINE_S,
    EnrichmentInput,
    VisibleEntry,
)
from agent_memory.persistence.bot_memory import Snapshot, pool_of
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.memory_bot import BotSettingsRepository, MemoryBotRepository
from agent_memory.ports import (
    Clock,
    LearningModel,
    ModelCatalog,
    ModelFailure,
    ModelReply,
)
from agent_memory.service.bot_learning import KIND, learning_pool_id, pool_ref
from agent_memory.service.bot_memory import BotMemoryService
from agent_memory.service.bots import BotService, Members
from agent_memory.service.learning import LearningService
from agent_memory.service.learning_pools import PoolRef
from agent_memory.service.sessions import OrgDefaults

log = logging.getLogger(__name__)

T = TypeVar("T")

# Seed 002: the confide answer and the new input wait at most 15 seconds.
WINDOW_S = ENRICHMENT_DEADLINE_S
# The entries an enrichment may show the model: the first valid ones every reader sees.
ENRICH_ENTRIES = 50
EXECUTIONS_LIMIT = 100
# A concurrency slot outlives a holder that crashed by this much (the call's own deadline is
# the 15 s window).
LEASE_TTL_MS = 60_000
# How often a request waiting for a free slot tries again.
SLOT_POLL_S = 0.05
# Request-path model calls in flight per process; a call past its window keeps its worker
# until the provider's timeout ends it.
_WORKERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="memory-bot")


def _within(
    seconds: float, call: Callable[[], T], done: Callable[[], None] | None = None
) -> tuple[T | None, str]:
    """`call()`'s result and how the call ended (`answered`, `timeout`, or the failure's
    kind); no result when it failed as a model may or took over `seconds`. `done` runs when
    the call ends, even after its window passed (a concurrency slot is held until the
    provider's call really ends)."""
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


def _parsed(parse: Callable[[], T]) -> T | None:
    """The parsed answer, or None when the model's text is not one."""
    try:
        return parse()
    except InvalidModelOutput:
        log.warning("memory bot: the model's answer was not valid")
        return None


class MemoryBotService:
    def __init__(
        self,
        bots: BotService,
        memory: BotMemoryService,
        repo: MemoryBotRepository,
        runs: ExecutionRepository,
        org_settings: OrgDefaults,
        models: ModelCatalog | None,
        clock: Clock,
        learning: LearningService | None = None,
        *,
        settings: BotSettingsRepository,
        prices: Mapping[str, Price] | None = None,
    ) -> None:
        self._settings = settings
        # The deployment's price table (`provider/model` -> Price); a model without a price
        # is charged as unknown.
        self.prices = dict(prices or {})
        self._bots = bots
        self._memory = memory
        self.repo = repo
        self._runs = runs
        self._org_settings = org_settings
        self._models = models
        self._clock = clock
        self._learning = learning

    def _model(self, settings: dict[str, Any]) -> LearningModel | None:
        name = settings.get("botMemoryModel")
        if name is None or self._models is None:
            return None
        return self._models.resolve(name)

    # -- settings, budget and cost ---------------------------------------------------------

    def _period(self, settings: BotSettings) -> str:
        period = settings.budget.period if settings.budget else "month"
        return period_key(period, self._clock.now_ms())

    def _spent(self, bot_id: str, settings: BotSettings) -> int:
        return self._settings.spent(bot_id, self._period(settings))

    def _usable(
        self, chat: Chat, org_settings: dict[str, Any]
    ) -> tuple[LearningModel | None, BotSettings]:
        """The model to ask for `chat` (None: no model, or the Bot's budget is spent) and
        the memory Bot's settings."""
        now = self._clock.now_ms()
        periods = {"day": period_key("day", now), "month": period_key("month", now)}
        bot, spent_micros = self._settings.with_spent(chat.bot_id, periods)
        model = self._model(org_settings)
        if model is not None and spent(bot.budget, spent_micros):
            return None, bot
        return model, bot

    def _ask(
        self, bot_id: str, settings: BotSettings, call: Callable[[], T]
    ) -> tuple[T | None, str]:
        """`call()` within the 15 s window, counting the wait for a free concurrency slot
        (`concurrency` across every server: leases in the table), and how it ended; no
        result when no slot came free (`no_slot`) or the model did not answer in time."""
        deadline = time.monotonic() + WINDOW_S
        slots = settings.concurrency
        if slots is None:
            return _within(WINDOW_S, call)
        repo, holder = self._settings, uuid.uuid4().hex
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
        """Add a call's confirmed cost to the period. Best effort: the answer stands."""
        if reply is None:
            return
        usage = reply.usage
        micros = cost_micros(self.prices.get(reply.model), usage.input_tokens, usage.output_tokens)
        try:
            self._settings.charge(bot_id, self._period(settings), micros, self._clock.now_ms())
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
        """A call for the Chat's encrypted call log (request and reply sealed, as the
        learning steps save theirs): no reply, tokens nor latency when the model failed,
        took over its window or had no free slot."""
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

    def _log_call(
        self,
        chat: Chat,
        turn_id: str,
        model: str,
        request: ModelRequest,
        reply: ModelReply | None,
        ended: str,
    ) -> None:
        """The call on a call log row of its own. Best effort: the answer stands without it."""
        self._save_call(chat, self._model_call(turn_id, model, request, reply, ended))

    def _save_call(self, chat: Chat, call: ModelCall) -> None:
        try:
            self.repo.log_call(chat, call)
        except Unavailable:
            log.warning("memory bot: a model call was not saved in the call log")

    def bot_settings(self, principal: Principal, bot_id: str) -> tuple[BotSettings, int]:
        """The memory Bot's settings and this period's spend (write on a Bot not linked)."""
        bot, _reach = self._bots.reach(principal, bot_id, "configure")
        settings = self._settings.get(bot.id)
        return settings, self._spent(bot.id, settings)

    def patch_bot_settings(
        self, principal: Principal, bot_id: str, expected: int, changes: Mapping[str, Any]
    ) -> tuple[BotSettings, int]:
        """Set, remove (null) or keep (missing) `instructions`, `concurrency`, `budget`;
        409 VersionConflict when `expected` is not the current version."""
        bot, _reach = self._bots.reach(principal, bot_id, "configure")
        after = patched_settings(self._settings.get(bot.id), expected, changes, bot.org_id)
        self._settings.save(bot.id, after, self._clock.now_ms())
        return after, self._spent(bot.id, after)

    # -- confide -----------------------------------------------------------------------------

    def confide(self, principal: Principal, chat_id: str, turn_id: str, text: str) -> Confession:
        """The memory Bot's answer to a confession during an open Turn (409 ChatConflict in
        a review Chat or after the Turn completed), recorded sealed; the calm answer when no
        model answers within 15 s. A Chat that teaches saves learning that waits for the
        Turn to complete."""
        person_of(principal)
        check_content(text, ["text"])
        chat, turn = self._bots.repo.chat_and_turn(chat_id, turn_id)
        if chat is None:
            raise NotFound("chat not found")
        self._bots.may_read(principal, chat)
        if turn is None:
            raise NotFound("turn not found")
        may_confide(chat, turn, self._clock.now_ms())
        settings = self._org_settings.effective(chat.org_id)
        usable, bot = self._usable(chat, settings)
        answer: str | None = None
        call: ModelCall | None = None
        if usable is not None:
            model = usable
            asked = ConfideInput(text, bot.instructions_in(chat.org_id))
            request = CONFIDE_ANSWER.request(asked, deadline_s=WINDOW_S)
            replied, ended = self._ask(chat.bot_id, bot, lambda: model.propose(request))
            self._charge(chat.bot_id, bot, replied)
            call = self._model_call(turn.id, model.name, request, replied, ended)
            parsed = _parsed(lambda: CONFIDE_ANSWER.parse(replied.text, asked)) if replied else None
            answer = parsed.answer if parsed is not None else None
        calm = answer is None
        confession = Confession(turn.id, text, answer or CALM_ANSWER, calm, self._clock.now_ms())
        self._confess(chat, confession, call)
        skip = learning_skip(
            chat,
            bot_memory=bool(settings.get("botMemory")),
            has_model=self._model(settings) is not None,
        )
        if skip is None and self._learning is not None:
            self._wait(chat, turn.id)
        elif skip is not None and self._learning is not None:
            self._skip(chat, turn, skip)
        return confession

    def _confess(self, chat: Chat, confession: Confession, call: ModelCall | None) -> None:
        """The confession, with its model call as its call log entry on the same row (one
        write). When that write fails the confide fails, and the call is still saved on a
        call log row of its own (best effort): the model was asked and charged."""
        try:
            self.repo.add_confession(chat, confession, call)
        except Unavailable:
            if call is not None:
                self._save_call(chat, call)
            raise

    def _wait(self, chat: Chat, turn_id: str) -> None:
        """Save the learning of this confide, waiting for its Turn. The answer is given
        whether or not the wait is saved (a later confide of the Turn saves it)."""
        assert self._learning is not None  # the caller checked
        event = turn_event(chat.org_id, chat.id, turn_id)
        try:
            self._learning.wait(pool_ref(chat), event=event, reason="confide")
        except Unavailable:
            log.warning("memory bot: the learning of a confide was not saved")

    def _skip(self, chat: Chat, turn: Turn, note: str) -> None:
        """Record the learning of this confide as skipped, with why (no model, botMemory
        off), once per Turn. The answer is given whether or not it is recorded."""
        assert self._learning is not None  # the caller checked
        event = turn_event(chat.org_id, chat.id, turn.id)
        try:
            self._learning.skipped(
                pool_ref(chat), event=event, reason="confide", note=note, at=turn.created_at
            )
        except Unavailable:
            log.warning("memory bot: the skipped learning of a confide was not recorded")

    def turn_completed(
        self, chat_id: str, turn_id: str, *, completed: tuple[Chat, Turn] | None = None
    ) -> None:
        """Release the learning waiting on this Turn, through the Turn's last item (never
        the Chat's: items of another Turn still open are not read early). `completed`: the
        Chat and Turn as the completion of this request left them (`BotService.finish_turn`),
        else read. Raises Unavailable when it could not (completing again releases it)."""
        if completed is not None and completed[1].id == turn_id:
            chat, found = completed
            turn: Turn | None = found
        else:
            chat_or_none, turn = self._bots.repo.chat_and_turn(chat_id, turn_id)
            if chat_or_none is None:
                return
            chat = chat_or_none
        if turn is None or chat.kind == "review" or self._learning is None:
            return
        self._learning.release(turn_event(chat.org_id, chat.id, turn_id), upto=turn.last_item)

    def wake_learning(self) -> int:
        """The budget tick (a schedule, docs/decisions.md): the budget periods `now` falls in
        have started, so learning skipped while a budget was spent starts again (each run
        once, however often the tick comes). Answers how many runs this call started.
        Raises Unavailable when the table or the workflow failed (the next tick retries)."""
        if self._learning is None:
            return 0
        started = 0
        for event in budget_events(self._clock.now_ms()):
            started += sum(run.started for run in self._learning.wake(event))
        return started

    # -- lists -------------------------------------------------------------------------------

    def confessions(self, principal: Principal, chat_id: str) -> list[Confession]:
        """The Chat's confessions, newest first: its owner only."""
        chat, _members = self._bots.readable_chat(principal, chat_id)
        owner_only(principal, chat)
        return self.repo.confessions(chat)

    def enrichments(self, principal: Principal, chat_id: str) -> list[Enriched]:
        """The Chat's rewritten inputs, newest first: its owner only."""
        chat, _members = self._bots.readable_chat(principal, chat_id)
        owner_only(principal, chat)
        return self.repo.enrichments(chat)

    def executions(self, principal: Principal, bot_id: str) -> list[dict[str, Any]]:
        """The Bot's learning executions in the caller's organization, newest first: all of
        them for a writer of the Bot, else those of Chats the caller owns."""
        user, _org = person_of(principal)
        bot, reach = self._bots.reach(principal, bot_id, "read")
        if self._learning is None:
            return []
        pool_id = learning_pool_id(bot.id, reach.org_id)
        pool = PoolRef(KIND, reach.org_id, pool_id)
        rows = self._runs.newest(KIND, reach.org_id, pool_id, EXECUTIONS_LIMIT)
        waits = {row.run.name: row.record.get("waitFor") for row in rows}
        views = self._learning.executions(pool, limit=EXECUTIONS_LIMIT)
        owned: dict[str, bool] = {}
        shown: list[dict[str, Any]] = []
        for view in views:
            chat_id = view.pop("sessionId", None)
            if reach.level != "write":
                if chat_id is None:
                    continue
                if chat_id not in owned:
                    chat = self._bots.repo.get_chat(chat_id)
                    owned[chat_id] = chat is not None and chat.owner == user
                if not owned[chat_id]:
                    continue
            view["chatId"] = chat_id
            view["turnId"] = turn_of_event(waits.get(view["id"]))
            shown.append(view)
        self._abandoned_waits(shown)
        return shown

    def _abandoned_waits(self, shown: list[dict[str, Any]]) -> None:
        """A wait whose Turn was abandoned never starts (that Turn never completes): it is
        shown skipped, with why. The Turns of waiting runs only are read (few, rare route)."""
        waiting: dict[str, list[dict[str, Any]]] = {}
        for view in shown:
            if view["status"] == "waiting" and view.get("chatId") and view.get("turnId"):
                waiting.setdefault(view["chatId"], []).append(view)
        now = self._clock.now_ms()
        for chat_id, views in waiting.items():
            turns = self._bots.repo.turns(chat_id, [v["turnId"] for v in views])
            for view in views:
                found = turns.get(view["turnId"])
                if found is not None and found.state(now) == "abandoned":
                    view["status"], view["note"] = "skipped", TURN_WAS_ABANDONED

    # -- enrichment ----------------------------------------------------------------------------

    def enrich(
        self,
        principal: Principal,
        chat_id: str,
        turn_id: str,
        text: str,
        *,
        notice: bool,
        chat: Chat | None = None,
    ) -> tuple[str, bool]:
        """The input the Bot's model should see, and whether the memory Bot rewrote it:
        with entries every reader of the Chat may see, when they help and the model answers
        within 15 s; every entry the model says it used is checked again before the rewrite
        is returned. Unchanged otherwise (a notice, a review Chat, botMemory off). `chat`:
        the Chat as the Turn's start read it in this request (not read again: what the
        enrichment uses of it never changes)."""
        if notice:
            return text, False  # a notice is never a person's words: nothing is read
        if chat is None or chat.id != chat_id:
            chat = self._bots.repo.get_chat(chat_id)
        if chat is None:
            return text, False
        settings = self._org_settings.effective(chat.org_id)
        if not enriches(
            chat,
            notice=notice,
            bot_memory=bool(settings.get("botMemory")),
            has_model=self._model(settings) is not None,
        ):
            return text, False
        usable, bot = self._usable(chat, settings)
        if usable is None:
            return text, False  # the budget is spent
        pool = pool_of(chat.bot_id, chat.org_id)
        # The head, then the entries (no second head read): every row is at least as new
        # as `snap.version`, and they are one state unless a change commits meanwhile,
        # which the version read after the model answers finds (it moved), so the entries
        # the model used are then checked on a fresh snapshot.
        snap = self._memory.repo.read_for_change(pool)
        visible = self._visible(chat, snap)
        if not visible:
            return text, False  # nothing the readers may see: the model is not asked
        model = usable
        asked = EnrichmentInput(text, tuple(visible), bot.instructions_in(chat.org_id))
        request = ENRICHMENT.request(asked, deadline_s=WINDOW_S)
        replied, ended = self._ask(chat.bot_id, bot, lambda: model.propose(request))
        self._charge(chat.bot_id, bot, replied)
        self._log_call(chat, turn_id, model.name, request, replied, ended)
        answer = _parsed(lambda: ENRICHMENT.parse(replied.text, asked)) if replied else None
        if answer is None or answer.input is None:
            return text, False
        if used_reason(answer.used, [e.id for e in visible]) is not None:
            return text, False
        # The readers' access is checked again on the newest memory (validateReferences):
        # the same entries while the pool's version has not moved since the head read
        # before the entries (no change committed since, during their Query neither).
        if self._memory.repo.version(pool) != snap.version:
            snap = self._memory.snapshot(pool)
        still = {e.id for e in self._visible(chat, snap, limit=None)}
        if used_reason(answer.used, still) is not None:
            return text, False
        enriched = Enriched(
            turn_id, answer.input, text, tuple(dict.fromkeys(answer.used)), self._clock.now_ms()
        )
        try:
            self.repo.add_enrichment(chat, enriched)
        except Unavailable:
            return text, False  # an unrecorded rewrite is not given
        return answer.input, True

    def _visible(
        self, chat: Chat, snap: Snapshot, limit: int | None = ENRICH_ENTRIES
    ) -> list[VisibleEntry]:
        """Valid entries of `snap` every reader of the Chat may see (members read now), in
        memory order (decrypted only when `limit` is set: the re-check reads metadata only)."""
        pool = pool_of(chat.bot_id, chat.org_id)
        metas = snap.metas()
        members = Members(self._bots.repo, chat.owner, chat.org_id)
        members.load(channels_named(metas.values()))
        readers: Reader = chat_readers(chat.org_id, chat.owner, chat.channel_id, members)
        judge = self._memory.judge(metas)
        seen = [m for m in memory_order(metas.values()) if valid(m) and judge.sees(readers, m)]
        if limit is None:
            return [VisibleEntry(m.id, "", topics_of(m)) for m in seen]
        stored = snap.by_id()
        return [
            VisibleEntry(
                m.id,
                self._memory.repo.pools.open_content(pool, stored[m.id]),
                topics_of(m),
            )
            for m in seen[:limit]
        ]
