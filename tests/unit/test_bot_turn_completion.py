"""A Turn's completion knows how far the Turn reaches without reading it again:
the completion is conditional on the last item it read, so an item added meanwhile makes it
read again, and the learning it releases reads through every item of the Turn."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.errors import ChatConflict
from agent_memory.domain.identity import Principal
from agent_memory.domain.sessions import NewItem
from agent_memory.persistence import keys
from agent_memory.persistence.bots import BotRepository
from agent_memory.ports import Put
from agent_memory.service.bots import BotService
from tests.support.in_memory import FakeCipher, FixedClock, InMemoryStore, SequentialIds

ORG = "o1"
ANA = Principal("ana", ORG, "member")


def _bots() -> tuple[BotService, InMemoryStore, str, str]:
    store = InMemoryStore()
    store.write([Put({"pk": keys.user(ORG, "ana"), "sk": keys.HEAD})])
    bots = BotService(BotRepository(store, FakeCipher()), FixedClock(step_ms=1), SequentialIds())
    bot_id = bots.create_bot(ANA, "Helper", {}).id
    chat_id = bots.create_chat(ANA, bot_id, None, "chat").id
    turn_id = bots.begin_turn(ANA, chat_id, "I run.")[1].id
    return bots, store, chat_id, turn_id


def test_an_item_added_while_the_turn_completes_is_within_it(monkeypatch: Any) -> None:
    bots, _store, chat_id, turn_id = _bots()
    original = bots.repo.complete_turn
    raced = {"done": False}

    def items_meanwhile(chat: Any, turn: Any, now_ms: int) -> None:
        if not raced["done"]:
            # The Bot's answer lands after the completion read the Turn, before it writes.
            raced["done"] = True
            bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "Well done.")])
        original(chat, turn, now_ms)

    monkeypatch.setattr(bots.repo, "complete_turn", items_meanwhile)
    chat, turn = bots.finish_turn(ANA, chat_id, turn_id)
    assert turn.id == turn_id
    # The release reads through the item added meanwhile: the input (1) and the answer (2).
    assert (turn.status, turn.last_item, chat.id) == ("completed", 2, chat_id)
    # Completed: no more items, and a repeated complete answers the same Turn.
    with pytest.raises(ChatConflict):
        bots.add_items(ANA, chat_id, turn_id, [NewItem("assistant", "Late.")])
    assert bots.finish_turn(ANA, chat_id, turn_id)[1].last_item == 2
