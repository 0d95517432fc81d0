"""Who may see one entry (seed 002, "Who sees an entry"), decided on plaintext metadata.

- Tags are `domain/tags.py`'s. Nobody sees an entry without a `for:` tag; a `forgot:` tag
  keeps out the person who took back their part.
- An entry's own audience: the people it names, the current members of the Channel groups it
  names, or everyone who uses the Bot (`for:bot`), and only inside every organization its
  `org:` tags name (an entry that names none is hidden).
- An entry built on other entries (`EntrySource`) is also only for readers of every source,
  recursively. A missing source, a loop in the source links, a retracted or invalidated
  source, or links deeper than the bound hide it from everyone (its own history included).
- The answer is a property of the pool's metadata: the order of evaluation and the memo
  never change it. A retracted or invalidated entry stays visible to its readers (authorized
  history stays); it only hides what is built on it.
- The judge receives what it judges: the pool's entries (`resolve`) and each Person's
  current Channels, which the service reads before it asks.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field

from agent_memory.domain.entries import EntryMeta, EntrySource, ItemSource
from agent_memory.domain.tags import (
    PREFIXES,
    VALUE,
    ForBot,
    ForChannel,
    Forgot,
    ForPerson,
    InOrg,
)

# --- Readers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    """A person reading in an organization, with the Channel groups they are a member of
    now (read for this request, so a `for:channel:` audience follows membership)."""

    user_id: str
    org_id: str
    channels: Container[str] = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Group:
    """Every reader of a group Chat in this Channel, now and later: only entries for the
    group or for everyone reach them (seed 002, "How the Bot uses memory")."""

    channel_id: str
    org_id: str


@dataclass(frozen=True)
class Everyone:
    """Everyone who uses the Bot in the organization (what `for:bot` admits)."""

    org_id: str


@dataclass(frozen=True)
class Learner:
    """The memory Bot learning in an organization: it reads every entry of that organization
    whose audience and sources are proved, whoever the entry is for."""

    org_id: str


Reader = Person | Group | Everyone | Learner


def chat_readers(
    org_id: str, owner: str, channel_id: str | None, channels: Container[str]
) -> Reader:
    """Who reads a Chat's answers: the Channel group for a group Chat, else its owner (a
    member of `channels` now)."""
    if channel_id is not None:
        return Group(channel_id, org_id)
    return Person(owner, org_id, channels)


# --- Audiences ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Clause:
    """One entry's `for:` tags: a reader it names, in a Channel it names, or anyone (for:bot)."""

    people: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()
    everyone: bool = False

    def admits(self, reader: Reader) -> bool:
        if self.everyone or isinstance(reader, Learner):
            return True
        if isinstance(reader, Person):
            return reader.user_id in self.people or any(
                channel in reader.channels for channel in self.channels
            )
        if isinstance(reader, Group):
            return reader.channel_id in self.channels
        return False

    def implies(self, other: Clause) -> bool:
        """Everyone this clause admits, `other` admits too."""
        return other.everyone or (
            not self.everyone and self.people <= other.people and self.channels <= other.channels
        )


@dataclass(frozen=True)
class Audience:
    """Readers admitted by every clause, inside every organization named (an intersection:
    with Channel members read at each request it cannot be folded into one list)."""

    orgs: frozenset[str] = frozenset()
    clauses: frozenset[Clause] = frozenset()
    # People who took back their part (`forgot:`): never admitted.
    excluded: frozenset[str] = frozenset()

    def admits(self, reader: Reader) -> bool:
        # A group or everyone may include an excluded person; the memory Bot is not a reader.
        if (
            self.excluded
            and not isinstance(reader, Learner)
            and (not isinstance(reader, Person) or reader.user_id in self.excluded)
        ):
            return False
        return all(org == reader.org_id for org in self.orgs) and all(
            clause.admits(reader) for clause in self.clauses
        )

    def __and__(self, other: Audience) -> Audience:
        """Readers of both."""
        return Audience(
            self.orgs | other.orgs,
            _simplest(self.clauses | other.clauses),
            self.excluded | other.excluded,
        )


def _simplest(clauses: frozenset[Clause]) -> frozenset[Clause]:
    # A clause another one implies adds nothing to the intersection; for:bot never restricts.
    ordered = sorted(clauses, key=lambda c: len(c.people) + len(c.channels))
    kept: list[Clause] = []
    for clause in ordered:
        if not clause.everyone and not any(k.implies(clause) for k in kept):
            kept.append(clause)
    return frozenset(kept)


NO_AUDIENCE_TAG = "no for: tag says who may see it"
NO_ORGANIZATION = "no org: tag says where it happened"
BAD_TAG = "a service tag does not parse: {tag}"
MISSING_SOURCE = "a source entry does not exist: {source}"
LOOP = "its source links form a loop through {source}"
INACTIVE_SOURCE = "a source is retracted or invalidated: {source}"
TOO_DEEP = "its sources go deeper than {max_depth} links"


@dataclass(frozen=True)
class Hidden:
    """Nobody sees the entry. `reason` is a named reason, `entry` the id where it arose."""

    reason: str
    entry: str


Visibility = Audience | Hidden
Resolver = Callable[[str], EntryMeta | None]


def valid(entry: EntryMeta) -> bool:
    """Active and not invalidated: what may be a source, a memory text, or learning input."""
    return entry.active and entry.invalidated_at is None


def _rule(tags: Iterable[str]) -> Audience | str:
    """The audience that tags state, or the reason they state none. The hot path of every
    read, so it builds no tag objects (`parse_tag` reads the same alphabet)."""
    found: dict[str, list[str]] = {prefix: [] for prefix, _kind in PREFIXES}
    everyone = False
    for text in tags:
        if ":" not in text:
            continue
        if text == "for:bot":
            everyone = True
            continue
        prefix = next((p for p, _kind in PREFIXES if text.startswith(p)), None)
        if prefix is None or not VALUE.fullmatch(text, len(prefix)):
            return BAD_TAG.format(tag=text)
        found[prefix].append(text[len(prefix) :])
    people, channels = frozenset(found[ForPerson.prefix]), frozenset(found[ForChannel.prefix])
    if not (people or channels or everyone):
        return NO_AUDIENCE_TAG
    if not found[InOrg.prefix]:
        return NO_ORGANIZATION
    # for:bot admits everyone there: only the organization restricts.
    clauses = frozenset() if everyone else frozenset({Clause(people, channels)})
    return Audience(frozenset(found[InOrg.prefix]), clauses, frozenset(found[Forgot.prefix]))


def rule_of(tags: Iterable[str]) -> Audience | None:
    """The access rule that `for:` and `org:` tags state, e.g. the rule saved for an item
    (None: they prove nothing, as for an entry without them)."""
    rule = _rule(tags)
    return rule if isinstance(rule, Audience) else None


# --- The judge ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Proved:
    audience: Audience
    # The longest chain of entry links below the entry (0: it stands on no entry).
    depth: int


@dataclass(frozen=True)
class _Cut:
    """The walk reached the depth bound; only its start is known to be too deep."""


class Judge:
    """Seed 002's rule: an entry's own tags, intersected with every source's audience,
    recursively. Decides visibility over one consistent read of a pool (`resolve` finds an
    entry by id). Each entry is resolved and decided once; its depth is its own chain length, not
    where the walk began, so the memo never changes an answer."""

    # Observations on observations: chains deeper than `max_depth` are hidden, not followed.
    def __init__(self, resolve: Resolver, max_depth: int = 32) -> None:
        self._resolve = resolve
        self._max_depth = max_depth
        self._memo: dict[str, _Proved | Hidden] = {}
        self._walking: set[str] = set()

    def visibility(self, entry: EntryMeta) -> Visibility:
        """Who may see `entry`: an Audience, or Hidden with the reason."""
        result = self._visit(entry, 0)
        if isinstance(result, _Proved):
            return result.audience
        if isinstance(result, Hidden):
            return result
        return Hidden(TOO_DEEP.format(max_depth=self._max_depth), entry.id)

    def visibility_of(self, entry_id: str) -> Visibility:
        """As `visibility`, for an id of the pool (a missing one is hidden)."""
        entry = self._resolve(entry_id)
        if entry is None:
            return Hidden(MISSING_SOURCE.format(source=entry_id), entry_id)
        return self.visibility(entry)

    def sees(self, reader: Reader, entry: EntryMeta) -> bool:
        """Whether `reader` may see `entry` (its content, its history, its changes)."""
        seen = self.visibility(entry)
        return isinstance(seen, Audience) and seen.admits(reader)

    def channels(self, entry: EntryMeta) -> frozenset[str]:
        """The Channels whose current members decide who sees `entry`: the service reads a
        Person's membership of them before it asks `sees`."""
        seen = self.visibility(entry)
        if isinstance(seen, Hidden):
            return frozenset()
        return frozenset(channel for clause in seen.clauses for channel in clause.channels)

    def visible(self, reader: Reader, entries: Iterable[EntryMeta]) -> list[EntryMeta]:
        """The entries `reader` may see, in the given order."""
        return [entry for entry in entries if self.sees(reader, entry)]

    def _visit(self, entry: EntryMeta, position: int) -> _Proved | Hidden | _Cut:
        known = self._memo.get(entry.id)
        if known is not None:
            return known
        if position > self._max_depth:
            return _Cut()
        self._walking.add(entry.id)
        try:
            result = self._decide(entry, position)
        finally:
            self._walking.discard(entry.id)
        if not isinstance(result, _Cut):
            self._memo[entry.id] = result
        return result

    def _decide(self, entry: EntryMeta, position: int) -> _Proved | Hidden | _Cut:
        audience = _rule(entry.tags)
        if isinstance(audience, str):
            return Hidden(audience, entry.id)
        depth, cut = 0, False
        for source in entry.sources:
            if not isinstance(source, EntrySource):
                continue
            found = self._source(source.entry, position)
            if isinstance(found, Hidden):
                return found
            if isinstance(found, _Cut):
                cut = True
                continue
            audience &= found.audience
            depth = max(depth, found.depth + 1)
        # After a cut only the start of the walk is known to lie more than max_depth deep.
        if cut and position > 0:
            return _Cut()
        if cut or depth > self._max_depth:
            return Hidden(TOO_DEEP.format(max_depth=self._max_depth), entry.id)
        return _Proved(audience, depth)

    def _source(self, source_id: str, position: int) -> _Proved | Hidden | _Cut:
        if source_id in self._walking:
            return Hidden(LOOP.format(source=source_id), source_id)
        source = self._resolve(source_id)
        if source is None:
            return Hidden(MISSING_SOURCE.format(source=source_id), source_id)
        if not valid(source):
            return Hidden(INACTIVE_SOURCE.format(source=source_id), source_id)
        return self._visit(source, position + 1)


# --- Share --------------------------------------------------------------------------------

# One answer for an entry that is not the requester's and for one that does not exist.
NOT_FOR_YOU = "this bot memory entry is not for you, or does not exist"
SHARE_INVALID = "a retracted or invalidated entry is not shared"
SHARE_NOT_WIDER = "a share widens to for:channel:<id> or for:bot"
SHARE_NO_SOURCE = "it stands on no source, so nothing proves wider readers (its own rule stays)"
SHARE_ITEM_UNPROVED = "no saved access rule for source item {item}"
SHARE_ITEM_REFUSES = "source item {item}'s access rule does not admit {readers}"
SHARE_SOURCE_REFUSES = "source entry {source}'s access rule does not admit {readers}"
ItemRule = Callable[[ItemSource], Audience | None]


def share_reason(
    judge: Judge,
    requester: Reader,
    entry: EntryMeta,
    audience: ForChannel | ForBot,
    item_rule: ItemRule,
) -> str | None:
    """Why `requester` may not make `entry` also for `audience` (None: allowed, because every
    source's access rule admits the new readers; API.md's 409 EntryConflict otherwise).

    `item_rule` gives the access rule saved for a source item when the fact was learned (None:
    no proof). No reason, instruction or ownership of the Bot enters this decision.
    """
    seen = judge.visibility(entry)
    # A hidden entry is for nobody; its reason may name sources the requester cannot see.
    if isinstance(seen, Hidden) or not seen.admits(requester):
        return NOT_FOR_YOU
    if not valid(entry):
        return SHARE_INVALID
    if not entry.sources:
        return SHARE_NO_SOURCE
    for org in sorted(seen.orgs):
        readers: Reader = (
            Group(audience.value, org) if isinstance(audience, ForChannel) else Everyone(org)
        )
        for source in entry.sources:
            if isinstance(source, ItemSource):
                rule = item_rule(source)
                if rule is None:
                    return SHARE_ITEM_UNPROVED.format(item=source.item)
                if not rule.admits(readers):
                    return SHARE_ITEM_REFUSES.format(item=source.item, readers=audience)
                continue
            found = judge.visibility_of(source.entry)
            if not isinstance(found, Audience) or not found.admits(readers):
                return SHARE_SOURCE_REFUSES.format(source=source.entry, readers=audience)
    return None


def shared_tags(tags: Sequence[str], audience: ForChannel | ForBot) -> tuple[str, ...]:
    """`tags` with the new audience added once (after `share_reason` said None)."""
    text = str(audience)
    return tuple(tags) if text in tags else (*tags, text)
