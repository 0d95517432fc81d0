"""Bot memory in the single table: ONE partition per Bot and organization.

`BOTMEM#<botId>#<orgId>`:
- `MEM#<entry id>`: an entry in the pool repository's row shape (persistence/pools.py); a
  fact's row also carries its source items' access rule (`itemRule`: every item of a fact
  has the same rule, domain/bot_memory.py `fact`), private: no entry view shows it;
- `META`: the pool's head row: `version` (absent row = version 0), `updatedAt`, and the
  topic names (`topicNames` token -> name, `topicWrites` name -> token, `topicSeq`:
  domain/bot_memory.py `TopicNames`), so a rename is one change of this row;
- `RECENT#<newest first>#<id>`: a full copy of each VALID entry (active, not invalidated),
  so the context text reads the head and the first page of valid entries in one Query;
- `LOG#<version:010d>`: one change: version and time in the clear (order), what made it and
  the changed ids sealed (seed 002: change logs are encrypted at rest), bound to the row;

`"MEM#..." < "META" < "RECENT#"`: every entry and the head in one Query (`MEM#`..`META`);
the head and the recency copies in one Query (`META`..`RECENT#~`). Content is sealed under
{org, pool: bot id, field: entry} and bound to the entry id. The snapshot: every change
moves `version` in its transaction, so a read that finds the same version before and after
its Query saw one state, and its topic names are those of the head row it read first (every
entry row is at least as new). A change reads its snapshot without the second head read
(`read_for_change`): its transaction is conditional on the version read first, so it commits
only if no change committed since, the Query's included; the enrichment reads it so too, and
checks the version after the model answered.

The audience rows (ADR 0083): every entry also has a full copy per `for:` tag at
`AUD#<audience>#<id>` (`p#<userId>`, `c#<channelId>`, `b` for the Bot), whatever its status
(a reader's history stays), and each shared audience that an entry ever named has a mark
`MEMAUD#<audience>` (never removed: a mark whose entries are gone costs one empty Query).
`"MEM#..." < "MEMAUD#..." < "META"`: the marks and the head are one Query. A reader's
snapshot (`read_for_change` of a `ReaderPool`) reads the head with the marks, then only the
audience rows that can admit that reader (the judge's own clause: a reader an entry admits
is named by one of its `for:` tags), then the entries they stand on by id; the version read
first, checked after (a read) or by the change's condition (a change), makes it one state,
as for the whole pool.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

from agent_memory.domain.audiences import valid
from agent_memory.domain.bot_memory import LOG_BY, By, LogChange, TopicNames
from agent_memory.domain.entries import EntryMeta, EntrySource
from agent_memory.persistence import keys
from agent_memory.persistence.events import event_action
from agent_memory.persistence.pools import (
    Newest,
    Pool,
    PoolRepository,
    PoolRows,
    StoredEntry,
    recent_sk,
)
from agent_memory.persistence.rows import log_rows
from agent_memory.ports import Absent, Action, KeyRange, Put, Record, Update
from agent_memory.ports.store import count_is

# A conflict on the head row: the pool changed since it was read (re-read and retry).
MEMORY_VERSION = "bot-memory-version"
ITEM_RULE = "itemRule"
# Rows one learned entry's write touches at least: its base row, its recency copy and one
# audience row (a fact names one audience; an observation may name more: the apply counts
# its actions before it commits).
ENTRY_ROWS = 3
# The marks and the head row in one Query.
MARKS_AND_HEAD = KeyRange(low=keys.MARK_PREFIX, high=keys.HEAD)
EVERYONE = "b"
_FOR_PERSON, _FOR_CHANNEL, _FOR_BOT = "for:person:", "for:channel:", "for:bot"


def pool_pk(bot_id: str, org_id: str) -> str:
    return f"{keys.BOT_MEMORY_PREFIX}{bot_id}#{org_id}"


def person_audience(user_id: str) -> str:
    return f"p#{user_id}"


def channel_audience(channel_id: str) -> str:
    return f"c#{channel_id}"


def audiences_of(tags: Iterable[str]) -> list[str]:
    """The audiences an entry's `for:` tags name, each once."""
    found: dict[str, None] = {}
    for tag in tags:
        if tag == _FOR_BOT:
            found[EVERYONE] = None
        elif tag.startswith(_FOR_PERSON):
            found[person_audience(tag.removeprefix(_FOR_PERSON))] = None
        elif tag.startswith(_FOR_CHANNEL):
            found[channel_audience(tag.removeprefix(_FOR_CHANNEL))] = None
    return list(found)


class BotMemoryLayout:
    def rows(self, pool: Pool, meta: EntryMeta, order: int = 0) -> list[tuple[str, str]]:
        base = (pool.pk, keys.entry_sk(meta.id))
        recent = [(pool.pk, recent_sk(meta, order))] if valid(meta) else []
        audiences = [
            (pool.pk, f"{keys.AUDIENCE_PREFIX}{a}#{meta.id}") for a in audiences_of(meta.tags)
        ]
        return [base, *recent, *audiences]


BOT_MEMORY_LAYOUT = BotMemoryLayout()


@dataclass(frozen=True)
class ReaderPool(Pool):
    """A pool read for one reader: `audiences(marks)` names the audience rows that can hold
    an entry admitting them, given the shared audiences the pool marks (the service loads
    the reader's Channel membership there). Its snapshots hold those entries and what they
    stand on, not the whole pool."""

    audiences: Callable[[frozenset[str]], Iterable[str]] = field(compare=False)


def bot_pool(bot_id: str, org_id: str) -> Pool:
    """The memory of `bot_id` in `org_id` (its own organization or a linked one)."""
    return Pool(pool_pk(bot_id, org_id), org_id, bot_id, BOT_MEMORY_LAYOUT)


@dataclass(frozen=True)
class Snapshot:
    """Every entry of a pool at one version (metadata in the clear, content sealed), and
    the topic names of that version. `metas` and `by_id` show topics by name; `stored_tags`
    are the tags as the rows hold them (topic tokens); `item_rules` the access rule each
    fact carries for its source items."""

    version: int
    entries: list[StoredEntry]
    topics: TopicNames = field(default_factory=TopicNames)
    item_rules: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def metas(self) -> dict[str, EntryMeta]:
        return {e.meta.id: self.topics.named(e.meta) for e in self.entries}

    def by_id(self) -> dict[str, StoredEntry]:
        return {e.meta.id: replace(e, meta=self.topics.named(e.meta)) for e in self.entries}

    def stored_tags(self) -> dict[str, tuple[str, ...]]:
        return {e.meta.id: e.meta.tags for e in self.entries}


@dataclass(frozen=True)
class Head:
    version: int = 0
    topics: TopicNames = field(default_factory=TopicNames)


def _head(row: Record | None) -> Head:
    if row is None:
        return Head()
    topics = TopicNames(
        {str(k): str(v) for k, v in (row.get("topicNames") or {}).items()},
        {str(k): str(v) for k, v in (row.get("topicWrites") or {}).items()},
        int(row.get("topicSeq") or 0),
    )
    return Head(int(row.get("version", 0)), topics)


def _snapshot(head: Head, rows: Sequence[Record]) -> Snapshot:
    """The entries among the rows of a pool's Query, with the head's version and names."""
    entries: list[StoredEntry] = []
    rules: dict[str, tuple[str, ...]] = {}
    for row in rows:
        entry = PoolRepository.parse(row)
        if entry is None:
            continue
        entries.append(entry)
        if row.get(ITEM_RULE) is not None:
            rules[entry.meta.id] = tuple(str(t) for t in row[ITEM_RULE])
    return Snapshot(head.version, entries, head.topics, rules)


def _sources_of(rows: Iterable[Record], looked: Collection[str]) -> list[str]:
    """Ids of the entries the rows' entries stand on that were not looked up yet."""
    wanted: dict[str, None] = {}
    for row in rows:
        entry = PoolRepository.parse(row)
        for source in entry.meta.sources if entry is not None else ():
            if isinstance(source, EntrySource) and source.entry not in looked:
                wanted[source.entry] = None
    return list(wanted)


class BotMemoryRepository(PoolRows):
    # -- reads ---------------------------------------------------------------------------

    def version(self, pool: Pool) -> int:
        return self.head(pool).version

    def head(self, pool: Pool) -> Head:
        return _head(self._store.get(pool.pk, keys.HEAD))

    def read(self, pool: Pool) -> Snapshot | None:
        """Every entry at one version: the head's version before the Query equals the one
        after, else None (a change committed meanwhile; the caller reads again)."""
        found = self.read_for_change(pool)
        if self.version(pool) != found.version:
            return None
        return found

    def read_for_change(self, pool: Pool) -> Snapshot:
        """The head, then every entry (of a `ReaderPool`: the head with the audience marks,
        then its reader's audience rows and what they stand on): one state only if the
        version has not moved since the head was read (the module docstring)."""
        if not isinstance(pool, ReaderPool):
            before = self.head(pool)
            return _snapshot(before, self._store.query(pool.pk, keys.POOL_RANGE).records)
        rows = self._store.query(pool.pk, MARKS_AND_HEAD).records
        head = next((r for r in rows if r["sk"] == keys.HEAD), None)
        marks = frozenset(
            str(r["sk"]).removeprefix(keys.MARK_PREFIX)
            for r in rows
            if str(r["sk"]).startswith(keys.MARK_PREFIX)
        )
        return self.read_audiences(pool, _head(head), pool.audiences(marks))

    def read_audiences(self, pool: Pool, head: Head, audiences: Iterable[str]) -> Snapshot:
        """The entries with a row in any of `audiences`, and every entry they stand on (by
        id, a batch per level), at `head`'s version if it has not moved since it was read."""
        rows: dict[str, Record] = {}
        for audience in dict.fromkeys(audiences):
            span = KeyRange(prefix=f"{keys.AUDIENCE_PREFIX}{audience}#")
            for row in self._store.query(pool.pk, span).records:
                rows.setdefault(str(row["id"]), row)
        looked: set[str] = set(rows)
        frontier = _sources_of(rows.values(), looked)
        while frontier:
            looked.update(frontier)
            found = self._store.get_many([(pool.pk, keys.entry_sk(i)) for i in frontier])
            for row in found:
                rows.setdefault(str(row["id"]), row)
            frontier = _sources_of(found, looked)
        return _snapshot(head, list(rows.values()))

    def newest(self, pool: Pool, first_page: int) -> tuple[int, Newest]:
        """The head's version and the valid entries newest first, read lazily."""
        read = self.pools.newest(pool, first_page=first_page)
        return _head(read.head).version, read

    def entries(self, pool: Pool, ids: Iterable[str]) -> dict[str, EntryMeta]:
        """Base rows of several entries in one batch read (missing ones are left out)."""
        wanted = [self.pools.base_key(pool, i) for i in dict.fromkeys(ids)]
        if not wanted:
            return {}
        found = [self.pools.parse(r) for r in self._store.get_many(wanted)]
        return {e.meta.id: e.meta for e in found if e is not None}

    def log(self, pool: Pool, *, limit: int, before: int | None = None) -> list[LogChange]:
        """Changes newest first (with `before`, those older than that version)."""
        rows = log_rows(self._store, pool.pk, limit=limit, before=before)
        return [self._change(pool, row) for row in rows]

    def _change(self, pool: Pool, row: Record) -> LogChange:
        sealed = self._cipher.open(row["sealed"], scope=pool.details_scope, row=str(row["sk"]))
        what = json.loads(sealed)
        by = str(what["by"])
        return LogChange(
            version=int(row["version"]),
            at=int(row["at"]),
            by=cast(By, by if by in LOG_BY else "memory_bot"),
            ids=tuple(str(i) for i in what.get("ids") or ()),
            topics=tuple(str(t) for t in what.get("topics") or ()),
        )

    # -- actions -------------------------------------------------------------------------

    def changed(
        self,
        pool: Pool,
        before: int,
        logged: LogChange,
        actions: Iterable[Action],
        topics: TopicNames | None = None,
    ) -> list[Action]:
        """`actions` as one change of the pool, if nobody changed it since version `before`:
        the head moved to `logged.version` (with `topics`, the topic names of that version
        too), the change's log row and its `memory.changed` event."""
        head: Record = {"type": "bot-memory", "version": logged.version, "updatedAt": logged.at}
        if topics is not None:
            head |= {
                "topicNames": dict(topics.names) or None,
                "topicWrites": dict(topics.writes) or None,
                "topicSeq": topics.seq or None,
            }
        sk = keys.log_sk(logged.version)
        body: dict[str, object] = {"by": logged.by, "ids": list(logged.ids)}
        if logged.topics:
            body["topics"] = list(logged.topics)
        what = json.dumps(body, separators=(",", ":"))
        log: Record = {
            "pk": pool.pk,
            "sk": sk,
            "type": "bot-memory-log",
            "version": logged.version,
            "at": logged.at,
            "sealed": self._cipher.seal(what, scope=pool.details_scope, row=sk),
        }
        condition = count_is("version", before, name=MEMORY_VERSION)
        return [
            Update(pool.pk, keys.HEAD, set=head, condition=condition),
            *actions,
            Put(log, Absent()),
            event_action(pool.org_id, "memory.changed", {"botId": pool.pool_id}, logged.at),
        ]

    @staticmethod
    def with_item_rule(base: Action, tags: Sequence[str]) -> Action:
        """A fact's base row `Put` carrying its source items' access rule (`itemRule`): in
        its transaction, gone with it, and never changed after (a metadata change updates
        only the attributes it names)."""
        if not isinstance(base, Put):
            raise TypeError("a fact's base row is a Put")
        return Put({**base.record, ITEM_RULE: list(tags)}, base.condition)

    @staticmethod
    def marks(pool: Pool, read: Iterable[EntryMeta], written: Iterable[EntryMeta]) -> list[Put]:
        """Marks of the shared audiences `written` names that no entry of `read` names.
        An entry naming an audience exists only with its mark, so `read` (any snapshot
        holding the entries a change stands on) names every audience already marked."""
        known = {a for meta in read for a in audiences_of(meta.tags)}
        new = {
            a
            for meta in written
            for a in audiences_of(meta.tags)
            if a not in known and not a.startswith(person_audience(""))
        }
        return [
            Put({"pk": pool.pk, "sk": f"{keys.MARK_PREFIX}{a}", "type": "bot-memory-mark"})
            for a in sorted(new)
        ]
