"""Bot memory: read, Remember, Forget, log, purge, share and context.

Every use case works on ONE snapshot of one pool: a read retries while the version moves; a
change is one transaction conditional on the version it read, with one log row. Who sees
what is judged on plaintext metadata; only what the answer shows is decrypted. A person's
read, log and Forget, and the memory Bot's apply, read only the audience rows that can admit
their reader and what those entries stand on (`reader_snapshot`, ADR 0083), not the pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent_memory.domain.audiences import (
    NOT_FOR_YOU,
    Group,
    Judge,
    Person,
    Reader,
    chat_readers,
    rule_of,
    share_reason,
    valid,
)
from agent_memory.domain.bot_memory import (
    BotContext,
    Changed,
    LogChange,
    Shown,
    TopicNames,
    carries,
    channels_named,
    check_filter,
    forgotten,
    is_topic_token,
    memory_order,
    remembered,
    share_audience,
    shared,
    visible_change,
)
from agent_memory.domain.bots import BOTS_BELONG_TO_A_PERSON
from agent_memory.domain.bounds import DEFAULT_LOG_LIMIT
from agent_memory.domain.entries import Entry, EntryMeta
from agent_memory.domain.errors import (
    EntryConflict,
    NotFound,
    Unavailable,
    ValidationFailed,
    WriteConflict,
)
from agent_memory.domain.identity import Principal, person_of
from agent_memory.domain.tags import InvalidTag, purge_tag, require_topics
from agent_memory.persistence.bot_memory import (
    EVERYONE,
    MEMORY_VERSION,
    BotMemoryRepository,
    ReaderPool,
    Snapshot,
    bot_pool,
    channel_audience,
    person_audience,
)
from agent_memory.persistence.pools import Pool, StoredEntry
from agent_memory.persistence.retrying import AGAIN, until_it_lands
from agent_memory.ports import Absent, Action, Clock, Ids
from agent_memory.service.bot_context import context_text
from agent_memory.service.bot_memory_purge import purge_pool
from agent_memory.service.bots import BotService, Members

LOG_SCAN_PAGE = 200


def for_reader(pool: Pool, reader: Reader, members: Members) -> ReaderPool:
    """`pool` read only where an entry admitting `reader` can be (ADR 0083): their own
    audience rows, their Channels' (of those the pool marks, membership loaded as it is
    read) and the Bot's when marked."""

    def audiences(marks: frozenset[str]) -> list[str]:
        everyone = [EVERYONE] if EVERYONE in marks else []
        if isinstance(reader, Group):
            return [channel_audience(reader.channel_id), *everyone]
        if not isinstance(reader, Person):
            raise TypeError("only a person or a group reads by audience")
        marked = [m.removeprefix(channel_audience("")) for m in sorted(marks) if m != EVERYONE]
        members.load(marked)
        channels = [channel_audience(c) for c in marked if c in members]
        return [person_audience(reader.user_id), *channels, *everyone]

    return ReaderPool(pool.pk, pool.org_id, pool.pool_id, pool.layout, audiences)


@dataclass(frozen=True)
class Access:
    """How a person reaches one Bot's memory: the pool of their organization, as a reader."""

    pool: Pool
    reader: Person
    members: Members


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
        self.bots = bots
        self.clock = clock
        self.ids = ids
        self._max_text_length = max_text_length

    def _access(self, principal: Principal, bot_id: str) -> Access:
        user, _org = person_of(principal, BOTS_BELONG_TO_A_PERSON)
        bot, reach = self.bots.reach(principal, bot_id, "read")
        members = Members(self.bots.repo, user, reach.org_id)
        reader = Person(user, reach.org_id, members)
        return Access(bot_pool(bot.id, reach.org_id), reader, members)

    def snapshot(self, pool: Pool) -> Snapshot:
        return until_it_lands(lambda: self.repo.read(pool) or AGAIN, _kept_changing_read)

    def seen_by(self, reader: Reader, members: Members, snap: Snapshot) -> list[EntryMeta]:
        """The valid entries of `snap` that `reader` may see, in memory order: what the
        memory Bot shows its model of a Chat (a person's Channel membership is read for the
        Channels the entries name)."""
        metas = snap.metas()
        if isinstance(reader, Person):
            members.load(channels_named(metas.values()))
        return Judge(metas.get).visible(
            reader, [m for m in memory_order(metas.values()) if valid(m)]
        )

    def _read_as(
        self, access: Access, *, whole: bool = False
    ) -> tuple[Snapshot, Judge, dict[str, EntryMeta]]:
        """Every entry the caller may see and what those stand on (`whole`: the pool), at
        one version, with the caller's membership of the Channels they name."""
        pool = access.pool if whole else for_reader(access.pool, access.reader, access.members)
        snap = self.snapshot(pool)
        metas = snap.metas()
        access.members.load(channels_named(metas.values()))
        return snap, Judge(metas.get), metas

    def read(self, principal: Principal, bot_id: str, tags: Sequence[str] = ()) -> Shown:
        """Every entry the caller may see carrying all `tags`, retracted ones included."""
        wanted = check_filter(tags)
        access = self._access(principal, bot_id)
        snap, judge, metas = self._read_as(access)
        stored = snap.by_id()
        shown = [
            m
            for m in memory_order(metas.values())
            if carries(m, wanted) and judge.sees(access.reader, m)
        ]
        entries = [self.repo.pools.open(access.pool, stored[m.id]) for m in shown]
        return Shown(entries, snap.version)

    def log(
        self,
        principal: Principal,
        bot_id: str,
        *,
        limit: int = DEFAULT_LOG_LIMIT,
        before: int | None = None,
    ) -> list[LogChange]:
        """Changes newest first, each with only the ids of entries the caller may see; a
        change of none of them is left out. `before`, the last version shown, pages back."""
        access = self._access(principal, bot_id)
        snap, judge, metas = self._read_as(access)
        visible = {m.id for m in metas.values() if judge.sees(access.reader, m)}
        carriers: dict[str, list[str]] = {}
        for entry_id, tags in snap.stored_tags().items():
            for tag in filter(is_topic_token, tags):
                carriers.setdefault(tag, []).append(entry_id)
        changes: list[LogChange] = []
        cursor = before if before is None else min(before, snap.version + 1)
        while len(changes) < limit and (cursor is None or cursor > 1):
            page = self.repo.log(access.pool, limit=LOG_SCAN_PAGE, before=cursor)
            for change in page:
                shown = visible_change(change, visible, carriers)
                if shown is not None and len(changes) < limit:
                    changes.append(shown)
            if len(page) < LOG_SCAN_PAGE:
                break
            cursor = page[-1].version
        return changes

    def remember(
        self, principal: Principal, bot_id: str, content: str, topics: Sequence[str]
    ) -> Changed:
        """A pinned entry only its author sees (topics only: a colon tag is a 400)."""
        require_topics(topics, ["command", "tags"])
        access = self._access(principal, bot_id)
        pool, user = access.pool, access.reader.user_id

        def attempt() -> Changed:
            head = self.repo.head(pool)
            before = head.version
            now, version = self.clock.now_ms(), before + 1
            meta = remembered(
                self.ids.new("mem_"), user, pool.org_id, content, topics, now, version
            )
            tags, names = head.topics.stored(meta.tags)
            changes = self.repo.pools.put(
                pool, replace(meta, tags=tags), content, condition=Absent()
            )
            renamed = names if names != head.topics else None
            self.commit_change(pool, before, now, changes, (meta.id,), renamed)
            return Changed(Entry(meta, content), version)

        return until_it_lands(attempt, _kept_changing, lost=self.lost)

    def commit_change(
        self,
        pool: Pool,
        before: int,
        now: int,
        changes: Sequence[Action],
        ids: tuple[str, ...],
        topics: TopicNames | None = None,
    ) -> None:
        """Commit a change at version `before` + 1 with its log row, in one transaction."""
        logged = LogChange(before + 1, now, "person", ids)
        self.repo.write(self.repo.changed(pool, before, logged, changes, topics))

    def forget(self, principal: Principal, bot_id: str, entry_id: str) -> Changed:
        """Take back the caller's part of an entry they may see (409 EntryConflict otherwise)."""
        access = self._access(principal, bot_id)
        pool, reader = access.pool, access.reader

        def attempt() -> Changed:
            # What the caller may see is all a Forget may touch: their audience rows.
            snap, judge, metas = self._read_as(access)
            now, version = self.clock.now_ms(), snap.version + 1
            previous = metas.get(entry_id)
            after = forgotten(judge, reader, previous, reader.user_id, now, version)
            stored = snap.by_id()
            if previous is None or after is None:
                # Retracted already by its sole person: nothing changes.
                return Changed(self.repo.pools.open(pool, stored[entry_id]), snap.version)
            changes = self.entry_change(pool, snap, stored[entry_id], after)
            self.commit_change(pool, snap.version, now, changes, (entry_id,))
            if not Judge({**metas, entry_id: after}.get).sees(reader, after):
                return Changed(None, version)
            content = self.repo.pools.open_content(pool, stored[entry_id])
            return Changed(Entry(after, content), version)

        return until_it_lands(attempt, _kept_changing, lost=self.lost)

    def share(
        self, principal: Principal, bot_id: str, entry_id: str, audience_text: str
    ) -> Changed:
        """Widen an entry's readers when every source's rule admits them (409 otherwise)."""
        audience = share_audience(audience_text)
        access = self._access(principal, bot_id)
        pool = access.pool

        def attempt() -> Changed:
            snap, judge, metas = self._read_as(access, whole=True)
            meta = metas.get(entry_id)
            if meta is None:
                raise EntryConflict(NOT_FOR_YOU, ["id"])
            # A fact carries its items' rule on its base row (`fact`: one rule for all).
            rule = rule_of(snap.item_rules.get(entry_id, ()))
            reason = share_reason(judge, access.reader, meta, audience, lambda _source: rule)
            if reason is not None:
                raise EntryConflict(reason, ["id"])
            now, version = self.clock.now_ms(), snap.version + 1
            after = shared(meta, audience, now, version)
            stored = snap.by_id()[entry_id]
            changes = self.entry_change(pool, snap, stored, after)
            changes += self.repo.marks(pool, metas.values(), [after])
            self.commit_change(pool, snap.version, now, changes, (entry_id,))
            content = self.repo.pools.open_content(pool, stored)
            return Changed(Entry(after, content), version)

        return until_it_lands(attempt, _kept_changing, lost=self.lost)

    def entry_change(
        self, pool: Pool, snap: Snapshot, before: StoredEntry, after: EntryMeta
    ) -> list[Action]:
        """The rows of a metadata change of an entry of `snap` (`before`: as `by_id` reads
        it), its topic tokens as stored (nothing is allocated)."""
        tags, _names = snap.topics.stored(after.tags, snap.stored_tags().get(after.id, ()))
        return self.repo.pools.change(pool, before.meta, replace(after, tags=tags), stored=before)

    def purge(self, principal: Principal, bot_id: str, tag_text: str) -> int:
        """Remove every entry carrying one service tag, and what is built on them, in the
        caller's organization only; how many entries this call removed (a repeat finishes
        what an interrupted call left, and counts only that)."""
        person_of(principal, BOTS_BELONG_TO_A_PERSON)
        try:
            tag = str(purge_tag(tag_text))
        except InvalidTag as error:
            raise ValidationFailed(error.reason, ["tag"]) from error
        bot, reach = self.bots.reach(principal, bot_id, "purge")
        return purge_pool(self, bot_pool(bot.id, reach.org_id), tag)

    def erase_person(self, bot_id: str, org_id: str, user_id: str) -> int:
        """Erase `user_id` (the caller authorized it): their entries go, shared ones forget
        them; how many entries this call removed."""
        tag = str(purge_tag(f"from:{user_id}"))
        return purge_pool(self, bot_pool(bot_id, org_id), tag, erased=user_id)

    def context(
        self, principal: Principal, bot_id: str, chat_id: str, max_length: int | None = None
    ) -> BotContext:
        """The memory text for a Chat's answer; the caller must read the Chat (404 otherwise)."""
        access = self._access(principal, bot_id)
        chat = self.bots.repo.get_chat(chat_id)
        if chat is None or (chat.bot_id, chat.org_id) != (access.pool.pool_id, access.pool.org_id):
            raise NotFound("chat not found", ["chatId"])
        members = access.members.load([chat.channel_id])
        if not chat.readable_by(access.reader.user_id, chat.org_id, members):
            raise NotFound("chat not found", ["chatId"])
        readers = chat_readers(chat.org_id, chat.owner, chat.channel_id, access.members)
        limit = max_length or self._max_text_length
        return until_it_lands(
            lambda: context_text(self.repo, access.pool, readers, limit, access.members) or AGAIN,
            _kept_changing_read,
        )

    @staticmethod
    def lost(error: WriteConflict) -> bool:
        return error.raced or error.condition == MEMORY_VERSION


def _kept_changing() -> Unavailable:
    return Unavailable("the bot memory kept changing; retry")


def _kept_changing_read() -> Unavailable:
    return Unavailable("the bot memory kept changing while it was read; retry")
