"""The memory Bot's apply step: a run's changes judged on one snapshot, in one transaction.

The snapshot holds what the Chat's readers may see and what it stands on (ADR 0083): every
change the gate lets through touches or cites only such entries, so the rules decide as on
the whole pool. A rename, or a pool whose head names topics, reads the whole pool: a rename
changes every carrier, and the topic table is tidied against every entry."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from agent_memory.domain.audiences import Reader, chat_readers
from agent_memory.domain.bot_changes import (
    Invalidation,
    Learned,
    LearningChange,
    NewEntry,
    PoolState,
    Run,
    Write,
    decide,
)
from agent_memory.domain.bot_memory import LogChange, channels_named
from agent_memory.domain.errors import NotFound
from agent_memory.domain.tasks.learning_changes import FactChange, RenameTopicChange
from agent_memory.persistence.bot_memory import ENTRY_ROWS, BotMemoryRepository, Snapshot, bot_pool
from agent_memory.persistence.events import one_row
from agent_memory.persistence.pools import Pool, StoredEntry
from agent_memory.persistence.retrying import AGAIN, Again
from agent_memory.ports import Absent, Action
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS
from agent_memory.service.bot_memory import for_reader
from agent_memory.service.bots import Members

if TYPE_CHECKING:
    from agent_memory.service.bot_memory import BotMemoryService

CHAT_NOT_HERE = "the chat is not one of this bot's in this organization"


def learned_change(
    memory: BotMemoryService,
    bot_id: str,
    org_id: str,
    chat_id: str,
    changes: Sequence[LearningChange],
    *,
    evidence: Collection[str],
    also: Callable[[Learned], Sequence[Action]],
) -> tuple[list[Action], Learned] | Again:
    """The learned changes with `also(learned)`, conditional on the pool's version; AGAIN
    when it applies nothing and the version moved (refusals stand only on the newest)."""
    bots = memory.bots.repo
    cited = [s for c in changes if isinstance(c, FactChange) for s in c.sources]
    chat, items = bots.chat_and_items(chat_id, cited)
    if chat is None or chat.bot_id != bot_id or chat.org_id != org_id:
        raise NotFound(CHAT_NOT_HERE)
    turns = bots.turns(chat.id, sorted({i.turn_id for i in items.values()}))
    actors = {t.id: t.actor for t in turns.values()}
    members = Members(bots, chat.owner, chat.org_id)
    # The head row, the log row and the caller's actions share the transaction.
    room = MAX_TRANSACTION_ACTIONS - 3 - len(also(Learned(0)))
    pool = bot_pool(bot_id, org_id)
    readers = chat_readers(chat.org_id, chat.owner, chat.channel_id, members)
    snap = _snapshot(memory.repo, pool, readers, members, changes)
    metas = snap.metas()
    members.load(channels_named(metas.values()))
    run = Run(chat, frozenset(evidence), readers, items, actors)
    state = PoolState(snap.version, metas, snap.stored_tags(), snap.topics)
    now = memory.clock.now_ms()
    # An entry writes at least ENTRY_ROWS rows; one naming more audiences writes more, so
    # the batch shrinks until its actions fit (what is left is refused TOO_MANY).
    most = room // ENTRY_ROWS
    while True:
        learned = decide(
            changes,
            state,
            run,
            new_id=lambda: memory.ids.new("mem_"),
            now_ms=now,
            max_writes=most,
        )
        if not learned.applied and memory.repo.version(pool) != snap.version:
            return AGAIN
        actions = one_row(
            [*_learned_actions(memory.repo, pool, snap, learned, now), *also(learned)]
        )
        if len(actions) <= MAX_TRANSACTION_ACTIONS or most == 0:
            return actions, learned
        most -= 1


def _snapshot(
    repo: BotMemoryRepository,
    pool: Pool,
    readers: Reader,
    members: Members,
    changes: Sequence[LearningChange],
) -> Snapshot:
    """What the Chat's readers may see and what it stands on; the whole pool for a rename
    or when the head names topics."""
    if not any(isinstance(c, RenameTopicChange) for c in changes):
        snap = repo.read_for_change(for_reader(pool, readers, members))
        if not (snap.topics.names or snap.topics.writes):
            return snap
    return repo.read_for_change(pool)


def _learned_actions(
    repo: BotMemoryRepository, pool: Pool, snap: Snapshot, learned: Learned, now: int
) -> list[Action]:
    """What was learned, with one event row; none when nothing was applied."""
    if not learned.applied:
        return []
    stored = snap.by_id()
    logged = LogChange(learned.version, now, "memory_bot", learned.entry_ids, learned.renamed)
    written = [w.meta for w in learned.writes if isinstance(w, NewEntry)]
    rows = [a for write in learned.writes for a in _write(repo, pool, write, stored)]
    rows += repo.marks(pool, (e.meta for e in snap.entries), written)
    return repo.changed(pool, snap.version, logged, rows, learned.topics)


def _write(
    repo: BotMemoryRepository, pool: Pool, write: Write, stored: Mapping[str, StoredEntry]
) -> list[Action]:
    """A learned entry's rows; a fact's base row carries its items' access rule."""
    if isinstance(write, Invalidation):
        return repo.pools.change(pool, write.before, write.meta, stored=stored.get(write.meta.id))
    base, *copies = repo.pools.put(pool, write.meta, write.content, condition=Absent())
    if write.rule is not None:
        base = repo.with_item_rule(base, write.rule)
    return [base, *copies]
