"""Tags (seed 002, "Who sees an entry"): service tags, which belong to the service, and
topics, which people and the memory Bot write.

- `for:` says who may see an entry, `org:` where it happened, `from:`, `chat:`, `channel:`,
  `app:` where it comes from; `forgot:<userId>` keeps out a person who took back their part
  and is never shown nor filtered by (`domain/audiences.py` judges them).
- Topics are 1 to 64 lowercase letters, numbers and dashes, with a letter or number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_memory.domain.errors import ValidationFailed

COLON_TAG = "a tag with a colon belongs to the service; only topics may be written"
BAD_TOPIC = "a topic is 1 to 64 lowercase letters, numbers and dashes, with a letter or number"
UNKNOWN_SERVICE_TAG = "not one of the service's tags"
BAD_TAG_VALUE = "the id in a service tag is 1 to 128 characters without ':', ',' or blanks"
NOT_PURGEABLE = "purge takes one from:, chat:, org: or channel: tag"

_TOPIC = re.compile(r"[a-z0-9-]{1,64}")
VALUE = re.compile(r"[^:,\s]{1,128}")


class InvalidTag(ValueError):
    """A text that is not a valid tag; `reason` is one of this module's named reasons."""

    def __init__(self, tag: str, reason: str) -> None:
        super().__init__(f"{tag!r}: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class ServiceTag:
    """A tag of the service: its kind's prefix and the id after it. A kind names its prefix
    in its header (`prefix=...`), which makes it one of the kinds `parse_tag` reads."""

    prefix: ClassVar[str]
    value: str

    def __init_subclass__(cls, *, prefix: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.prefix = prefix
        _KINDS.append(cls)

    def __str__(self) -> str:
        return f"{self.prefix}{self.value}"


_KINDS: list[type[ServiceTag]] = []


class FromPerson(ServiceTag, prefix="from:"):
    """`from:<userId>`: a person who said or did what the entry is about."""


class ForPerson(ServiceTag, prefix="for:person:"):
    """`for:person:<userId>`: this person may see the entry."""


class ForChannel(ServiceTag, prefix="for:channel:"):
    """`for:channel:<channelId>`: the current members of this Channel group may see it."""


class Forgot(ServiceTag, prefix="forgot:"):
    """`forgot:<userId>`: this person took back their part (Forget): the entry is no longer
    for them, whatever its other `for:` tags admit."""


class InOrg(ServiceTag, prefix="org:"):
    """`org:<organizationId>`: where it happened; only work in this organization sees it."""


class FromChat(ServiceTag, prefix="chat:"):
    """`chat:<id>`: the Chat it comes from."""


class FromChannel(ServiceTag, prefix="channel:"):
    """`channel:<id>`: the Channel group it comes from."""


class FromApp(ServiceTag, prefix="app:"):
    """`app:<tool>`: a tool result from an App supports it."""


@dataclass(frozen=True)
class ForBot:
    """`for:bot`: everyone who uses the Bot (in the entry's organization) may see it."""

    def __str__(self) -> str:
        return "for:bot"


@dataclass(frozen=True)
class Topic:
    """A tag without a colon, chosen by the memory Bot or a person (`testing`)."""

    name: str

    def __str__(self) -> str:
        return self.name


Tag = ServiceTag | ForBot | Topic
FOR_BOT = ForBot()
PREFIXES = tuple((kind.prefix, kind) for kind in _KINDS)


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
    for prefix, kind in PREFIXES:
        if text.startswith(prefix):
            value = text[len(prefix) :]
            if not VALUE.fullmatch(value):
                raise InvalidTag(text, BAD_TAG_VALUE)
            return kind(value)
    raise InvalidTag(text, UNKNOWN_SERVICE_TAG)


# Tags that decide access but are never shown to a reader (who forgot an entry).
HIDDEN_PREFIXES = (Forgot.prefix,)
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
