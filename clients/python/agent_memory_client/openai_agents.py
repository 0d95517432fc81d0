"""The OpenAI Agents SDK's `Session` protocol on an agent-memory thread (seed 003).

    from agents import Agent, Runner
    session = AgentMemorySession(thread.id, client=Client(base_url=..., token=...))
    await Runner.run(agent, "Hello", session=session)

Each SDK item is one thread message: `role` and `content` for the service (titles, recall,
the observer read them), and the item itself, exactly as the SDK gave it, in the message's
opaque `item`, which `get_items` hands back unchanged. Messages another client saved without
an `item` come back as plain `{"role", "content"}` messages.
Needs the `openai-agents` extra (`pip install './clients/python[openai-agents]'`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from agent_memory_client._async_client import AsyncClient
from agent_memory_client._sync_client import Client
from agent_memory_client.models import Message

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.memory.session_settings import SessionSettings

T = TypeVar("T")

# The service's bounds (API.md "Threads"): messages per save, messages per read.
SAVE_BATCH = 50
READ_LIMIT = 1000
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
# Items without a role: what the model did (assistant) and what tools answered (tool).
_TOOL_OUTPUTS = ("_output", "_result")


def message_for(item: dict[str, Any]) -> dict[str, Any]:
    """The thread message that keeps one SDK item: its role, its text, the item as sent."""
    role = _ROLES.get(str(item.get("role", "")))
    if role is None:
        kind = str(item.get("type", ""))
        role = "tool" if kind.endswith(_TOOL_OUTPUTS) else "assistant"
    return {"role": role, "content": _text(item), "item": item}


def item_for(message: Message) -> dict[str, Any]:
    """The SDK item a thread message holds (as sent), or a plain message for one saved
    without an item."""
    if message.item is not None:
        return message.item
    role = message.role if message.role in ("user", "assistant", "system") else "assistant"
    return {"role": role, "content": message.content}


def _text(item: dict[str, Any]) -> str:
    """The words of an item, for the service's titles and recall."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") or p.get("refusal") or "" for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if p)
    if item.get("type") == "function_call":
        return f"{item.get('name', '')}({item.get('arguments', '')})"
    output = item.get("output")
    if isinstance(output, str):
        return output
    summary = item.get("summary")
    if isinstance(summary, list):
        return "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict))
    return json.dumps(output, default=str) if output is not None else ""


class AgentMemorySession:
    """An OpenAI Agents SDK session kept on a thread of the agent-memory service.

    `thread_id` is a thread the client's token owns (`client.create_thread(agent_id)`);
    `client` is a `Client` (its calls run in a worker thread) or an `AsyncClient`.
    `get_items()` without a limit returns the latest 1,000 items (the service's bound); an
    item over 32 KB of JSON is refused (`ValidationError` at `["messages", n, "item"]`).
    """

    def __init__(
        self,
        thread_id: str,
        *,
        client: Client | AsyncClient,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = thread_id
        self.client = client
        self.session_settings = session_settings

    async def _run(self, call: Callable[[Any], Any]) -> Any:
        if isinstance(self.client, AsyncClient):
            return await call(self.client)
        return await asyncio.to_thread(call, self.client)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history in order; with `limit`, the latest `limit` items in order."""
        if limit is not None and limit <= 0:
            return []
        wanted = READ_LIMIT if limit is None else min(limit, READ_LIMIT)
        messages: list[Message] = await self._run(
            lambda c: c.list_messages(self.session_id, limit=wanted)
        )
        return [item_for(m) for m in messages]  # type: ignore[misc]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items, in order (in saves of at most 50)."""
        messages = [message_for(dict(item)) for item in items]
        for start in range(0, len(messages), SAVE_BATCH):
            await self._save(messages[start : start + SAVE_BATCH])

    async def _save(self, batch: list[dict[str, Any]]) -> None:
        await self._run(lambda c: c.save_messages(self.session_id, batch))

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (None: the session is empty)."""
        message: Message | None = await self._run(lambda c: c.pop_message(self.session_id))
        return item_for(message) if message is not None else None  # type: ignore[return-value]

    async def clear_session(self) -> None:
        """Remove every item (the thread and its working memory stay)."""
        await self._run(lambda c: c.clear_messages(self.session_id))


__all__ = ["AgentMemorySession", "item_for", "message_for"]
