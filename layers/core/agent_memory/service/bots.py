"""Bots, Channel groups, Chats, Turns and Items (API.md, "Bots, channels and chats").

Access: a Bot through `domain/grants.decide` (404 without a level or from another
organization, 403 with a level too low or for a home-only action through a link); a Chat
through its readers (its owner, or the current members of its Channel); a Channel is seen
by its members. Every route belongs to a person: the admin token gets 403.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from agent_memory.domain.bots import (
    Bot,
    Channel,
    Chat,
    ChatItem,
    NewChatItem,
    Turn,
    changed_members,
    check_added,
    check_history,
    input_item,
    linked_bot,
    may_change_members,
    may_delete_history,
    may_read_chat,
    new_bot,
    new_channel,
    new_chat,
    open_turn,
    person_of,
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
from agent_memory.domain.identity import Principal
from agent_memory.domain.sessions import item_seq
from agent_memory.persistence.bots import CHAT_ITEMS, TURN_LAST_ITEM, TURN_OPEN, BotRepository
from agent_memory.ports import Clock, Ids
from agent_memory.service.retrying import until_it_lands

# A write that lost to a concurrent one on the same chat is retried this often.
RETRIES = 5
# One answer whatever is missing: the organization, a person, or a person being of another.
LINK_NOT_FOUND = "no such organization with these people"


class Members:
    """The Channel groups one person is a member of in one organization, among those read
    for this request (`load`): what the audience judge and a group Chat's readers are
    judged on. Read at every request, never cached across them (membership changes)."""

    def __init__(self, repo: BotRepository, user_id: str, org_id: str) -> None:
        self._repo = repo
        self.user_id = user_id
        self.org_id = org_id
        self._read: set[str] = set()
        self._member_of: set[str] = set()

    def load(self, channel_ids: Iterable[str | None]) -> Members:
        """Read the Channels not read yet, in one batch read."""
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

    # -- bots ----------------------------------------------------------------------------

    def reach(self, principal: Principal, bot_id: str, action: ObjectAction) -> tuple[Bot, Reach]:
        """The Bot and how the caller reaches it for `action` (404 / 403 otherwise)."""
        person_of(principal)
        found = self.repo.get_bot(bot_id)
        if found is None:
            raise NotFound("bot not found")
        bot = found[0]
        return bot, decide(principal, bot.grants(), action, what="bot")

    def _check_people(self, org_id: str, levels: Mapping[str, Level], path: str) -> None:
        known = self.repo.people_of(org_id, list(levels))
        for user in levels:
            if user not in known:
                raise NotFound("no such person in this organization", [path, user])

    def create_bot(self, principal: Principal, name: str, levels: Mapping[str, Level]) -> Bot:
        """A new Bot owned by the caller, with `levels` for people of its organization."""
        owner, org_id = person_of(principal)
        bot = new_bot(self._ids.new("bot_"), org_id, owner, name, levels)
        self._check_people(
            org_id, {u: level for u, level in levels.items() if u != owner}, "grants"
        )
        self.repo.create_bot(bot, self._clock.now_ms())
        return bot

    def link(
        self,
        principal: Principal,
        bot_id: str,
        org_id: str,
        changes: Mapping[str, Level | None],
    ) -> Bot:
        """Let `org_id`'s people use the Bot there, or change their grants (write at home
        needed): a level sets a person's grant, None removes it, people not named keep theirs.
        An unknown organization, an unknown person and a person of another organization get
        one answer: the home organization never learns another's ids from an error."""

        def attempt() -> Bot:
            person_of(principal)
            found = self.repo.get_bot(bot_id)
            if found is None:
                raise NotFound("bot not found")
            bot, rev = found
            decide(principal, bot.grants(), "link", what="bot")
            linked = linked_bot(bot, org_id, changes)
            self._check_linked_people(org_id, [u for u, lv in changes.items() if lv is not None])
            self.repo.save_links(linked, rev, self._clock.now_ms())
            return linked

        return until_it_lands(
            attempt, lambda: Conflict("the bot changed while it was linked; retry"), tries=RETRIES
        )

    def _check_linked_people(self, org_id: str, granted: Sequence[str]) -> None:
        """Everyone granted is a person of `org_id` (a removal needs no check: it names
        nobody new)."""
        if not granted:
            return
        # Both reads always: the answer's time does not tell which one failed either.
        known = self.repo.people_of(org_id, granted)
        exists = self.repo.org_exists(org_id)
        if not exists or not set(granted) <= known:
            raise NotFound(LINK_NOT_FOUND, ["organizationId"])

    # -- channels ------------------------------------------------------------------------

    def create_channel(self, principal: Principal, name: str, members: Sequence[str]) -> Channel:
        """A Channel of the caller's organization; the caller is a member."""
        creator, org_id = person_of(principal)
        channel = new_channel(self._ids.new("ch_"), org_id, creator, name, members)
        known = self.repo.people_of(org_id, [m for m in channel.members if m != creator])
        for index, member in enumerate(members):
            if member != creator and member not in known:
                raise NotFound("no such person in this organization", ["members", index])
        self.repo.save_channel(channel, None, self._clock.now_ms())
        return channel

    def change_members(
        self, principal: Principal, channel_id: str, add: Sequence[str], remove: Sequence[str]
    ) -> Channel:
        """Members joined and removed (the channel's creator or an organization admin)."""
        _user, org_id = person_of(principal)

        def attempt() -> Channel:
            found = self.repo.get_channel(channel_id)
            if found is None or found[0].org_id != org_id:
                raise NotFound("channel not found")
            channel, rev = found
            if not channel.has(principal.user_id or "") and not principal.administers(org_id):
                raise NotFound("channel not found")
            may_change_members(principal, channel)
            known = self.repo.people_of(org_id, list(add))
            for index, member in enumerate(add):
                if member not in known:
                    raise NotFound("no such person in this organization", ["add", index])
            changed = changed_members(channel, add, remove)
            self.repo.save_channel(changed, rev, self._clock.now_ms())
            return changed

        return until_it_lands(
            attempt, lambda: Conflict("the channel changed meanwhile; retry"), tries=RETRIES
        )

    # -- chats ---------------------------------------------------------------------------

    def create_chat(
        self, principal: Principal, bot_id: str, channel_id: str | None, kind: str
    ) -> Chat:
        """A Chat of a Bot the caller may read, in the organization the caller reaches it
        in; a group Chat for a Channel of that organization the caller is a member of."""
        user, _org = person_of(principal)
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
        """The Chat, for one of its readers (404 for anyone else), and the reader's
        membership lookup; `for_items`: with its newest item, to add items after it
        (`Chat.last_seq`; a route that only reads never pays for it)."""
        chat = self.repo.chat_for_items(chat_id) if for_items else self.repo.get_chat(chat_id)
        if chat is None:
            raise NotFound("chat not found")
        return chat, self.may_read(principal, chat)

    def may_read(self, principal: Principal, chat: Chat) -> Members:
        """The reader's membership, with the Chat's Channel read (404 for anyone who does
        not read the Chat)."""
        user, org = person_of(principal)
        members = Members(self.repo, user, org)
        if chat.org_id == org:
            members.load([chat.channel_id])
        may_read_chat(principal, chat, members)
        return members

    def begin_turn(
        self, principal: Principal, chat_id: str, text: str, *, notice: bool = False
    ) -> tuple[Chat, Turn]:
        """A new Turn whose saved actor is the caller, with its input as the first item; with
        the Chat as read for it (the enrichment of the same request uses its bot,
        organization, owner, Channel and kind, which never change)."""
        item = input_item(text, notice)

        def attempt() -> tuple[Chat, Turn]:
            chat, members = self.readable_chat(principal, chat_id, for_items=True)
            check_history(chat, 1, ["input"])
            turn = Turn(self._ids.new("turn_"), chat.id, members.user_id, "open", notice)
            rows = stored_items(chat, turn, [item])
            self.repo.add_items(chat, [(rows[0], text)], self._clock.now_ms(), new_turn=turn)
            return chat, turn

        return until_it_lands(attempt, _chat_changed, tries=RETRIES, lost=_on_chat_items)

    def add_items(
        self, principal: Principal, chat_id: str, turn_id: str, items: Sequence[NewChatItem]
    ) -> list[str]:
        """The Bot's words, tool results and notices of an open Turn; answers their ids."""
        return self._add(principal, chat_id, turn_id, items, completes=False)[2]

    def answer_and_complete(
        self, principal: Principal, chat_id: str, turn_id: str, items: Sequence[NewChatItem]
    ) -> tuple[Chat, Turn, list[str]]:
        """`finish_turn` with the Bot's last items (`add_items`) in the same transaction.
        Only an open Turn takes them: a completed one answers 409 `ChatConflict`, as
        `add_items` does (a retry after a lost answer finds its items in the history)."""
        return self._add(principal, chat_id, turn_id, items, completes=True)

    def _add(
        self,
        principal: Principal,
        chat_id: str,
        turn_id: str,
        items: Sequence[NewChatItem],
        *,
        completes: bool,
    ) -> tuple[Chat, Turn, list[str]]:
        """Items after the chat's last, in an open Turn (which `completes` ends in the same
        transaction); the Chat as read and the Turn as written."""
        check_added(items)

        def attempt() -> tuple[Chat, Turn, list[str]]:
            chat, turn = self._turn(principal, chat_id, turn_id, for_items=True)
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
                    raise ChatConflict("the turn completed; it takes no more items") from error
                raise
            written = replace(
                turn,
                status="completed" if completes else turn.status,
                last_item=rows[-1].seq if rows else turn.last_item,
            )
            return chat, written, [row.id for row in rows]

        return until_it_lands(attempt, _chat_changed, tries=RETRIES, lost=_on_chat_items)

    def _turn(
        self, principal: Principal, chat_id: str, turn_id: str, *, for_items: bool = False
    ) -> tuple[Chat, Turn]:
        chat, turn = self.repo.chat_and_turn(chat_id, turn_id, for_items=for_items)
        if chat is None:
            raise NotFound("chat not found")
        self.may_read(principal, chat)
        if turn is None:
            raise NotFound("turn not found")
        return chat, turn

    def finish_turn(self, principal: Principal, chat_id: str, turn_id: str) -> tuple[Chat, Turn]:
        """The Turn completed (a repeated complete answers the same), with its Chat: its last
        item is the one read, as the completion is conditional on it (an item added
        meanwhile makes it read again), and a completed Turn takes no more items."""

        def attempt() -> tuple[Chat, Turn]:
            chat, turn = self._turn(principal, chat_id, turn_id)
            if turn.status != "completed":
                open_turn(turn, self._clock.now_ms())  # an abandoned Turn stays closed
                self.repo.complete_turn(chat, turn, self._clock.now_ms())
                turn = replace(turn, status="completed")
            return chat, turn

        return until_it_lands(
            attempt,
            lambda: Conflict("the turn changed meanwhile; retry"),
            tries=RETRIES,
            lost=lambda error: error.raced or error.condition == TURN_LAST_ITEM,
        )

    def turn(self, principal: Principal, chat_id: str, turn_id: str) -> Turn:
        """A Turn of a Chat the caller reads, with its status now (`open`, `completed`, or
        `abandoned` once not completed within 24 hours of its last item)."""
        _chat, turn = self._turn(principal, chat_id, turn_id)
        return replace(turn, status=turn.state(self._clock.now_ms()))

    def items(
        self, principal: Principal, chat_id: str, after: str | None = None
    ) -> list[tuple[ChatItem, str]]:
        """The history oldest first (the person's own words), 1000 items at most; `after` an
        item id pages on."""
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
        """Delete the Chat's items (its owner); memory learned from them stays."""
        chat, _members = self.readable_chat(principal, chat_id)
        may_delete_history(principal, chat)
        self.repo.delete_history(chat)


def _on_chat_items(error: WriteConflict) -> bool:
    """Another writer added items to the chat first: read its newest item again."""
    return error.raced or error.condition == CHAT_ITEMS


def _chat_changed() -> Conflict:
    return Conflict("the chat changed meanwhile; retry")
