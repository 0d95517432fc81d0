"""Bots, Channels, Chats, Turns and Items in the single table (their rows:
persistence/bot_rows.py).

Items are added in ONE transaction: a check that `itemCount` is still the count read, the
Turn's Put or Update, and the item Puts, each conditional on its row being absent. The next
id is max(itemCount, newest item's seq) + 1, read with the chat row in one Query, so a turn
never writes the chat row: a writer that lost a race finds the other's item row (CHAT_ITEMS)
and reads again; erasure and history deletion move `itemCount` first (`raise_fence`), so
a writer that read before fails its check and no deleted id is given again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent_memory.domain.bots import Bot, Channel, Chat, ChatItem, Turn
from agent_memory.domain.errors import Unavailable
from agent_memory.domain.sessions import item_seq
from agent_memory.persistence import keys
from agent_memory.persistence.bot_rows import (
    bot_of,
    bot_pk,
    bot_row,
    channel_of,
    channel_pk,
    channel_row,
    chat_of,
    chat_pk,
    chat_row,
    item_of,
    org_bots_pk,
    owned_chat_key,
    raise_fence,
    spoken_chat_key,
    turn_of,
    turn_sk,
)
from agent_memory.persistence.keys import ITEM_PREFIX, item_sk
from agent_memory.persistence.organizations import live_org, org_channels_pk
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.persistence.rows import SealedRows, head_row, head_rows, people_of
from agent_memory.ports import (
    Absent,
    Action,
    Check,
    Delete,
    Equals,
    KeyRange,
    Put,
    Record,
    Update,
)
from agent_memory.ports.store import MAX_TRANSACTION_ACTIONS

# The memory Bot's rows in a chat's partition that hold a person's words: enrichments and
# their call logs (persistence/memory_bot.py). A confession is the Bot's words and stays.
WORDS_BESIDE_ITEMS = (keys.ENRICHMENT_PREFIX, keys.CALL_PREFIX)

# Ids one page of a list partition holds.
LIST_PAGE = 100

# Condition names.
# The chat's count moved, or an item row exists at an id read as free: read again.
CHAT_ITEMS = "chat-item-count"
TURN_OPEN = "turn-open"
TURN_LAST_ITEM = "turn-last-item"
BOT_REV = "bot-rev"
CHANNEL_REV = "channel-rev"


def _org_bot(org_id: str, bot_id: str, now_ms: int) -> Put:
    return Put({"pk": org_bots_pk(org_id), "sk": bot_id, "type": "org-bot", "at": now_ms})


class BotRepository(SealedRows):
    # -- bots ----------------------------------------------------------------------------

    def get_bot(self, bot_id: str) -> tuple[Bot, int] | None:
        """The Bot and its row's `rev`."""
        row = head_row(self._store, bot_pk(bot_id), "bot")
        return (bot_of(row), int(row.get("rev", 0))) if row is not None else None

    def create_bot(self, bot: Bot, now_ms: int) -> None:
        self._store.write(
            [Put(bot_row(bot, now_ms), Absent()), _org_bot(bot.org_id, bot.id, now_ms)]
        )

    def save_links(self, bot: Bot, rev: int, now_ms: int) -> None:
        """The Bot's links, if nobody changed its row since `rev` (WriteConflict otherwise)."""
        self._store.write(
            [
                Update(
                    bot_pk(bot.id),
                    keys.HEAD,
                    set={
                        "links": {org: dict(levels) for org, levels in bot.links.items()},
                        "rev": rev + 1,
                        "updatedAt": now_ms,
                    },
                    condition=Equals("rev", rev, name=BOT_REV),
                ),
                *(_org_bot(org, bot.id, now_ms) for org in bot.links),
            ]
        )

    def bots(self, bot_ids: Sequence[str]) -> list[Bot]:
        """Several Bots in one batch read (missing ones are left out)."""
        return [bot_of(r) for r in head_rows(self._store, [bot_pk(b) for b in bot_ids], "bot")]

    def org_bot_ids(self, org_id: str, after: str | None) -> tuple[list[str], str | None]:
        """One page of the bots the organization uses (its own and linked ones), newest
        first, after the bot id `after`: (ids, the last id when more may follow)."""
        return self._listed(org_bots_pk(org_id), "", after)

    def people_of(self, org_id: str, user_ids: Sequence[str]) -> set[str]:
        """Which of `user_ids` are people of `org_id` (one batch read)."""
        return people_of(self._store, org_id, user_ids)

    def org_exists(self, org_id: str) -> bool:
        """An organization one may link to: it exists and its deletion has not begun."""
        return live_org(org_id, self._store.get(keys.org(org_id), keys.HEAD)) is not None

    # -- channels ------------------------------------------------------------------------

    def get_channel(self, channel_id: str) -> tuple[Channel, int] | None:
        row = head_row(self._store, channel_pk(channel_id), "channel")
        return (channel_of(row), int(row.get("rev", 0))) if row is not None else None

    def channels(self, channel_ids: Sequence[str]) -> dict[str, Channel]:
        """Several Channels in one batch read (missing ones are left out)."""
        rows = head_rows(self._store, [channel_pk(c) for c in channel_ids], "channel")
        return {c.id: c for c in map(channel_of, rows)}

    def org_channel_ids(self, org_id: str, after: str | None) -> tuple[list[str], str | None]:
        """One page of the organization's channels, newest first, after the channel id
        `after` (as `org_bot_ids`)."""
        return self._listed(org_channels_pk(org_id), "", after)

    def save_channel(self, channel: Channel, rev: int | None, now_ms: int) -> None:
        """Create the Channel (`rev` None) or change its members from `rev`."""
        row = channel_row(channel, 0 if rev is None else rev + 1, now_ms)
        condition = Absent() if rev is None else Equals("rev", rev, name=CHANNEL_REV)
        # A new channel is listed in its organization's index, for the organization's deletion.
        listed = Put(
            {"pk": org_channels_pk(channel.org_id), "sk": channel.id, "type": "org-channel"}
        )
        self._store.write([Put(row, condition), *([listed] if rev is None else [])])

    # -- chats ---------------------------------------------------------------------------

    def get_chat(self, chat_id: str) -> Chat | None:
        """The chat row alone (its `newest_item` unknown): for routes that only read."""
        row = head_row(self._store, chat_pk(chat_id), "chat")
        return chat_of(row) if row is not None else None

    def chat_for_items(self, chat_id: str) -> Chat | None:
        """The chat row with its newest item's seq, for adding items (`Chat.last_seq`): one
        Query, newest first, as the chat row (`META`) sorts just above the `ITEM#` range. A
        stale read only names a taken id (its Put fails with CHAT_ITEMS) or a moved count
        (the transaction's check fails): the writer reads again."""
        rows = self._store.query(
            chat_pk(chat_id), KeyRange(low=ITEM_PREFIX, high=keys.HEAD), limit=2, newest_first=True
        ).records
        head = next((r for r in rows if r["sk"] == keys.HEAD), None)
        if head is None or head.get("type") != "chat":
            return None
        below = [r for r in rows if r["sk"] != keys.HEAD]
        newest = int(below[0]["seq"]) if below else 0
        return replace(chat_of(head), newest_item=newest)

    def chat_and_turn(
        self, chat_id: str, turn_id: str, *, for_items: bool = False
    ) -> tuple[Chat | None, Turn | None]:
        """The chat row and one turn row, in one batch read; `for_items`: the chat with its
        newest item (`chat_for_items`) and the turn row apart (the same read units)."""
        pk = chat_pk(chat_id)
        if for_items:
            chat = self.chat_for_items(chat_id)
            found = None if chat is None else self._store.get(pk, turn_sk(turn_id))
            rows = [] if found is None else [found]
        else:
            rows = self._store.get_many([(pk, keys.HEAD), (pk, turn_sk(turn_id))])
            chat = next((chat_of(r) for r in rows if r.get("type") == "chat"), None)
        turn = next((turn_of(chat_id, r) for r in rows if r.get("type") == "turn"), None)
        return chat, turn

    def chats(self, chat_ids: Sequence[str]) -> list[Chat]:
        """Several chat rows in one batch read (missing and deleting ones are left out)."""
        return [chat_of(r) for r in head_rows(self._store, [chat_pk(c) for c in chat_ids], "chat")]

    def owned_chat_ids(
        self, org_id: str, user_id: str, after: str | None
    ) -> tuple[list[str], str | None]:
        """One page of the chats the person owns, newest first, after the chat id `after`."""
        pk, prefix = owned_chat_key(org_id, user_id, "")
        return self._listed(pk, prefix, after)

    def spoken_chat_ids(
        self, org_id: str, user_id: str, after: str | None
    ) -> tuple[list[str], str | None]:
        """One page of others' group chats where the person started a Turn, newest first."""
        pk, prefix = spoken_chat_key(org_id, user_id, "")
        return self._listed(pk, prefix, after)

    def _listed(self, pk: str, prefix: str, after: str | None) -> tuple[list[str], str | None]:
        """Ids under `prefix` of a list partition, newest first (ids sort by creation), a
        page of at most LIST_PAGE after the id `after`."""
        page = self._store.query(
            pk,
            KeyRange(prefix=prefix) if prefix else None,
            limit=LIST_PAGE,
            after=None if after is None else f"{prefix}{after}",
            newest_first=True,
        )
        ids = [str(r["sk"]).removeprefix(prefix) for r in page.records]
        return ids, (ids[-1] if page.next is not None and ids else None)

    def create_chat(self, chat: Chat, now_ms: int) -> None:
        row = chat_row(chat, now_ms)
        owner_pk, owner_sk = owned_chat_key(chat.org_id, chat.owner, chat.id)
        owned: Record = {
            "pk": owner_pk,
            "sk": owner_sk,
            "type": "owned-chat",
            "botId": chat.bot_id,
            "orgId": chat.org_id,
            "createdAt": now_ms,
        }
        self._store.write([Put(row, Absent()), Put(owned, Absent())])

    # -- turns and items -----------------------------------------------------------------

    def _scope(self, chat: Chat) -> dict[str, str]:
        return {"org": chat.org_id, "pool": chat.id, "field": "item"}

    def add_items(
        self,
        chat: Chat,
        items: Sequence[tuple[ChatItem, str]],
        now_ms: int,
        *,
        new_turn: Turn | None = None,
        open_turn: str | None = None,
        completes: bool = False,
    ) -> None:
        """Items (with their words) after the chat's last (`chat` as `chat_for_items` read
        it), with `new_turn` created by the same transaction, or `open_turn` still open (and
        completed with them when `completes`). WriteConflict(CHAT_ITEMS) when the count
        moved or an id was taken meanwhile (read again), TURN_OPEN when the Turn completed.
        The check is `Equals` even at a count of 0, so no item lands in an erased chat."""
        pk = chat_pk(chat.id)
        last = chat.last_seq + len(items)
        actions: list[Action] = [
            Check(pk, keys.HEAD, Equals("itemCount", chat.item_count, name=CHAT_ITEMS))
        ]
        if new_turn is not None:
            actions += self._new_turn(chat, new_turn, last, now_ms)
        if open_turn is not None:
            ended = {"status": "completed", "completedAt": now_ms} if completes else {}
            actions.append(
                Update(
                    pk,
                    turn_sk(open_turn),
                    set={"updatedAt": now_ms, "lastItem": last, **ended},
                    condition=Equals("status", "open", name=TURN_OPEN),
                )
            )
        actions += [self._item_put(chat, item, content, now_ms) for item, content in items]
        self._store.write(actions)

    @staticmethod
    def _new_turn(chat: Chat, turn: Turn, last: int, now_ms: int) -> list[Action]:
        row: Record = {
            "pk": chat_pk(chat.id),
            "sk": turn_sk(turn.id),
            "type": "turn",
            "actor": turn.actor,
            "status": turn.status,
            "notice": turn.notice,
            "createdAt": now_ms,
            # The Turn's last item: learning released by its end reads this far.
            "lastItem": last,
        }
        actions: list[Action] = [Put(row, Absent())]
        if turn.actor != chat.owner:
            spoke_pk, spoke_sk = spoken_chat_key(chat.org_id, turn.actor, chat.id)
            # Unconditional: every Turn of the person writes the same row again.
            actions.append(Put({"pk": spoke_pk, "sk": spoke_sk, "type": "spoken-chat"}))
        return actions

    def _item_put(self, chat: Chat, item: ChatItem, content: str, now_ms: int) -> Put:
        sk = item_sk(item.seq)
        row: Record = {
            "pk": chat_pk(chat.id),
            "sk": sk,
            "type": "chat-item",
            "seq": item.seq,
            "turnId": item.turn_id,
            "role": item.role,
            "actor": item.actor,
            "app": item.app,
            "text": self._cipher.seal(content, scope=self._scope(chat), row=sk),
            "createdAt": now_ms,
        }
        return Put(row, Absent(name=CHAT_ITEMS))

    def complete_turn(self, chat: Chat, turn: Turn, now_ms: int) -> None:
        """Complete the Turn, conditional on its last item being `turn.last_item`, so the
        caller knows how far the completed Turn reaches without reading it again.
        WriteConflict(TURN_LAST_ITEM) when items were added meanwhile."""
        condition = Equals("lastItem", turn.last_item, name=TURN_LAST_ITEM)
        self._store.write(
            [
                Update(
                    chat_pk(chat.id),
                    turn_sk(turn.id),
                    set={"status": "completed", "completedAt": now_ms},
                    condition=condition,
                )
            ]
        )

    def items(self, chat: Chat, *, after: int, limit: int) -> list[tuple[ChatItem, bytes]]:
        """The history after item `after`, oldest first, words still sealed."""
        span = KeyRange(low=item_sk(after + 1), high=f"{ITEM_PREFIX}~")
        page = self._store.query(chat_pk(chat.id), span, limit=limit)
        return [(item_of(r), bytes(r["text"])) for r in page.records]

    def items_at(self, chat: Chat, seqs: Sequence[int]) -> list[tuple[ChatItem, bytes]]:
        """Items of the chat by number, words still sealed, in one batch read, oldest
        first (deleted ones are left out)."""
        if not seqs:
            return []
        pk = chat_pk(chat.id)
        rows = self._store.get_many([(pk, item_sk(s)) for s in dict.fromkeys(seqs)])
        found = [(item_of(r), bytes(r["text"])) for r in rows]
        return sorted(found, key=lambda pair: pair[0].seq)

    def chat_and_items(
        self, chat_id: str, ids: Sequence[str]
    ) -> tuple[Chat | None, dict[str, ChatItem]]:
        """The chat row and items of it by id (metadata only), in one batch read."""
        pk = chat_pk(chat_id)
        seqs = [seq for seq in (item_seq(i) for i in ids) if seq is not None]
        chat: Chat | None = None
        found: dict[str, ChatItem] = {}
        wanted = [(pk, keys.HEAD), *((pk, item_sk(s)) for s in dict.fromkeys(seqs))]
        for row in self._store.get_many(wanted):
            if row.get("type") == "chat":
                chat = chat_of(row)
            elif row.get("type") == "chat-item":
                item = item_of(row)
                found[item.id] = item
        return chat, found

    def turns(self, chat_id: str, turn_ids: Sequence[str]) -> dict[str, Turn]:
        """Turns of the chat by id, in one batch read."""
        if not turn_ids:
            return {}
        pk = chat_pk(chat_id)
        rows = self._store.get_many([(pk, turn_sk(t)) for t in dict.fromkeys(turn_ids)])
        found = [turn_of(chat_id, r) for r in rows if r.get("type") == "turn"]
        return {turn.id: turn for turn in found}

    def open_item(self, chat: Chat, item: ChatItem, sealed: bytes) -> str:
        return self._cipher.open(sealed, scope=self._scope(chat), row=item_sk(item.seq))

    def delete_history(self, chat: Chat) -> int:
        """Delete every item row of the chat (transactions of 100), oldest first, then the
        memory Bot's rows that hold a person's words (enrichments and their call logs).
        Before a page of items goes, the chat row's count is raised to its highest seq
        (`raise_fence`): the newest item may be among them, and the count then still says
        how far ids were given, so they are never given again. Answers how many item rows
        went."""
        removed = 0
        while gone := until_it_lands(
            lambda: self._delete_page(chat.id),
            lambda: Unavailable("the chat's items kept changing while they were deleted"),
            lost=lambda error: error.raced,
        ):
            removed += gone
        pk = chat_pk(chat.id)
        for prefix in WORDS_BESIDE_ITEMS:
            while page := self._store.query(
                pk, KeyRange(prefix=prefix), limit=MAX_TRANSACTION_ACTIONS
            ).records:
                self._store.write([Delete(pk, str(r["sk"])) for r in page])
        return removed

    def _delete_page(self, chat_id: str) -> int:
        pk = chat_pk(chat_id)
        page = self._store.query(pk, KeyRange(prefix=ITEM_PREFIX), limit=MAX_TRANSACTION_ACTIONS)
        if page.records:
            raise_fence(self._store, chat_id, max(int(r["seq"]) for r in page.records))
            self._store.write([Delete(pk, str(r["sk"])) for r in page.records])
        return len(page.records)
