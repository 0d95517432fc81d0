"""What an organization holds beside its people's data, found from its own index rows, for its
deletion (ADR 0086). Every step deletes what finds the rest last, so a call cut short leaves
what the next call needs.

- agent_memories: `AMEM#<org>` lists each one; each goes whole (every copy) in one
  transaction, its vector first.
- Bots: `BOTS#<org>/<botId>` lists the bots the organization uses. Each one's memory pool of
  this organization (`BOTMEM#<botId>#<org>`) and its learning runs go; a bot of this
  organization goes whole (`BOT#<botId>`: its settings, leases and spend); another
  organization's bot loses its link to this one and is otherwise untouched.
- Channels: `CHANNELS#<org>/<channelId>` (written with the channel).
- Waits of its Turns (`WAIT#turn:<org>:<chat>:<turn>`, `LEARN#deferred#...`), found through
  the chats its people own, before the chats go.
- The events feed, `EVENTS#<org>`, last of all: every other step may still add to it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.memory_bot import turn_event
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import pool_pk
from agent_memory.persistence.bot_rows import (
    bot_pk,
    channel_pk,
    chat_pk,
    org_bots_pk,
    owned_chat_key,
    turn_sk,
)
from agent_memory.persistence.events import partition
from agent_memory.persistence.memory_objects import delete_memories, list_partition
from agent_memory.persistence.organizations import org_channels_pk
from agent_memory.persistence.pools import PoolRepository
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.persistence.rows import StoreRows
from agent_memory.ports import Delete, Equals, KeyRange, Update
from agent_memory.ports.store import write_in_batches

if TYPE_CHECKING:
    from agent_memory.persistence.erasure import ForgetMemoryVectors

BOT_REV = "bot-rev"


class OrgContents(StoreRows):
    def delete_memories(self, org_id: str, forget: ForgetMemoryVectors) -> int:
        """Every agent_memory of the organization, each whole; vectors before rows."""
        metas = [
            stored.meta
            for row in self._rows(list_partition(org_id, None, None))
            if (stored := PoolRepository.parse(row)) is not None
        ]
        delete_memories(self._store, org_id, metas, forget)
        return len(metas)

    def delete_turn_waits(self, org_id: str, user_id: str) -> None:
        """The waits of every Turn in chats the person owns (ids only), before the chats and
        their Turns go."""
        pk, prefix = owned_chat_key(org_id, user_id, "")
        for owned in list(self._rows(pk, KeyRange(prefix=prefix))):
            chat_id = str(owned["sk"]).removeprefix(prefix)
            for turn in list(self._rows(chat_pk(chat_id), KeyRange(prefix=turn_sk("")))):
                event = turn_event(org_id, chat_id, str(turn["sk"]).removeprefix(turn_sk("")))
                self._delete_all(keys.deferred_pk(event))
                self._delete_all(keys.wait_pk(event))

    def delete_bots(self, org_id: str, learning_pk: Callable[[str], str]) -> tuple[int, int]:
        """(bots of the organization deleted, links of others' bots removed). `learning_pk`
        names a bot's learning partition for this organization."""
        own = links = 0
        for listed in list(self._rows(org_bots_pk(org_id))):
            bot_id = str(listed["sk"])
            self._delete_all(pool_pk(bot_id, org_id))
            self._delete_all(learning_pk(bot_id))
            bot = self._store.get(bot_pk(bot_id), keys.HEAD)
            if bot is not None and bot.get("orgId") == org_id:
                self._delete_all(bot_pk(bot_id), but_head=True)
                # The linked organizations' bot lists stop showing it (before its row goes,
                # which names them).
                linked = [Delete(org_bots_pk(o), bot_id) for o in (bot.get("links") or {})]
                write_in_batches(self._store, linked)
                self._store.write(
                    [Delete(bot_pk(bot_id), keys.HEAD), Delete(org_bots_pk(org_id), bot_id)]
                )
                own += 1
                continue
            links += until_it_lands(
                partial(self._unlink, bot_id, org_id),
                lambda: Unavailable("the bot kept changing while its link was removed"),
            )
            self._store.write([Delete(org_bots_pk(org_id), bot_id)])
        return own, links

    def _unlink(self, bot_id: str, org_id: str) -> int:
        """Another organization's bot forgets its link to this one (1 when it had one)."""
        bot = self._store.get(bot_pk(bot_id), keys.HEAD)
        if bot is None or org_id not in (bot.get("links") or {}):
            return 0
        rev = int(bot.get("rev", 0))
        links = {o: v for o, v in (bot.get("links") or {}).items() if o != org_id}
        # A bot changed meanwhile fails the condition: the retry reads it again.
        update = Update(
            bot_pk(bot_id),
            keys.HEAD,
            set={"links": links, "rev": rev + 1},
            condition=Equals("rev", rev, name=BOT_REV),
        )
        self._store.write([update])
        return 1

    def delete_channels(self, org_id: str) -> int:
        count = 0
        for listed in list(self._rows(org_channels_pk(org_id))):
            channel_id = str(listed["sk"])
            self._store.write(
                [
                    Delete(channel_pk(channel_id), keys.HEAD),
                    Delete(org_channels_pk(org_id), channel_id),
                ]
            )
            count += 1
        return count

    def delete_events(self, org_id: str) -> int:
        return len(self._delete_all(partition(org_id)))
