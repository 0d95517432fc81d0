"""The memory Bot's encrypted call log as a test reads it back: the `CALL#` rows and the
confessions that carry their confide's call, in the Chat's partition, opened."""

from __future__ import annotations

from typing import Any

from agent_memory.domain.memory_bot import ModelCall
from agent_memory.persistence.keys import CALL_PREFIX, CONFESSION_PREFIX


def logged_calls(services: Any, chat_id: str) -> list[ModelCall]:
    """The Chat's logged model calls, newest first."""
    repo = services.memory_bot.repo
    chat = services.bots.repo.get_chat(chat_id)
    rows = [
        *repo._newest(chat, CALL_PREFIX),
        *(r for r in repo._newest(chat, CONFESSION_PREFIX) if "task" in r[0]),
    ]
    rows.sort(key=lambda r: (int(r[0]["at"]), str(r[0]["sk"])), reverse=True)
    return [
        ModelCall(
            str(row["turnId"]),
            str(row["task"]),
            str(row["model"]),
            str(opened["request"]),
            opened["reply"],
            str(row["ended"]),
            (int(row["tokens"][0]), int(row["tokens"][1])) if row.get("tokens") else None,
            float(row["ms"]) if row.get("ms") is not None else None,
            int(row["at"]),
        )
        for row, opened in rows
    ]
