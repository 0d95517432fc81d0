"""Who may see one entry (seed 002, "Who sees an entry"), decided on plaintext metadata.

- Service tags (a colon) belong to the service: `for:` says who may see an entry
  (`forgot:<userId>`: no longer for that person, after their Forget), `org:` where it
  happened, `from:`, `chat:`, `channel:`, `app:` where it comes from. Topics are
  lowercase letters, numbers and dashes. Nobody sees an entry without a `for:` tag.
- Who forgot an entry is nobody else's business: `forgot:` tags keep that person out and
  are never shown (`shown_tags`) nor filtered by.
- An entry's own audience: it is for the people it names, the current members of the Channel
  groups it names, or everyone who uses the Bot (`for:bot`), and only inside every
  organization its `org:` tags name (an entry that names none is hidden).
- An entry built on other entries (`EntrySource`) is also only for readers of every source,
  recursively. A missing source, a loop in the source links, a retracted or invalidated
  source, or links deeper than the bound hide it from everyone (its own history included).
- The answer is a property of the pool's metadata: the order of evaluation and the memo
  never change it. A retracted or invalidated entry stays visible to its readers (authorized
  history stays); it only hides what is built on it.

Pools without audiences (seed 000's agent memory keeps an entry whose session was deleted)
use `NO_AUDIENCE`: the seam is `AudienceRule`, chosen per pool kind, not a test in callers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from agent_memory.domain.entries import EntryMeta, EntrySource, ItemSource
from agent_memory.domain.errors import ValidationFailed

# --- Tags ---------------------------------------------------------------------------------

COLON_TAG = "a tag with a colon belongs to the service; only topics may be written"
BAD_TOPIC = "a topic is 1 to 64 lowercase letters, numbers and dashes, with a letter or number"
UNKNOWN_SERVICE_TAG = "not one of the service's tags"
BAD_TAG_VALUE = "the id in a service tag is 1 to 128 characters without ':', ',' or blanks"
NOT_PURGEABLE = "purge takes one from:, chat:, org: or channel: tag"

_TOPIC = re.compile(r"[a-z0-9-]{1,64}")
_VALUE = re.compile(r"[^:,\s]{1,128}")


class InvalidTag(ValueError):
    """A text that is not a valid tag; `reason` is one of this module's named reasons."""

    def __init__(self, tag: str, reason: str) -> None:
        super().__init__(f"{tag!r}: {reason}")
        self.tag = tag
        self.reason = reason


@dataclass(frozen=True)
class FromPerson:
    """`from:<userId>`: a person who said or did what the entry is about."""

    user: str

    def __str__(self) -> str:
        return f"from:{self.user}"


@dataclass(frozen=True)
class ForPerson:
    """`for:person:<userId>`: this person may see the entry."""

    user: str

    def __str__(self) -> str:
        return f"for:person:{self.user}"


@dataclass(frozen=True)
class ForChannel:
    """`for:channel:<channelId>`: the current members of this Channel group may see it."""

    channel: str

    def __str__(self) -> str:
        return f"for:channel:{self.channel}"


@dataclass(frozen=True)
class ForBot:
    """`for:bot`: everyone who uses the Bot (in the entry's organization) may see it."""

    def __str__(self) -> str:
        return "for:bot"


@dataclass(frozen=True)
class Forgot:
    """`forgot:<userId>`: this person took back their part (Forget): the entry is no longer
    for them, whatever its other `for:` tags admit."""

    user: str

    def __str__(self) -> str:
        return f"forgot:{self.user}"


@dataclass(frozen=True)
class InOrg:
    """`org:<organizationId>`: where it happened; only work in this organization sees it."""

    org: str

    def __str__(self) -> str:
        return f"org:{self.org}"


@dataclass(frozen=True)
class FromChat:
    """`chat:<id>`: the Chat it comes from."""

    chat: str

    def __str__(self) -> str:
        return f"chat:{self.chat}"


@dataclass(frozen=True)
class FromChannel:
    """`channel:<id>`: the Channel group it comes from."""

    channel: str

    def __str__(self) -> str:
        return f"channel:{self.channel}"


@dataclass(frozen=True)
class FromApp:
    """`app:<tool>`: a tool result from an App supports it."""

    tool: str

    def __str__(self) -> str:
        return f"app:{self.tool}"


@dataclass(frozen=True)
class Topic:
    """A tag without a colon, chosen by the memory Bot or a person (`testing`)."""

    name: str

    def __str__(self) -> str:
        return self.name


ServiceTag = (
    FromPerson | ForPerson | ForChannel | ForBot | Forgot | InOrg | FromChat | FromChannel | FromApp
)
Tag = ServiceTag | Topic
FOR_BOT = ForBot()

# The longest prefix first: `for:person:` before a bare `for:`.
_PREFIXES: tuple[tuple[str, Callable[[str], ServiceTag]], ...] = (
    ("for:person:", ForPerson),
    ("for:channel:", ForChannel),
    ("from:", FromPerson),
    ("forgot:", Forgot),
    ("org:", InOrg),
    ("chat:", FromChat),
    ("channel:", FromChannel),
    ("app:", FromApp),
)


def topic_reason(text: str) -> str | None:
    """Why `text` is not a topic a person or the memory Bot may write (None: it is one)."""
    if ":" in text:
        return COLON_TAG
    if not _TOPIC.fullmatch(text) or text.strip("-") == "":
        return BAD_TOPIC
    return None


def parse_tag(text: str) -> Tag:
    """The tag `text` names; raises InvalidTag with the named reason."""
    if ":" not in text:
        reason = topic_reason(text)
        if reason is not None:
            raise InvalidTag(text, reason)
        return Topic(text)
    if text == "for:bot":
        return FOR_BOT
    for prefix, build in _PREFIXES:
        if text.startswith(prefix):
            value = text[len(prefix) :]
            if not _VALUE.fullmatch(value):
                raise InvalidTag(text, BAD_TAG_VALUE)
            return build(value)
    raise InvalidTag(text, UNKNOWN_SERVICE_TAG)


# Tags that decide access but are never shown to a reader (who forgot an entry).
HIDDEN_PREFIXES = ("forgot:",)
NOT_SHOWN = "forgot: tags are never shown, so a read does not filter by them"


def shown_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """An entry's tags as readers see them: without the hidden ones."""
    return tuple(t for t in tags if not t.startswith(HIDDEN_PREFIXES))


def require_topics(tags: Sequence[str], path: Sequence[str | int]) -> tuple[str, ...]:
    """A person's tags (Remember): topics only, else 400 naming the offending tag."""
    for index, tag in enumerate(tags):
        reason = topic_reason(tag)
        if reason is not None:
            raise ValidationFailed(f"{tag!r}: {reason}", [*path, index])
    return tuple(tags)


def purge_tag(text: str) -> FromPerson | FromChat | InOrg | FromChannel:
    """The tag a purge removes by; raises InvalidTag unless it is from:, chat:, org:, channel:."""
    tag = parse_tag(text)
    if not isinstance(tag, FromPerson | FromChat | InOrg | FromChannel):
        raise InvalidTag(text, NOT_PURGEABLE)
    return tag


@dataclass(frozen=True)
class EntryTags:
    """An entry's tags, sorted by what they mean."""

    people: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()
    for_bot: bool = False
    orgs: frozenset[str] = frozenset()
    service: tuple[ServiceTag, ...] = ()
    topics: tuple[str, ...] = ()
    # Colon tags that do not parse: they hide the entry (nobody can tell what they allow).
    invalid: tuple[str, ...] = ()

    @classmethod
    def of(cls, tags: Iterable[str]) -> EntryTags:
        service: list[ServiceTag] = []
        topics: list[str] = []
        invalid: list[str] = []
        for text in tags:
            try:
                tag = parse_tag(text)
            except InvalidTag:
                # A stored topic that does not match today's alphabet says nothing about access.
                if ":" in text:
                    invalid.append(text)
                continue
            if isinstance(tag, Topic):
                topics.append(tag.name)
            else:
                service.append(tag)
        return cls(
            people=frozenset(t.user for t in service if isinstance(t, ForPerson)),
            channels=frozenset(t.channel for t in service if isinstance(t, ForChannel)),
            for_bot=any(isinstance(t, ForBot) for t in service),
            orgs=frozenset(t.org for t in service if isinstance(t, InOrg)),
            service=tuple(service),
            topics=tuple(topics),
            invalid=tuple(invalid),
        )

    @property
    def clause(self) -> Clause:
        """Who the `for:` tags admit."""
        return Clause(self.people, self.channels, self.for_bot)


# --- Readers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    """A person reading in an organization. `member_of` answers from the current Channel
    members (looked up for this read), so a `for:channel:` audience follows membership."""

    user_id: str
    org_id: str
    member_of: Callable[[str], bool] = field(default=lambda _channel: False, compare=False)

    @classmethod
    def in_channels(cls, user_id: str, org_id: str, channels: Collection[str] = ()) -> Person:
        """A person who is currently a member of `channels`."""
        return cls(user_id, org_id, frozenset(channels).__contains__)


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
    org_id: str, owner: str, channel_id: str | None, member_of: Callable[[str], bool]
) -> Reader:
    """Who reads a Chat's answers: the Channel group for a group Chat, else its owner."""
    if channel_id is not None:
        return Group(channel_id, org_id)
    return Person(owner, org_id, member_of)


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
            return reader.user_id in self.people or any(map(reader.member_of, self.channels))
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
    with Channel members looked up at each read it cannot be folded into one list)."""

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


# Anyone the object's own access check let in (pools without audiences).
EVERYONE = Audience()

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


class Judge(Protocol):
    """Decides visibility for one evaluation (one consistent read of a pool), memoized."""

    def visibility(self, entry: EntryMeta) -> Visibility: ...

    def visibility_of(self, entry_id: str) -> Visibility: ...

    def sees(self, reader: Reader, entry: EntryMeta) -> bool: ...

    def visible(self, reader: Reader, entries: Iterable[EntryMeta]) -> list[EntryMeta]: ...


class AudienceRule(Protocol):
    """A pool kind's rule for who sees one of its entries."""

    def judge(self, resolve: Resolver) -> Judge:
        """A judge over one consistent read: `resolve` finds an entry of the pool by id."""
        ...


class _Open:
    """Every entry is for whoever passed the object's access check."""

    def visibility(self, entry: EntryMeta) -> Visibility:
        return EVERYONE

    def visibility_of(self, entry_id: str) -> Visibility:
        return EVERYONE

    def sees(self, reader: Reader, entry: EntryMeta) -> bool:
        return True

    def visible(self, reader: Reader, entries: Iterable[EntryMeta]) -> list[EntryMeta]:
        return list(entries)


@dataclass(frozen=True)
class NoAudience:
    """Pools without audiences (seeds 000, 003, 004): sources are never looked up, so an entry
    whose session was deleted stays."""

    def judge(self, resolve: Resolver) -> Judge:
        return _Open()


@dataclass(frozen=True)
class SourceAudiences:
    """Seed 002's rule: own tags, intersected with every source's audience, recursively."""

    # Observations on observations: deeper chains are hidden rather than followed.
    max_depth: int = 32

    def judge(self, resolve: Resolver) -> Judge:
        return AudienceJudge(resolve, self.max_depth)


NO_AUDIENCE = NoAudience()
SOURCE_AUDIENCES = SourceAudiences()


@dataclass(frozen=True)
class _Proved:
    audience: Audience
    # The longest chain of entry links below the entry (0: it stands on no entry).
    depth: int


@dataclass(frozen=True)
class _Cut:
    """The walk reached the depth bound; only its start is known to be too deep."""


class AudienceJudge:
    """`SourceAudiences`' judge. Each entry is resolved and decided once per judge; results
    depend only on the pool (depth is the entry's own chain length, not where the walk began),
    so the memo and the order of questions never change an answer."""

    def __init__(self, resolve: Resolver, max_depth: int = 32) -> None:
        self._resolve = resolve
        self._max_depth = max_depth
        self._memo: dict[str, _Proved | Hidden] = {}
        self._walking: set[str] = set()

    def visibility(self, entry: EntryMeta) -> Visibility:
        """Who may see `entry`: an Audience, or Hidden with the reason."""
        return _public(self._visit(entry, 0), entry.id, self._max_depth)

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
        own = _own(entry)
        if isinstance(own, Hidden):
            return own
        audience, depth, cut = own, 0, False
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


def _own(entry: EntryMeta) -> Audience | Hidden:
    rule = _rule(entry.tags)
    return rule if isinstance(rule, Audience) else Hidden(rule, entry.id)


# Where each service tag's value goes: audience tags are collected, the others only checked.
_BUCKETS = (
    "for:person:",
    "for:channel:",
    "org:",
    "forgot:",
    "from:",
    "chat:",
    "channel:",
    "app:",
)


_COLLECTED = ("for:person:", "for:channel:", "org:", "forgot:")


def _rule(tags: Iterable[str]) -> Audience | str:
    """The audience that tags state, or the reason they state none. The hot path of every
    read, so it builds no tag objects (EntryTags.of parses the same alphabet)."""
    found: dict[str, list[str]] = {p: [] for p in _COLLECTED}
    everyone = False
    for text in tags:
        if ":" not in text:
            continue
        if text == "for:bot":
            everyone = True
            continue
        for prefix in _BUCKETS:
            if text.startswith(prefix):
                if not _VALUE.fullmatch(text, len(prefix)):
                    return BAD_TAG.format(tag=text)
                found.get(prefix, []).append(text[len(prefix) :])
                break
        else:
            return BAD_TAG.format(tag=text)
    people, channels = frozenset(found["for:person:"]), frozenset(found["for:channel:"])
    if not (people or channels or everyone):
        return NO_AUDIENCE_TAG
    if not found["org:"]:
        return NO_ORGANIZATION
    # for:bot admits everyone there: only the organization restricts.
    clauses = frozenset() if everyone else frozenset({Clause(people, channels)})
    return Audience(frozenset(found["org:"]), clauses, frozenset(found["forgot:"]))


def _public(result: _Proved | Hidden | _Cut, entry_id: str, max_depth: int) -> Visibility:
    if isinstance(result, _Proved):
        return result.audience
    if isinstance(result, Hidden):
        return result
    return Hidden(TOO_DEEP.format(max_depth=max_depth), entry_id)


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
    if not isinstance(audience, ForChannel | ForBot):
        return SHARE_NOT_WIDER
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
            Group(audience.channel, org) if isinstance(audience, ForChannel) else Everyone(org)
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


def rule_of(tags: Iterable[str]) -> Audience | None:
    """The access rule that `for:` and `org:` tags state, e.g. the rule saved for an item
    (None: they prove nothing, as for an entry without them)."""
    rule = _rule(tags)
    return rule if isinstance(rule, Audience) else None
