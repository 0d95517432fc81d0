"""Which of the memory Bot's learned changes a bot memory pool accepts, one named reason per
refused change (as domain/consolidation.py decides for the other pools). Pure: the service
reads the pool, asks `decide`, and writes what it returns in one transaction.

First the gate on model output (domain/model_gate.py): no secret; a fact cites only the
run's evidence; an observation cites, and a change touches, only entries every reader of
the Chat may see. Then the pool's rules: a fact's items are items of the Chat and one of them
a person's words, its audience the items' access rule (the Turn's saved actor, or the
Channel group); an observation stands on valid entries whose access is proved; an
invalidation needs a valid entry; a rename is one change of the head row's topic names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from agent_memory.domain.audiences import (
    Hidden,
    Judge,
    Learner,
    Reader,
    valid,
)
from agent_memory.domain.bot_memory import (
    EMPTY_CONTENT,
    TopicNames,
    is_topic_token,
    new_entry,
    topics_reason,
)
from agent_memory.domain.bots import Chat, ChatItem
from agent_memory.domain.entries import EntryMeta, EntrySource, ItemSource
from agent_memory.domain.model_gate import Proposal, Scope, gate_reason
from agent_memory.domain.tasks.learning_changes import (
    FactChange,
    InvalidateChange,
    ObservationChange,
    RenameTopicChange,
)

LearningChange = FactChange | ObservationChange | InvalidateChange | RenameTopicChange

FACT_NEEDS_PERSON = (
    "a fact must cite a person's words; the bot's words, app results and notices never "
    "support it alone"
)
FACT_NO_SOURCE = "a fact cites at least one item"
UNKNOWN_ITEM = "source item {item} is not an item of this chat"
MIXED_RULES = "the cited items have different access rules; one fact stands on one rule"
OBSERVATION_NO_SOURCE = "an observation stands on at least one entry"
UNKNOWN_ENTRY = "entry {entry} does not exist in this memory"
INVALID_SOURCE = "entry {entry} is retracted or invalidated"
UNPROVED_SOURCE = "entry {entry}'s access cannot be proved"
ALREADY_INVALID = "entry {entry} is already retracted or invalidated"
TOO_MANY = "more changes than one transaction holds; the next learning applies it"

# Tags an observation carries from its sources: where they come from, so purging one of
# them takes it too, and who they are for (its own clause; the sources still intersect).
_CARRIED = ("from:", "chat:", "channel:", "app:", "org:", "for:")


@dataclass(frozen=True)
class Applied:
    """An applied change: its place in the answer, its op, and the entry it wrote (none for
    a rename: topics are words, and the run's log has readers who may not see them)."""

    index: int
    op: str
    entry_id: str = ""


@dataclass(frozen=True)
class RefusedChange:
    """A refused change: its place, its op, why, and the ids it names that the run may know."""

    index: int
    op: str
    reason: str
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class NewEntry:
    """A fact or observation to put (`meta` with its tags as stored); a fact carries its
    source items' access rule."""

    meta: EntryMeta
    content: str
    rule: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Invalidation:
    """An entry's metadata change: `before` as read, `meta` after (tags as stored)."""

    before: EntryMeta
    meta: EntryMeta


Write = NewEntry | Invalidation


@dataclass(frozen=True)
class Learned:
    """What a batch of learned changes does: the version it makes (the one read when nothing
    applies), the applied and refused changes in answer order, the entry writes, the topic
    names when they change and the topic tokens a rename named anew."""

    version: int
    applied: tuple[Applied, ...] = ()
    rejected: tuple[RefusedChange, ...] = ()
    writes: tuple[Write, ...] = ()
    topics: TopicNames | None = None
    renamed: tuple[str, ...] = ()

    @property
    def entry_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.entry_id for a in self.applied if a.entry_id))


@dataclass(frozen=True)
class PoolState:
    """The pool as read: its version, entries with topics by name, tags as stored, names."""

    version: int
    metas: Mapping[str, EntryMeta]
    tokens: Mapping[str, tuple[str, ...]]
    topics: TopicNames = field(default_factory=TopicNames)


@dataclass(frozen=True)
class Run:
    """What the run learned from: its Chat, its evidence item ids, every reader of the Chat's
    answers, the cited items found and each Turn's saved actor."""

    chat: Chat
    evidence: frozenset[str]
    readers: Reader
    items: Mapping[str, ChatItem]
    actors: Mapping[str, str]


def decide(
    changes: Sequence[LearningChange],
    state: PoolState,
    run: Run,
    *,
    new_id: Callable[[], str],
    now_ms: int,
    max_writes: int,
) -> Learned:
    """Split `changes` into applied ones and refusals. Later changes see earlier ones: a
    rename covers the entries written before it, an invalidated entry is invalid. At most
    `max_writes` entries are written (one transaction); the rest are refused `TOO_MANY`."""
    batch = _Batch(state, run, new_id, now_ms, max_writes)
    for index, change in enumerate(changes):
        batch.take(index, change)
    if not batch.applied:
        return Learned(state.version, rejected=tuple(batch.rejected))
    names = batch.names.collected(t for tags in batch.tokens.values() for t in tags)
    return Learned(
        batch.version,
        tuple(batch.applied),
        tuple(batch.rejected),
        tuple(batch.writes),
        names if names != state.topics else None,
        tuple(dict.fromkeys(batch.renamed)),
    )


@dataclass(frozen=True)
class _Planned:
    write: Write
    named: EntryMeta
    names: TopicNames


class _Batch:
    """The pool as the batch changes it, and what it decided so far."""

    def __init__(
        self,
        state: PoolState,
        run: Run,
        new_id: Callable[[], str],
        now_ms: int,
        max_writes: int,
    ) -> None:
        self.run, self.new_id, self.now, self.max_writes = run, new_id, now_ms, max_writes
        self.version = state.version + 1
        self.metas = dict(state.metas)
        self.tokens = dict(state.tokens)
        self.names = state.topics
        self.judge = Judge(self.metas.get)
        self.scope = Scope(run.evidence, _Visible(self.judge, run.readers, self.metas))
        self.applied: list[Applied] = []
        self.rejected: list[RefusedChange] = []
        self.writes: list[Write] = []
        self.renamed: list[str] = []

    def take(self, index: int, change: LearningChange) -> None:
        proposal = _proposal(change, self.judge, self.metas, self.tokens, self.names)
        ids = () if proposal.rename else tuple(self.scope.known(proposal.ids))
        outcome = gate_reason(proposal, self.scope) or self._planned(change)
        if isinstance(outcome, str):
            self.rejected.append(RefusedChange(index, change.op, outcome, ids))
        elif outcome is None:
            self.applied.append(Applied(index, change.op))
        elif len(self.writes) >= self.max_writes:
            self.rejected.append(RefusedChange(index, change.op, TOO_MANY, ids))
        else:
            entry_id = outcome.named.id
            self.writes.append(outcome.write)
            self.names, self.metas[entry_id] = outcome.names, outcome.named
            self.tokens[entry_id] = outcome.write.meta.tags
            self.applied.append(Applied(index, change.op, entry_id))

    def _planned(self, change: LearningChange) -> _Planned | str | None:
        """The change's write, or why it is refused; None for an applied rename (one change
        of the head row: no entry is rewritten or decrypted)."""
        if isinstance(change, RenameTopicChange):
            carried = (t for tags in self.tokens.values() for t in tags)
            outcome = self.names.renamed(change.from_, change.to, carried)
            if isinstance(outcome, str):
                return outcome
            self.names, moved = outcome
            self.renamed += moved
            return None
        if isinstance(change, InvalidateChange):
            return self._invalidation(change.id)
        rule: tuple[str, ...] | None = None
        if isinstance(change, FactChange):
            made = learned_fact(self.new_id(), self.run, change, self.now, self.version)
            meta, rule = made if isinstance(made, tuple) else (made, None)
        else:
            org_id = self.run.chat.org_id
            meta = observation(
                self.new_id(), self.judge, org_id, change, self.metas, self.now, self.version
            )
        if isinstance(meta, str):
            return meta
        tags, names = self.names.stored(meta.tags)
        return _Planned(NewEntry(replace(meta, tags=tags), change.content, rule), meta, names)

    def _invalidation(self, entry_id: str) -> _Planned | str:
        before = self.metas.get(entry_id)
        if before is None:
            return UNKNOWN_ENTRY.format(entry=entry_id)
        after = invalidated(before, self.now, self.version)
        if isinstance(after, str):
            return after
        tags, names = self.names.stored(after.tags, self.tokens.get(entry_id, ()))
        return _Planned(Invalidation(before, replace(after, tags=tags)), after, names)


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


def item_rule(chat: Chat, actor: str | None) -> tuple[str, ...]:
    """The access rule of an item of `chat` said in a Turn of `actor`: the people who saw it
    happen (the Turn's person, or the Channel group in a group chat), in that organization."""
    if chat.channel_id is not None:
        return (f"for:channel:{chat.channel_id}", f"org:{chat.org_id}")
    return (f"for:person:{actor or chat.owner}", f"org:{chat.org_id}")


def learned_fact(
    entry_id: str, run: Run, change: FactChange, now_ms: int, version: int
) -> tuple[EntryMeta, tuple[str, ...]] | str:
    """A fact from the cited items of the run's Chat and the access rule every one of them
    has, or the reason it is refused."""
    reason = _text_reason(change.topics, change.content)
    if reason is not None:
        return reason
    if not change.sources:
        return FACT_NO_SOURCE
    found: list[ChatItem] = []
    for item_id in dict.fromkeys(change.sources):
        item = run.items.get(item_id)
        if item is None:
            return UNKNOWN_ITEM.format(item=item_id)
        found.append(item)
    if not any(item.person_words for item in found):
        return FACT_NEEDS_PERSON
    chat = run.chat
    rules = {item_rule(chat, run.actors.get(item.turn_id)) for item in found}
    if len(rules) != 1:
        return MIXED_RULES
    rule = rules.pop()
    people = [f"from:{item.actor}" for item in found if item.person_words]
    apps = [f"app:{item.app}" for item in found if item.app]
    where = [f"chat:{chat.id}"] + ([f"channel:{chat.channel_id}"] if chat.channel_id else [])
    tags = dict.fromkeys((*people, *rule, *where, *apps, *change.topics))
    sources = [ItemSource(item.id, chat.id) for item in found]
    meta = new_entry(
        entry_id, "fact", tags, change.content, now_ms, version, by="memory_bot", sources=sources
    )
    return meta, rule


def observation(
    entry_id: str,
    judge: Judge,
    org_id: str,
    change: ObservationChange,
    pool: Mapping[str, EntryMeta],
    now_ms: int,
    version: int,
) -> EntryMeta | str:
    """An observation on the cited entries of the pool, or the reason it is refused: every
    source must exist, be valid and have proved access (the memory Bot of `org_id` sees it)."""
    reason = _text_reason(change.topics, change.content)
    if reason is not None:
        return reason
    if not change.sources:
        return OBSERVATION_NO_SOURCE
    learner = Learner(org_id)
    carried: dict[str, None] = {}
    for source_id in dict.fromkeys(change.sources):
        source = pool.get(source_id)
        if source is None:
            return UNKNOWN_ENTRY.format(entry=source_id)
        if not valid(source):
            return INVALID_SOURCE.format(entry=source_id)
        if not judge.sees(learner, source):
            return UNPROVED_SOURCE.format(entry=source_id)
        carried |= dict.fromkeys(t for t in source.tags if t.startswith(_CARRIED))
    tags = (*carried, *dict.fromkeys(change.topics))
    sources = [EntrySource(s) for s in dict.fromkeys(change.sources)]
    return new_entry(
        entry_id,
        "observation",
        tags,
        change.content,
        now_ms,
        version,
        by="memory_bot",
        sources=sources,
        confidence=change.confidence,
    )


def invalidated(meta: EntryMeta, now_ms: int, version: int) -> EntryMeta | str:
    """The entry marked no longer true (its history stays), or the reason it is refused."""
    if not valid(meta):
        return ALREADY_INVALID.format(entry=meta.id)
    return replace(meta, invalidated_at=now_ms, updated_at=now_ms, rev=version, by="memory_bot")


def _text_reason(topics: Sequence[str], content: str) -> str | None:
    reason = topics_reason(topics)
    if reason is None and not content.strip():
        return EMPTY_CONTENT
    return reason
