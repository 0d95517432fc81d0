"""Bots, Channel groups, Chats, Turns and Items; every route belongs to a person."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from agent_memory.domain.bots import (
    BOTS_BELONG_TO_A_PERSON,
    ONLY_OWNER_DELETES,
    TURN_COMPLETED,
    Bot,
    Channel,
    Chat,
    ChatItem,
    Turn,
    changed_members,
    check_added,
    check_history,
    input_item,
    linked_bot,
    may_change_members,
    may_read_chat,
    new_bot,
    new_channel,
    new_chat,
    open_turn,
    owner_only,
    stored_items,
)
from agent_memory.domain.errors import (
    ChatConflict,
    Conflict,
    NotFound,
    ValidationFailed,
    WriteConflict,
)
from agent_memory.domain.grants import Level, ObjectAction, Reach, decide
from agent_memory.domain.identity import Principal, person_of
from agent_memory.domain.sessions import NewItem, item_seq
from agent_memory.persistence.bots import CHAT_ITEMS, TURN_LAST_ITEM, TURN_OPEN, BotRepository
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.ports import Clock, Ids

# One answer whatever is missing, so no organization learns another's ids.
LINK_NOT_FOUND = "no such organization with these people"


class Members:
    """One person's Channel groups among those read for this request; never cached."""

    def __init__(self, repo: BotRepository, user_id: str, org_id: str) -> None:
        self._repo = repo
        self.user_id = user_id
        self.org_id = org_id
        self._read: set[str] = set()
        self._member_of: set[str] = set()

    def load(self, channel_ids: Iterable[str | None]) -> Members:
        missing = [c for c in dict.fromkeys(channel_ids) if c is not None and c not in self._read]
        for channel in self._repo.channels(missing).values():
            if channel.org_id == self.org_id and channel.has(self.user_id):
                self._member_of.add(channel.id)
        self._read.update(missing)
        return self

    def __contains__(self, channel_id: object) -> bool:
        return channel_id in self._member_of


class BotService:
    def __init__(self, repo: BotRepository, clock: Clock, ids: Ids) -> None:
        self.repo = repo
        self._clock = clock
        self._ids = ids

    def reach(self, principal: Principal, bot_id: str, action: ObjectAction) -> tuple[Bot, Reach]:
        bot, _rev, reach = self._reached(principal, bot_id, action)
        return bot, reach

    def _reached(
        self, principal: Principal, bot_id: str, action: ObjectAction
    ) -> tuple[Bot, int, Reach]:
        """The Bot, its row's `rev`, and how the caller reaches it for `action`."""
        person_of(principal, BOTS_BELONG_TO_A_PERSON)
        found = self.repo.get_bot(bot_id)
        if found is None:
            raise NotFound("bot not found")
        bot, rev = found
        return bot, rev, decide(principal, bot.grants(), action, what="bot")

    def _check_people(
        self, org_id: str, people: Iterable[tuple[str | int, str]], path: str
    ) -> None:
        """404 naming the first of `people` (where the body names them, user id) who is not
        a person of `org_id`, after one batch read."""
        named = list(people)
        known = self.repo.people_of(org_id, [user for _at, user in named])
        for at, user in named:
            if user not in known:
                raise NotFound("no such person in this organization", [path, at])

    def create_bot(self, principal: Principal, name: str, levels: Mapping[str, Level]) -> Bot:
        """A new Bot owned by the caller."""
        owner, org_id = person_of(principal, BOTS_BELONG_TO_A_PERSON)
        bot = new_bot(self._ids.new("bot_"), org_id, owner, name, levels)
        self._check_people(org_id, [(u, u) for u in levels if u != owner], "grants")
        self.repo.create_bot(bot, self._clock.now_ms())
        return bot

    def link(
        self,
        principal: Principal,
        bot_id: str,
        org_id: str,
        changes: Mapping[str, Level | None],
    ) -> Bot:
        """Set `org_id`'s people's grants on the Bot: None removes one, others stay."""

        def attempt() -> Bot:
            bot, rev, _reach = self._reached(principal, bot_id, "link")
            linked = linked_bot(bot, org_id, changes)
            self._check_linked_people(org_id, [u for u, lv in changes.items() if lv is not None])
            self.repo.save_links(linked, rev, self._clock.now_ms())
            return linked

        return until_it_lands(
            attempt, lambda: Conflict("the bot changed while it was linked; retry")
        )

    def _check_linked_people(self, org_id: str, granted: Sequence[str]) -> None:
        if not granted:
            return
        # Both reads always, so the answer's time does not tell which failed.
        known = self.repo.people_of(org_id, granted)
        exists = self.repo.org_exists(org_id)
        if not exists or not set(granted) <= known:
            raise NotFound(LINK_NOT_FOUND, ["organizationId"])

    def create_channel(self, principal: Principal, name: str, members: Sequence[str]) -> Channel:
        creator, org_id = person_of(principal, BOTS_BELONG_TO_A_PERSON)
        channel = new_channel(self._ids.new("ch_"), org_id, creator, name, members)
        others = [(at, m) for at, m in enumerate(members) if m != creator]
        self._check_people(org_id, others, "members")
        self.repo.save_channel(channel, None, self._clock.now_ms())
        return channel

    def change_members(
        self, principal: Principal, channel_id: str, add: Sequence[str], remove: Sequence[str]
    ) -> Channel:
        """By the channel's creator or an organization admin."""
        _user, org_id = person_of(principal, BOTS_BELONG_TO_A_PERSON)

        def attempt() -> Channel:
            found = self.repo.get_channel(channel_id)
            if found is None or found[0].org_id != org_id:
                raise NotFound("channel not found")
            channel, rev = found
            if not channel.has(principal.user_id or "") and not principal.administers(org_id):
                raise NotFound("channel not found")
            may_change_members(principal, channel)
            self._check_people(org_id, enumerate(add), "add")
            changed = changed_members(channel, add, remove)
            self.repo.save_channel(changed, rev, self._clock.now_ms())
            return changed

        return until_it_lands(attempt, lambda: Conflict("the channel changed meanwhile; retry"))

    def create_chat(
        self, principal: Principal, bot_id: str, channel_id: str | None, kind: str
    ) -> Chat:
        """A Chat in the organization the caller reaches the Bot in (a group's: a member's)."""
        user, _org = person_of(principal, BOTS_BELONG_TO_A_PERSON)
        try:
            bot, reach = self.reach(principal, bot_id, "read")
        except NotFound as error:
            raise NotFound("bot not found", ["botId"]) from error
        members = Members(self.repo, user, reach.org_id)
        if channel_id is not None and channel_id not in members.load([channel_id]):
            raise NotFound("channel not found", ["channelId"])
        chat = new_chat(self._ids.new("chat_"), bot.id, reach.org_id, user, channel_id, kind)
        self.repo.create_chat(chat, self._clock.now_ms())
        return chat

    def readable_chat(
        self, principal: Principal, chat_id: str, *, for_items: bool = False
    ) -> tuple[Chat, Members]:
        """The Chat for one of its readers (404 otherwise); `for_items` reads its newest item."""
        chat = self.repo.chat_for_items(chat_id) if for_items else self.repo.get_chat(chat_id)
        if chat is None:
            raise NotFound("chat not found")
        return chat, self.may_read(principal, chat)

    def may_read(self, principal: Principal, chat: Chat) -> Members:
        """The reader's membership (404 for anyone who does not read the Chat)."""
        user, org = person_of(principal, BOTS_BELONG_TO_A_PERSON)
        members = Members(self.repo, user, org)
        if chat.org_id == org:
            members.load([chat.channel_id])
        may_read_chat(principal, chat, members)
        return members

    def begin_turn(
        self, principal: Principal, chat_id: str, text: str, *, notice: bool = False
    ) -> tuple[Chat, Turn]:
        """A new Turn with the caller's input as its first item, and the Chat as read."""
        item = input_item(text, notice)

        def attempt() -> tuple[Chat, Turn]:
            chat, members = self.readable_chat(principal, chat_id, for_items=True)
            check_history(chat, 1, ["input"])
            turn = Turn(self._ids.new("turn_"), chat.id, members.user_id, "open", notice)
            rows = stored_items(chat, turn, [item])
            self.repo.add_items(chat, [(rows[0], text)], self._clock.now_ms(), new_turn=turn)
            return chat, turn

        return until_it_lands(attempt, _chat_changed, lost=_on_chat_items)

    def add_items(
        self, principal: Principal, chat_id: str, turn_id: str, items: Sequence[NewItem]
    ) -> list[str]:
        return self._add(principal, chat_id, turn_id, items, completes=False)[2]

    def answer_and_complete(
        self, principal: Principal, chat_id: str, turn_id: str, items: Sequence[NewItem]
    ) -> tuple[Chat, Turn, list[str]]:
        """`finish_turn` with the Bot's last items in the same transaction."""
        return self._add(principal, chat_id, turn_id, items, completes=True)

    def _add(
        self,
        principal: Principal,
        chat_id: str,
        turn_id: str,
        items: Sequence[NewItem],
        *,
        completes: bool,
    ) -> tuple[Chat, Turn, list[str]]:
        """Items after the chat's last, in an open Turn that `completes` may end."""
        check_added(items)

        def attempt() -> tuple[Chat, Turn, list[str]]:
            chat, turn = self.chat_turn(principal, chat_id, turn_id, for_items=True)
            open_turn(turn, self._clock.now_ms())
            check_history(chat, len(items), ["items"])
            rows = stored_items(chat, turn, items)
            try:
                self.repo.add_items(
                    chat,
                    [(row, item.content) for row, item in zip(rows, items, strict=True)],
                    self._clock.now_ms(),
                    open_turn=turn.id,
                    completes=completes,
                )
            except WriteConflict as error:
                if error.condition == TURN_OPEN:
                    raise ChatConflict(TURN_COMPLETED) from error
                raise
            written = replace(
                turn,
                status="completed" if completes else turn.status,
                last_item=rows[-1].seq if rows else turn.last_item,
            )
            return chat, written, [row.id for row in rows]

        return until_it_lands(attempt, _chat_changed, lost=_on_chat_items)

    def chat_turn(
        self, principal: Principal, chat_id: str, turn_id: str, *, for_items: bool = False
    ) -> tuple[Chat, Turn]:
        """A Chat the caller reads and one of its Turns (404 for either otherwise)."""
        chat, turn = self.repo.chat_and_turn(chat_id, turn_id, for_items=for_items)
        if chat is None:
            raise NotFound("chat not found")
        self.may_read(principal, chat)
        if turn is None:
            raise NotFound("turn not found")
        return chat, turn

    def finish_turn(self, principal: Principal, chat_id: str, turn_id: str) -> tuple[Chat, Turn]:
        """Complete the Turn, conditional on its last item read; a repeat answers the same."""

        def attempt() -> tuple[Chat, Turn]:
            chat, turn = self.chat_turn(principal, chat_id, turn_id)
            if turn.status != "completed":
                open_turn(turn, self._clock.now_ms())  # an abandoned Turn stays closed
                self.repo.complete_turn(chat, turn, self._clock.now_ms())
                turn = replace(turn, status="completed")
            return chat, turn

        return until_it_lands(
            attempt,
            lambda: Conflict("the turn changed meanwhile; retry"),
            lost=lambda error: error.raced or error.condition == TURN_LAST_ITEM,
        )

    def turn(self, principal: Principal, chat_id: str, turn_id: str) -> Turn:
        """A Turn of a Chat the caller reads, with its status now."""
        _chat, turn = self.chat_turn(principal, chat_id, turn_id)
        return replace(turn, status=turn.state(self._clock.now_ms()))

    def items(
        self, principal: Principal, chat_id: str, after: str | None = None
    ) -> list[tuple[ChatItem, str]]:
        """The history oldest first; `after` an item id pages on."""
        chat, _members = self.readable_chat(principal, chat_id)
        start = 0
        if after is not None:
            seq = item_seq(after)
            if seq is None:
                raise ValidationFailed("not an item id", ["after"])
            start = seq
        return [
            (item, self.repo.open_item(chat, item, sealed))
            for item, sealed in self.repo.items(chat, after=start, limit=1000)
        ]

    def delete_history(self, principal: Principal, chat_id: str) -> None:
        """Delete the Chat's items and its enrichments (they hold the person's words);
        confessions and the memory learned from the items stay."""
        chat, _members = self.readable_chat(principal, chat_id)
        owner_only(principal, chat, ONLY_OWNER_DELETES)
        self.repo.delete_history(chat)


def _on_chat_items(error: WriteConflict) -> bool:
    return error.raced or error.condition == CHAT_ITEMS


def _chat_changed() -> Conflict:
    return Conflict("the chat changed meanwhile; retry")
