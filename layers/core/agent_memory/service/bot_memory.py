"""Bot memory (seed 002, "Read and change it"; API.md "Bot memory"): read it, Remember and
Forget, its log, purge, share, the context text, and `learn`, the one way the memory Bot
writes learned facts, observations and invalidations.

Every use case works on ONE snapshot of one pool (a Bot in one organization): a read takes
the head's version before and after its Query and reads again when they differ; a change is
one transaction conditional on the version it read (the seed's exclusive lock), moving it
by one and writing one log row. Who sees what is decided on plaintext metadata by the
audience judge (domain/audiences.py); only what the answer shows is decrypted.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.domain.audiences import (
    NOT_FOR_YOU,
    SOURCE_AUDIENCES,
    Hidden,
    Judge,
    Person,
    Reader,
    chat_readers,
    rule_of,
    share_reason,
)
from agent_memory.domain.bot_memory import (
    HEADER,
    FactPlan,
    LogChange,
    TopicNames,
    carries,
    channels_named,
    check_filter,
    erasure_targets,
    fact,
    forgotten,
    invalidated,
    is_topic_token,
    memory_order,
    observation,
    purge_targets,
    remembered,
    share_audience,
    shared,
    view,
    visible_change,
    without_person,
)
from agent_memory.domain.bots import Bot, Chat, person_of
from agent_memory.domain.bounds import within_budget
from agent_memory.domain.entries import Entry, EntryMeta, EntrySource, ItemSource
from agent_memory.domain.errors import (
    EntryConflict,
    NotFound,
    Unavailable,
    ValidationFailed,
    WriteConflict,
)
from agent_memory.domain.grants import ObjectAction, Reach
from agent_memory.domain.identity import Principal
from agent_memory.domain.memory_text import first_page
from agent_memory.domain.model_gate import Proposal, Scope, gate_reason
from agent_memory.domain.pages import DEFAULT_LOG_LIMIT
from agent_memory.domain.tags import InvalidTag, purge_tag, require_topics
from agent_memory.domain.tasks.learning_changes import (
    FactChange,
    InvalidateChange,
    ObservationChange,
    RenameTopicChange,
)
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import (
    MEMORY_VERSION,
    BotMemoryRepository,
    Snapshot,
    pool_of,
)
from agent_memory.persistence.events import event_action, one_row
from agent_memory.persistence.pools import Pool, StoredEntry
from agent_memory.ports import Absent, Action, Clock, Ids, Present
from agent_memory.service.bots import BotService, Members
from agent_memory.service.memory_texts import newest_text

# Reads retry while changes keep committing between their two version reads; writes retry
# when another change took the version first.
SNAPSHOT_TRIES = 5
WRITE_TRIES = 8
# Entries a purge removes per transaction: base row + recency copy each, plus the head row,
# the log row, the purge counter and the change's event (100 actions).
PURGE_BATCH = 48
# Actions of a purge's own rows and entry changes in one transaction (the head row, the log
# row and the change's event are added to them).
PURGE_ROOM = keys.MAX_ACTIONS - 3
TOO_MANY = "more changes than one transaction holds; the next learning applies it"
CHAT_NOT_HERE = "the chat is not one of this bot's in this organization"

# Log rows read per Query while a page of the log fills with changes the caller may see.
LOG_SCAN_PAGE = 200

LearningChange = FactChange | ObservationChange | InvalidateChange | RenameTopicChange


@dataclass(frozen=True)
class Access:
    """How a person reaches one Bot's memory: the pool of the organization they work in,
    and themselves as a reader (channel membership looked up at this request)."""

    bot: Bot
    reach: Reach
    pool: Pool
    reader: Person
    members: Members


@dataclass
class Learned:
    """What `learn` did: the ids written (in change order) and the refused changes."""

    version: int
    applied: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)


def _raced(error: WriteConflict) -> bool:
    return error.raced or error.condition == MEMORY_VERSION


class BotMemoryService:
    def __init__(
        self,
        repo: BotMemoryRepository,
        bots: BotService,
        clock: Clock,
        ids: Ids,
        *,
        max_text_length: int,
    ) -> None:
        self.repo = repo
        self._bots = bots
        self._clock = clock
        self._ids = ids
        self._max_text_length = max_text_length

    # -- access and snapshots --------------------------------------------------------------

    def _access(self, principal: Principal, bot_id: str, action: ObjectAction) -> Access:
        user, _org = person_of(principal)
        bot, reach = self._bots.reach(principal, bot_id, action)
        members = Members(self._bots.repo, user, reach.org_id)
        reader = Person(user, reach.org_id, members)
        return Access(bot, reach, pool_of(bot.id, reach.org_id), reader, members)

    def snapshot(self, pool: Pool) -> Snapshot:
        """Every entry of `pool` at one version."""
        for _attempt in range(SNAPSHOT_TRIES):
            found = self.repo.read(pool)
            if found is not None:
                return found
        raise Unavailable("the bot memory kept changing while it was read; retry")

    @staticmethod
    def judge(metas: Mapping[str, EntryMeta]) -> Judge:
        return SOURCE_AUDIENCES.judge(metas.get)

    def _open(self, pool: Pool, stored: StoredEntry) -> dict[str, Any]:
        return view(self.repo.pools.open(pool, stored))

    def _shown(self, access: Access, snap: Snapshot) -> tuple[Judge, dict[str, EntryMeta]]:
        metas = snap.metas()
        access.members.load(channels_named(metas.values()))
        return self.judge(metas), metas

    # -- reads -----------------------------------------------------------------------------

    def read(self, principal: Principal, bot_id: str, tags: Sequence[str] = ()) -> dict[str, Any]:
        """Every entry the caller may see in their organization that carries all `tags`,
        retracted and invalidated ones included, in memory order; decrypts only those."""
        wanted = check_filter(tags)
        access = self._access(principal, bot_id, "read")
        snap = self.snapshot(access.pool)
        judge, metas = self._shown(access, snap)
        stored = snap.by_id()
        shown = [
            m
            for m in memory_order(metas.values())
            if carries(m, wanted) and judge.sees(access.reader, m)
        ]
        views = [self._open(access.pool, stored[m.id]) for m in shown]
        return {"entries": within_budget(views)[0], "version": snap.version}

    def log(
        self,
        principal: Principal,
        bot_id: str,
        *,
        limit: int = DEFAULT_LOG_LIMIT,
        before: int | None = None,
    ) -> list[dict[str, Any]]:
        """Changes newest first (with `before`, older than that version), each with only
        the ids of entries the caller may see; a change of none of them is left out, and
        the page reads on until it holds `limit` changes or the log's first. A rename shows
        the entries carrying a topic token it renamed. `before` = the last version shown
        pages back."""
        access = self._access(principal, bot_id, "read")
        snap = self.snapshot(access.pool)
        judge, metas = self._shown(access, snap)
        visible = {m.id for m in metas.values() if judge.sees(access.reader, m)}
        carriers: dict[str, list[str]] = {}
        for entry_id, tags in snap.stored_tags().items():
            for tag in filter(is_topic_token, tags):
                carriers.setdefault(tag, []).append(entry_id)
        changes: list[dict[str, Any]] = []
        cursor = before if before is None else min(before, snap.version + 1)
        while len(changes) < limit and (cursor is None or cursor > 1):
            page = self.repo.log(access.pool, limit=LOG_SCAN_PAGE, before=cursor)
            for change in page:
                shown = visible_change(change, visible, carriers)
                if shown is not None and len(changes) < limit:
                    changes.append(shown.view())
            if len(page) < LOG_SCAN_PAGE:
                break
            cursor = page[-1].version
        return within_budget(changes)[0]

    # -- commands ----------------------------------------------------------------------------

    def remember(
        self, principal: Principal, bot_id: str, content: str, topics: Sequence[str]
    ) -> dict[str, Any]:
        """A pinned entry only its author sees (topics only: a colon tag is a 400)."""
        require_topics(topics, ["command", "tags"])
        access = self._access(principal, bot_id, "read")
        pool, user = access.pool, access.reader.user_id
        for _attempt in range(WRITE_TRIES):
            head = self.repo.head(pool)
            before = head.version
            now, version = self._clock.now_ms(), before + 1
            meta = remembered(
                self._ids.new("mem_"), user, pool.org_id, content, topics, now, version
            )
            tags, names = head.topics.stored(meta.tags)
            changes = self.repo.pools.put(
                pool, replace(meta, tags=tags), content, condition=Absent()
            )
            renamed = names if names != head.topics else None
            if not self._person_change(pool, before, now, changes, (meta.id,), renamed):
                continue
            return {"entry": view(Entry(meta, content)), "version": version}
        raise Unavailable("the bot memory kept changing; retry")

    def _person_change(
        self,
        pool: Pool,
        before: int,
        now: int,
        changes: Sequence[Action],
        ids: tuple[str, ...],
        topics: TopicNames | None = None,
    ) -> bool:
        """Commit a person's change of the pool at version `before` + 1 with its log row (and
        new topic names), in one transaction. False when another writer moved the version
        first (read again)."""
        version = before + 1
        try:
            self.repo.write(
                [
                    self.repo.head_change(pool, before, version, now, topics),
                    *changes,
                    self.repo.log_put(pool, LogChange(version, now, "person", ids)),
                    event_action(pool.org_id, "memory.changed", {"botId": pool.pool_id}, now),
                ]
            )
        except WriteConflict as error:
            if _raced(error):
                return False
            raise
        return True

    def forget(self, principal: Principal, bot_id: str, entry_id: str) -> dict[str, Any]:
        """Take back the caller's part of an entry they may see (409 EntryConflict
        otherwise); the entry is answered when they still see it (a retracted one)."""
        access = self._access(principal, bot_id, "read")
        pool, reader = access.pool, access.reader
        for _attempt in range(WRITE_TRIES):
            snap = self.snapshot(pool)
            judge, metas = self._shown(access, snap)
            now, version = self._clock.now_ms(), snap.version + 1
            previous = metas.get(entry_id)
            after = forgotten(judge, reader, previous, reader.user_id, now, version)
            stored = snap.by_id()
            if previous is None or after is None:
                # Retracted already by its sole person: nothing changes (`forgotten` raised
                # for an entry the caller may not see).
                return {"entry": self._open(pool, stored[entry_id]), "version": snap.version}
            changes = self.repo.pools.change(
                pool, previous, self._as_stored(snap, after), stored=stored[entry_id]
            )
            if not self._person_change(pool, snap.version, now, changes, (entry_id,)):
                continue
            answer: dict[str, Any] = {"version": version}
            if self.judge({**metas, entry_id: after}).sees(reader, after):
                content = self.repo.pools.open_content(pool, stored[entry_id])
                answer["entry"] = view(Entry(after, content))
            return answer
        raise Unavailable("the bot memory kept changing; retry")

    def share(
        self, principal: Principal, bot_id: str, entry_id: str, audience_text: str
    ) -> dict[str, Any]:
        """Make an entry also for a Channel group or for everyone, only when every source's
        access rule admits those readers (409 EntryConflict otherwise)."""
        audience = share_audience(audience_text)
        access = self._access(principal, bot_id, "read")
        pool = access.pool
        for _attempt in range(WRITE_TRIES):
            snap = self.snapshot(pool)
            judge, metas = self._shown(access, snap)
            meta = metas.get(entry_id)
            if meta is None:
                raise EntryConflict(NOT_FOR_YOU, ["id"])
            # A fact carries its items' rule on its base row (`fact`: one rule for all).
            rule = rule_of(snap.item_rules.get(entry_id, ()))

            def item_rule(_source: ItemSource, rule: Any = rule) -> Any:
                return rule

            reason = share_reason(judge, access.reader, meta, audience, item_rule)
            if reason is not None:
                raise EntryConflict(reason, ["id"])
            now, version = self._clock.now_ms(), snap.version + 1
            after = shared(meta, audience, now, version)
            stored = snap.by_id()[entry_id]
            changes = self.repo.pools.change(
                pool, meta, self._as_stored(snap, after), stored=stored
            )
            if not self._person_change(pool, snap.version, now, changes, (entry_id,)):
                continue
            content = self.repo.pools.open_content(pool, stored)
            return {"entry": view(Entry(after, content)), "version": version}
        raise Unavailable("the bot memory kept changing; retry")

    @staticmethod
    def _as_stored(snap: Snapshot, after: EntryMeta) -> EntryMeta:
        """A metadata change of an entry of `snap` with its topic tokens as stored (its
        topics do not change: nothing is allocated)."""
        tags, _names = snap.topics.stored(after.tags, snap.stored_tags().get(after.id, ()))
        return replace(after, tags=tags)

    # -- purge -----------------------------------------------------------------------------

    def purge(self, principal: Principal, bot_id: str, tag_text: str) -> int:
        """Remove every entry carrying one service tag, and every entry built on them, from
        the memory of the caller's organization only: at home a writer's, a linked
        organization's by its admins (a linked organization is a separate tenant). Reads
        no content. Resumable and idempotent: each transaction adds what it removed to the
        tag's counter, and a repeated purge finishes the work and answers the counter."""
        person_of(principal)
        try:
            tag = str(purge_tag(tag_text))
        except InvalidTag as error:
            raise ValidationFailed(error.reason, ["tag"]) from error
        bot, reach = self._bots.reach(principal, bot_id, "purge")
        return self._purge_pool(pool_of(bot.id, reach.org_id), tag)

    def erase_person(self, bot_id: str, org_id: str, user_id: str) -> int:
        """Erase `user_id` from the Bot's memory in `org_id`, for an erasure its caller has
        authorized (`erasure_targets`): the entries on their words alone go, with what is
        built on them; in entries of several people they stop counting, as by their Forget.
        How many entries this call removed (0 when done before)."""
        tag = str(purge_tag(f"from:{user_id}"))
        pool = pool_of(bot_id, org_id)
        before = self.repo.purged(pool, tag)
        return self._purge_pool(pool, tag, erased=user_id) - before

    def _purge_pool(self, pool: Pool, tag: str, *, erased: str | None = None) -> int:
        """Remove the targets of `tag` in batches of one transaction each; for an erasure of
        `erased`, its `erasure_targets`, whose entries of several people change instead."""
        while True:
            snap = self.snapshot(pool)
            metas = snap.metas()
            now, version = self._clock.now_ms(), snap.version + 1
            if erased is None:
                gone, afters = purge_targets(metas.values(), tag), []
            else:
                gone, kept = erasure_targets(metas.values(), erased)
                afters = [without_person(metas[i], erased, now, version) for i in kept]
            if not gone and not afters:
                return self.repo.purged(pool, tag)
            batch = sorted(gone)[:PURGE_BATCH]
            changes: list[Action] = [self.repo.purge_count(pool, tag, len(batch), now)]
            for entry_id in batch:
                changes += self.repo.pools.remove(pool, metas[entry_id], condition=Present())
            stored = snap.by_id()
            changed: list[str] = []
            for after in afters:
                change = self.repo.pools.change(
                    pool, metas[after.id], self._as_stored(snap, after), stored=stored[after.id]
                )
                # Every transaction makes progress: its first change always goes in.
                if (batch or changed) and len(changes) + len(change) > PURGE_ROOM:
                    break
                changes += change
                changed.append(after.id)
            removed = set(batch)
            left = [t for i, tags in snap.stored_tags().items() if i not in removed for t in tags]
            names = snap.topics.collected(left)
            renamed = names if names != snap.topics else None
            self._person_change(pool, snap.version, now, changes, (*batch, *changed), renamed)

    # -- context ---------------------------------------------------------------------------

    def context(
        self, principal: Principal, bot_id: str, chat_id: str, max_length: int | None = None
    ) -> dict[str, Any]:
        """The memory text for a Chat's answer: valid entries every reader of the Chat may
        see, in memory order, stopping at the first that does not fit; only the entries
        shown are decrypted. The caller must be a reader of that Chat (404 otherwise)."""
        access = self._access(principal, bot_id, "read")
        chat = self._bots.repo.get_chat(chat_id)
        if chat is None or chat.bot_id != access.bot.id or chat.org_id != access.pool.org_id:
            raise NotFound("chat not found", ["chatId"])
        members = access.members.load([chat.channel_id])
        if not chat.readable_by(access.reader.user_id, chat.org_id, members):
            raise NotFound("chat not found", ["chatId"])
        readers = chat_readers(chat.org_id, chat.owner, chat.channel_id, access.members)
        limit = max_length or self._max_text_length
        for _attempt in range(SNAPSHOT_TRIES):
            answer = self._context(access.pool, readers, limit, access.members)
            if answer is not None:
                return answer
        raise Unavailable("the bot memory kept changing while it was read; retry")

    def _context(
        self, pool: Pool, readers: Reader, limit: int, members: Members
    ) -> dict[str, Any] | None:
        version, newest = self.repo.newest(pool, first_page(limit))
        known: dict[str, EntryMeta | None] = {}
        judge = SOURCE_AUDIENCES.judge(known.get)
        found = {"visible": False}

        def visible() -> Iterator[StoredEntry]:
            for stored in newest:
                known[stored.meta.id] = stored.meta
                self._load_sources(pool, stored.meta, known)
                if isinstance(readers, Person):
                    members.load(judge.channels(stored.meta))
                if judge.sees(readers, stored.meta):
                    found["visible"] = True
                    yield stored

        text = newest_text(
            visible(),
            lambda stored: self.repo.pools.open_content(pool, stored),
            limit,
            header=HEADER,
        )
        if self.repo.version(pool) != version:
            return None
        return {"text": text.text, "ids": text.keys, "hasEntries": found["visible"]}

    def _load_sources(
        self, pool: Pool, meta: EntryMeta, known: dict[str, EntryMeta | None]
    ) -> None:
        """Read the entries `meta` stands on, recursively, a batch per level (a fact stands
        on items only and costs nothing)."""
        frontier = [s.entry for s in _entry_sources(meta) if s.entry not in known]
        while frontier:
            found = self.repo.entries(pool, frontier)
            for entry_id in frontier:
                known[entry_id] = found.get(entry_id)
            frontier = [
                s.entry for m in found.values() for s in _entry_sources(m) if s.entry not in known
            ]

    # -- learning (the memory Bot; its apply step calls this) ---------------------

    def learn(
        self,
        bot_id: str,
        org_id: str,
        chat_id: str,
        changes: Sequence[LearningChange],
        *,
        evidence: Collection[str],
        also: Sequence[Action] | Callable[[Learned], Sequence[Action]] = (),
    ) -> Learned:
        """Apply the memory Bot's changes learned in a Chat of `org_id` from the run's
        `evidence` (its new item ids), in ONE transaction with `also` (the caller's read
        position and execution end; a function of what was learned when the end records
        it), conditional on the pool's version; each refused change keeps its reason.
        The gate on model output comes first (domain/model_gate.py): no secret; a fact cites
        only the evidence; an observation cites, and a change touches, only entries every
        reader of the Chat may see. Then the pool's rules: a fact's items are items of the
        Chat and one of them a person's words; its audience comes from the items' Turns
        (saved actor, or the Channel group) and each item's rule is saved; an observation
        stands on valid entries whose access is proved."""
        cited = [s for c in changes if isinstance(c, FactChange) for s in c.sources]
        chat, items = self._bots.repo.chat_and_items(chat_id, cited)
        if chat is None or chat.bot_id != bot_id or chat.org_id != org_id:
            raise NotFound(CHAT_NOT_HERE)
        pool = pool_of(bot_id, org_id)
        turns = self._bots.repo.turns(chat.id, sorted({i.turn_id for i in items.values()}))
        actors = {t.id: t.actor for t in turns.values()}
        members = Members(self._bots.repo, chat.owner, chat.org_id)
        run = _Run(chat, frozenset(evidence), members)

        def extra(learned: Learned) -> Sequence[Action]:
            return also(learned) if callable(also) else also

        reserved = len(extra(Learned(0))) + 1
        for _attempt in range(WRITE_TRIES):
            # No second head read: the transaction is conditional on this version, so it
            # commits only on one state. One that applies nothing moves no version: its
            # refusals stand on one state only if the version has not moved meanwhile.
            snap = self.repo.read_for_change(pool)
            learned, actions = self._plan(pool, run, snap, changes, items, actors, reserved)
            if not actions and self.repo.version(pool) != snap.version:
                continue
            at = self._clock.now_ms()
            changed = event_action(org_id, "memory.changed", {"botId": bot_id}, at)
            ending = extra(learned)
            try:
                # One event row for the memory's change and the run's end.
                told = [changed] if learned.applied else []
                self.repo.write(one_row([*actions, *told, *ending]))
            except WriteConflict as error:
                if _raced(error):
                    continue
                raise
            return learned
        raise Unavailable("the bot memory kept changing; retry")

    def readers(self, chat: Chat, metas: Mapping[str, EntryMeta], members: Members) -> Reader:
        """Every reader of `chat`'s answers (its owner, with the Channels of `metas` looked
        up, or its Channel group): what a run of the Chat may see, cite and change."""
        if chat.channel_id is None:
            members.load(channels_named(metas.values()))
        return chat_readers(chat.org_id, chat.owner, chat.channel_id, members)

    def _plan(
        self,
        pool: Pool,
        run: _Run,
        snap: Snapshot,
        changes: Sequence[LearningChange],
        items: Mapping[str, Any],
        actors: Mapping[str, str],
        reserved: int,
    ) -> tuple[Learned, list[Action]]:
        chat = run.chat
        metas = snap.metas()
        stored = snap.by_id()
        tokens = snap.stored_tags()
        judge = self.judge(metas)
        scope = Scope(run.evidence, _Visible(judge, self.readers(chat, metas, run.members), metas))
        now, version = self._clock.now_ms(), snap.version + 1
        learned = Learned(snap.version)
        writes: list[Action] = []
        names = snap.topics
        renamed: list[str] = []
        # The head row, the log row and the caller's actions share the transaction.
        room = keys.MAX_ACTIONS - 2 - reserved
        for index, change in enumerate(changes):
            planned: list[Action]
            proposal = _proposal(change, judge, metas, tokens, names)
            known = [] if proposal.rename else scope.known(proposal.ids)
            refused = gate_reason(proposal, scope)
            if refused is not None:
                learned.rejected.append(
                    {"index": index, "op": change.op, "reason": refused, "ids": known}
                )
                continue
            if isinstance(change, FactChange):
                plan = fact(
                    self._ids.new("mem_"),
                    chat,
                    change.sources,
                    items,
                    actors,
                    change.topics,
                    change.content,
                    now,
                    version,
                )
                if isinstance(plan, str):
                    learned.rejected.append(
                        {"index": index, "op": "fact", "reason": plan, "ids": known}
                    )
                    continue
                tags, table = names.stored(plan.meta.tags)
                plan = replace(plan, meta=replace(plan.meta, tags=tags))
                planned = self._fact_actions(pool, plan, change.content)
                written, op, new_tags = plan.meta, "fact", tags
            elif isinstance(change, ObservationChange):
                meta = observation(
                    self._ids.new("mem_"),
                    judge,
                    pool.org_id,
                    change.sources,
                    metas,
                    change.topics,
                    change.confidence,
                    change.content,
                    now,
                    version,
                )
                if isinstance(meta, str):
                    learned.rejected.append(
                        {"index": index, "op": "observation", "reason": meta, "ids": known}
                    )
                    continue
                tags, table = names.stored(meta.tags)
                meta = replace(meta, tags=tags)
                planned = self.repo.pools.put(pool, meta, change.content, condition=Absent())
                written, op, new_tags = meta, "observation", tags
            elif isinstance(change, RenameTopicChange):
                outcome = names.renamed(
                    change.from_, change.to, (t for ts in tokens.values() for t in ts)
                )
                if isinstance(outcome, str):
                    learned.rejected.append(
                        {"index": index, "op": "renameTopic", "reason": outcome, "ids": []}
                    )
                    continue
                # One change of the head row: no entry is rewritten or decrypted.
                names, moved = outcome
                renamed += moved
                # No key: topics are words, and the run's log has readers who may not see them.
                learned.applied.append({"index": index, "op": "renameTopic", "id": ""})
                continue
            else:
                after = invalidated(metas.get(change.id), change.id, now, version)
                if isinstance(after, str):
                    learned.rejected.append(
                        {"index": index, "op": "invalidate", "reason": after, "ids": known}
                    )
                    continue
                previous = metas[change.id]
                tags, table = names.stored(after.tags, tokens.get(change.id, ()))
                planned = self.repo.pools.change(
                    pool, previous, replace(after, tags=tags), stored=stored[change.id]
                )
                written, op, new_tags = after, "invalidate", tags
            if len(writes) + len(planned) > room:
                learned.rejected.append(
                    {"index": index, "op": op, "reason": TOO_MANY, "ids": known}
                )
                continue
            writes += planned
            entry_id = written.id
            # A rename later in this batch covers the entries it wrote; a later change sees
            # an invalidated entry invalid (no second invalidation).
            names, tokens[entry_id], metas[entry_id] = table, new_tags, written
            learned.applied.append({"index": index, "op": op, "id": entry_id})
        if not learned.applied:
            return learned, []
        learned.version = version
        ids = tuple(dict.fromkeys(a["id"] for a in learned.applied if a["op"] != "renameTopic"))
        names = names.collected(t for ts in tokens.values() for t in ts)
        topics = names if names != snap.topics else None
        logged = LogChange(version, now, "memory_bot", ids, tuple(dict.fromkeys(renamed)))
        return learned, [
            self.repo.head_change(pool, snap.version, version, now, topics),
            *writes,
            self.repo.log_put(pool, logged),
        ]

    def _fact_actions(self, pool: Pool, plan: FactPlan, content: str) -> list[Action]:
        """The fact's rows, its base row carrying its source items' access rule (`fact`
        refuses items of different rules, so one rule is each item's)."""
        base, *copies = self.repo.pools.put(pool, plan.meta, content, condition=Absent())
        rule = next(iter(plan.rules.values()))
        return [self.repo.with_item_rule(base, rule), *copies]


def _entry_sources(meta: EntryMeta) -> list[EntrySource]:
    return [s for s in meta.sources if isinstance(s, EntrySource)]


@dataclass(frozen=True)
class _Run:
    """What `learn` knows of the run: its Chat, its evidence items and the Chat's members."""

    chat: Chat
    evidence: frozenset[str]
    members: Members


@dataclass(frozen=True)
class _Visible:
    """The entries of `metas` that `reader` may see (the gate's scope of entries)."""

    judge: Judge
    reader: Reader
    metas: Mapping[str, EntryMeta]

    def __contains__(self, entry_id: object) -> bool:
        meta = self.metas.get(entry_id) if isinstance(entry_id, str) else None
        return meta is not None and self.judge.sees(self.reader, meta)


def _proposal(
    change: LearningChange,
    judge: Judge,
    metas: Mapping[str, EntryMeta],
    tokens: Mapping[str, Sequence[str]],
    names: TopicNames,
) -> Proposal:
    """The change as the gate reads it. A rename changes every entry carrying its topic,
    except those hidden from everyone for good (a retracted, invalidated or missing source
    hides them): renaming them shows nobody anything."""
    if isinstance(change, FactChange):
        return Proposal(
            "fact", (change.content,), tuple(change.topics), items=tuple(change.sources)
        )
    if isinstance(change, ObservationChange):
        return Proposal(
            "observation", (change.content,), tuple(change.topics), entries=tuple(change.sources)
        )
    if isinstance(change, InvalidateChange):
        return Proposal("invalidate", changes=(change.id,))
    carriers = tuple(
        entry_id
        for entry_id, tags in tokens.items()
        if any(is_topic_token(t) and names.name(t) == change.from_ for t in tags)
        and entry_id in metas
        and not isinstance(judge.visibility(metas[entry_id]), Hidden)
    )
    return Proposal("renameTopic", labels=(change.from_, change.to), changes=carriers, rename=True)
