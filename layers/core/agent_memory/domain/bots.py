"""Bots, Channel groups, Chats, Turns and their Items (seed 002; API.md "Bots, channels
and chats").

- A Bot belongs to an organization; people hold `read` or `write` on it, its owner `write`
  (domain/grants.py). A link lets another organization's people use it there: it learns and
  reads inside that organization only, and that organization's memory is a separate
  tenant's (the home organization neither reads nor purges it).
- A Channel is a group of people of one organization; its creator is a member.
- A Chat is private (its owner reads it) or for a Channel (its current members read it); a
  `review` Chat has no confide tool and teaches nothing.
- A Turn's saved actor is the person who started it: the actor sets who may see what the
  Bot learns from it; an author name is never parsed as a user id.
- Items: the person's words (`user`, the Turn's input), the Bot's words (`assistant`), tool
  results of an App (`tool` with `app`) and notices of the service (`notice`). Only `user`
  items are a person's words. Ids are numbered per Chat and never reused, even after the
  history is deleted: learned facts keep citing the ids they were learned from.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal, get_args

from agent_memory.domain.bounds import (
    MAX_BOT_NAME_LENGTH,
    MAX_CHANNEL_MEMBERS,
    MAX_TURN_ITEMS,
)
from agent_memory.domain.errors import (
    ChatConflict,
    Forbidden,
    NotFound,
    TooLarge,
    ValidationFailed,
)
from agent_memory.domain.grants import GrantLevels, Level
from agent_memory.domain.identity import Principal, person_of
from agent_memory.domain.sessions import ItemRole, NewItem, check_content, check_items, item_id

MAX_GRANTS = 100
# A Chat's history: item ids stay below `i-50000`, as a Session's do.
MAX_CHAT_ITEMS = 50_000

ChatKind = Literal["chat", "review"]
CHAT_KINDS: tuple[str, ...] = get_args(ChatKind)
# What a client adds to a Turn: the person's words are its input, never an added item.
ADDED_ROLES: tuple[str, ...] = ("assistant", "tool", "notice")
TurnStatus = Literal["open", "completed", "abandoned"]
# A Turn not completed within this time of its last item is closed as abandoned: a client
# that crashed never holds back learning, and its items become readable (docs/adr/0025).
ABANDONED_AFTER_MS = 24 * 3600 * 1000

BOTS_BELONG_TO_A_PERSON = "bots, channels and chats belong to a person: use a user's token"
BAD_NAME = f"name is 1..{MAX_BOT_NAME_LENGTH} characters"
PERSON_WORDS_ARE_INPUT = "a person's words are the turn's input; items are assistant, tool, notice"
TURN_COMPLETED = "the turn completed; it takes no more items"
TURN_ABANDONED = "the turn was closed as abandoned: not completed within 24 hours of its last item"
ONLY_OWNER_DELETES = "only the chat's owner deletes its history"
ONLY_CREATOR_OR_ADMIN = "only the channel's creator or an organization admin changes members"
HISTORY_FULL = f"a chat holds at most {MAX_CHAT_ITEMS} items; continue in a new chat"


def check_name(name: str) -> str:
    name = name.strip()
    if not 1 <= len(name) <= MAX_BOT_NAME_LENGTH:
        raise ValidationFailed(BAD_NAME, ["name"])
    return name


# --- Bots ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bot:
    """A Bot and who holds which level on it, at home and in linked organizations."""

    id: str
    org_id: str
    name: str
    owner: str
    levels: Mapping[str, Level] = field(default_factory=lambda: MappingProxyType({}))
    links: Mapping[str, Mapping[str, Level]] = field(default_factory=lambda: MappingProxyType({}))

    def grants(self) -> GrantLevels:
        return GrantLevels.of(self.org_id, self.owner, self.levels, self.links)


def new_bot(bot_id: str, org_id: str, owner: str, name: str, levels: Mapping[str, Level]) -> Bot:
    """A Bot owned by `owner` (who holds write whatever `levels` says)."""
    if len(levels) > MAX_GRANTS:
        raise ValidationFailed(f"at most {MAX_GRANTS} grants", ["grants"])
    own = dict(levels)
    own[owner] = "write"
    return Bot(bot_id, org_id, check_name(name), owner, MappingProxyType(own))


def linked_bot(bot: Bot, org_id: str, changes: Mapping[str, Level | None]) -> Bot:
    """The Bot with `org_id` linked in, or its link's grants changed (None removes a
    person's grant; people not named keep theirs: domain/grants.py)."""
    if len(changes) > MAX_GRANTS:
        raise ValidationFailed(f"at most {MAX_GRANTS} grants", ["grants"])
    grants = bot.grants().linked(org_id, changes, what="bot")
    if len(grants.links[org_id]) > MAX_GRANTS:
        raise ValidationFailed(f"at most {MAX_GRANTS} grants", ["grants"])
    return replace(bot, links=grants.links)


# --- Channels -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Channel:
    """A Channel group: people of one organization; `creator` changes its members."""

    id: str
    org_id: str
    name: str
    creator: str
    members: tuple[str, ...] = ()

    def has(self, user_id: str) -> bool:
        return user_id in self.members


def new_channel(
    channel_id: str, org_id: str, creator: str, name: str, members: Sequence[str]
) -> Channel:
    """A Channel whose creator is a member; members are kept once each, in order."""
    unique = tuple(dict.fromkeys([creator, *members]))
    if len(unique) > MAX_CHANNEL_MEMBERS:
        raise ValidationFailed(f"at most {MAX_CHANNEL_MEMBERS} members", ["members"])
    return Channel(channel_id, org_id, check_name(name), creator, unique)


def may_change_members(principal: Principal, channel: Channel) -> None:
    """The channel's creator or an admin of its organization (403 otherwise)."""
    if principal.user_id == channel.creator or principal.administers(channel.org_id):
        return
    raise Forbidden(ONLY_CREATOR_OR_ADMIN)


def changed_members(channel: Channel, add: Sequence[str], remove: Sequence[str]) -> Channel:
    """The Channel with `add` joined and `remove` gone (an unknown removal changes nothing)."""
    gone = set(remove)
    members = tuple(m for m in dict.fromkeys([*channel.members, *add]) if m not in gone)
    if len(members) > MAX_CHANNEL_MEMBERS:
        raise ValidationFailed(f"at most {MAX_CHANNEL_MEMBERS} members", ["add"])
    return replace(channel, members=members)


# --- Chats --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chat:
    """A Chat of one Bot in one organization (the Bot's own or a linked one)."""

    id: str
    bot_id: str
    org_id: str
    owner: str
    channel_id: str | None
    kind: ChatKind
    # The chat row's `itemCount`: ids were given at least this far. The fence of item
    # writers (their transaction checks it is still the count read), moved only by history
    # deletion and erasure, so the last id given may be above it: `last_seq`.
    item_count: int = 0
    # The newest item row's seq, read with the chat row for adding items
    # (`BotRepository.chat_for_items`); None when the chat was read without it.
    newest_item: int | None = None

    @property
    def last_seq(self) -> int:
        """The last id given (`item_id(last_seq)`): the newest item, or the count when
        history deletion removed items above it. Only on a Chat read for adding items: a
        read-only route never pays for the newest item."""
        if self.newest_item is None:
            raise ValueError("the chat was read without its newest item")
        return max(self.item_count, self.newest_item)

    def readable_by(self, user_id: str, org_id: str, channels: Container[str]) -> bool:
        """Its owner reads a private Chat; the Channel's current members (`channels`: the
        reader's) read a group Chat."""
        if org_id != self.org_id:
            return False
        if self.channel_id is not None:
            return self.channel_id in channels
        return user_id == self.owner


def new_chat(
    chat_id: str, bot_id: str, org_id: str, owner: str, channel_id: str | None, kind: str
) -> Chat:
    if kind not in CHAT_KINDS:
        raise ValidationFailed(f"kind must be one of {', '.join(CHAT_KINDS)}", ["kind"])
    return Chat(chat_id, bot_id, org_id, owner, channel_id, kind)  # type: ignore[arg-type]


def may_read_chat(principal: Principal, chat: Chat, channels: Container[str]) -> str:
    """The reader's user id; anyone who does not read the Chat is told it does not exist."""
    user, org = person_of(principal, BOTS_BELONG_TO_A_PERSON)
    if not chat.readable_by(user, org, channels):
        raise NotFound("chat not found")
    return user


def owner_only(principal: Principal, chat: Chat, refused: str) -> None:
    """What only the Chat's owner may do (403 `refused` for its other readers)."""
    if principal.user_id != chat.owner:
        raise Forbidden(refused)


# --- Turns and items ----------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    id: str
    chat_id: str
    actor: str
    # As stored: `open` or `completed`; `abandoned` is told by `state` from the time.
    status: TurnStatus
    notice: bool = False
    created_at: int = 0
    # The number of the Turn's last item (0: none recorded).
    last_item: int = 0
    # When its last item was added (its start when none was added after its input).
    active_at: int = 0

    def state(self, now_ms: int) -> TurnStatus:
        """`completed`; `abandoned` once open for `ABANDONED_AFTER_MS` after its last item
        (no writer is needed to close it); else `open`."""
        if self.status != "open":
            return self.status
        if now_ms - max(self.created_at, self.active_at) >= ABANDONED_AFTER_MS:
            return "abandoned"
        return "open"

    def ended(self, now_ms: int) -> bool:
        """Completed or abandoned: its items are learned, and it takes no more."""
        return self.state(now_ms) != "open"


def open_turn(turn: Turn, now_ms: int) -> Turn:
    """The Turn, if it still takes items (409 ChatConflict once completed or abandoned)."""
    state = turn.state(now_ms)
    if state == "completed":
        raise ChatConflict(TURN_COMPLETED)
    if state == "abandoned":
        raise ChatConflict(TURN_ABANDONED)
    return turn


@dataclass(frozen=True)
class ChatItem:
    """An item of a Chat's history as stored: metadata in the clear, words sealed apart."""

    seq: int
    turn_id: str
    role: ItemRole
    # The person who said it (`user` items: the Turn's saved actor); None for the others.
    actor: str | None
    app: str | None = None

    @property
    def id(self) -> str:
        return item_id(self.seq)

    @property
    def person_words(self) -> bool:
        """Only a person's own words can support a fact (a notice never is one)."""
        return self.role == "user" and self.actor is not None


def input_item(text: str, notice: bool) -> NewItem:
    """A Turn's input: the person's words, or a notice of the service."""
    check_content(text, ["input"])
    return NewItem("notice" if notice else "user", text)


def check_added(items: Sequence[NewItem]) -> None:
    """Items added to a Turn: 1..MAX_TURN_ITEMS of the Bot's words, tool results, notices."""
    check_items(
        items,
        ADDED_ROLES,
        "add at least one item",
        f"at most {MAX_TURN_ITEMS} items at once",
        PERSON_WORDS_ARE_INPUT,
    )


def check_history(chat: Chat, adding: int, path: list[str | int]) -> None:
    if chat.last_seq + adding > MAX_CHAT_ITEMS:
        raise TooLarge(HISTORY_FULL, path)


def stored_items(chat: Chat, turn: Turn, items: Sequence[NewItem]) -> list[ChatItem]:
    """The rows of new items: numbered after the Chat's last, the person's words carry the
    Turn's saved actor (the service never takes an author from the content)."""
    return [
        ChatItem(
            chat.last_seq + offset,
            turn.id,
            item.role,
            turn.actor if item.role == "user" else None,
            item.app,
        )
        for offset, item in enumerate(items, start=1)
    ]
