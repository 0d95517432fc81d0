"""Strands' `MemoryStore` on agent-memory threads (ADR 0082).

    from strands import Agent
    from strands.memory import MemoryManager
    store = AgentMemoryStore(AsyncClient(base_url=..., token=...), name="assistant")
    agent = Agent(model=..., memory_manager=MemoryManager(stores=[store]))

The store is the person's memory with the service agent named after the store (made on first
use, with recall across the person's threads): `add_messages` (what the MemoryManager's
extraction hands over after each run) saves the run's messages to one thread of the person,
each message's Strands form in its opaque `item` with the run's sequence number, so a retried
batch saves nothing twice; `add` saves one note to the person's notes thread; `search` is the
service's recall over the person's latest threads (by words, and by meaning where the
deployment embeds). With a service key, `user_id` names the person (added on first use).

Needs the `strands` extra (`pip install './clients/python[strands]'`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from strands.memory.types import (
    AddMessagesContext,
    MemoryEntry,
    MemoryStore,
    Metadata,
    SearchOptions,
)
from strands.types.content import Message

from agent_memory_client._async_client import AsyncClient
from agent_memory_client._people import People, recall, save

DEFAULT_MAX_SEARCH_RESULTS = 10
_KEY = "strands"


class AgentMemoryStore(MemoryStore):
    """A Strands memory store kept on the service: one person's threads with one agent.

    `client` is an `AsyncClient`; `user_id` is the person (required with a service key; with
    a user's token, that user or None). `name` is the store's name in Strands and the service
    agent's name. `extraction` (default on) lets the MemoryManager hand each run's messages to
    `add_messages`: the service keeps them and learns from them, no model call here.
    """

    def __init__(
        self,
        client: AsyncClient,
        *,
        name: str = "agent-memory",
        user_id: str | None = None,
        description: str | None = "The user's memory across conversations (agent-memory).",
        max_search_results: int | None = None,
        writable: bool = True,
        extraction: Any = True,
    ) -> None:
        if not name.strip():
            raise ValueError("AgentMemoryStore: name must not be empty.")
        if max_search_results is not None and max_search_results < 1:
            raise ValueError("AgentMemoryStore: max_search_results must be at least 1.")
        self.name = name
        self.description = description
        self.max_search_results = max_search_results
        self.writable = writable
        self.extraction = extraction if writable else None
        self.user_id = user_id
        self._people = People(client)
        # The run being saved: its thread and the (sequence number, digest) pairs saved.
        self._run_thread: str | None = None
        self._run_saved: dict[int, str] = {}

    async def initialize(self) -> None:
        """Resolve the person and the agent before the first run (a refused token fails the
        agent's construction, not a run)."""
        await self._agent()

    async def search(self, query: str, options: SearchOptions | None = None) -> list[MemoryEntry]:
        wanted = (options or {}).get("max_search_results") or (
            self.max_search_results or DEFAULT_MAX_SEARCH_RESULTS
        )
        person, agent = await self._agent()
        found = await recall(person, agent, query, wanted)
        return [_entry(m) for m in found]

    async def add(self, content: str, metadata: Metadata | None = None) -> dict[str, Any]:
        """One note in the person's notes thread (made on first use)."""
        person, agent = await self._agent()
        thread = await self._notes(person, agent)
        item = {_KEY: {"note": True, "metadata": metadata or {}}}
        saved = await person.save_messages(
            thread, [{"role": "user", "content": content, "item": item}]
        )
        return {"threadId": thread, "messageIds": saved}

    async def add_messages(
        self, messages: list[Message], context: AddMessagesContext | None = None
    ) -> dict[str, Any]:
        """Save a run's messages to its thread. A batch whose sequence numbers were saved
        with the same messages is a retry: nothing is saved again; a number saved with other
        messages means a new run: a new thread."""
        given = context.sequence_numbers if context else None
        numbers: list[int | None] = [*given] if given else [None] * len(messages)
        pairs = [(n, _digest(m)) for n, m in zip(numbers, messages, strict=True)]
        if any(n is not None and self._run_saved.get(n, d) != d for n, d in pairs):
            self._run_thread, self._run_saved = None, {}
        fresh = [
            (n, d, m)
            for (n, d), m in zip(pairs, messages, strict=True)
            if (n is None or n not in self._run_saved) and _text(m)
        ]
        if not fresh:
            return {"threadId": self._run_thread, "saved": 0}
        person, agent = await self._agent()
        if self._run_thread is None:
            self._run_thread = (await person.create_thread(agent)).id
        rows = [
            {
                "role": "assistant" if m.get("role") == "assistant" else "user",
                "content": _text(m),
                "item": {_KEY: {"message": m, "seq": n, "digest": d}},
            }
            for n, d, m in fresh
        ]
        await save(person, self._run_thread, rows)
        for n, d, _m in fresh:
            if n is not None:
                self._run_saved[n] = d
        return {"threadId": self._run_thread, "saved": len(rows)}

    # ------------------------------------------------------------------ helpers

    async def _agent(self) -> tuple[AsyncClient, str]:
        person = await self._people.person(self.user_id)
        return person, await self._people.agent(person, self.user_id, self.name)

    async def _notes(self, person: AsyncClient, agent: str) -> str:
        """The person's notes thread: the one whose messages are notes."""
        async for thread in person.iter_threads(agent_id=agent):
            latest = await person.list_messages(thread.id, limit=1)
            if latest and ((latest[0].item or {}).get(_KEY) or {}).get("note"):
                return thread.id
        return (await person.create_thread(agent)).id


def _text(message: Message | dict[str, Any]) -> str:
    blocks = message.get("content") or []
    return "\n".join(str(b["text"]) for b in blocks if isinstance(b, dict) and b.get("text"))


def _digest(message: Message) -> str:
    encoded = json.dumps(message, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(encoded.encode()).hexdigest()[:16]


def _entry(found: dict[str, Any]) -> MemoryEntry:
    item = found.get("item") if isinstance(found.get("item"), dict) else {}
    kept = (item or {}).get(_KEY) or {}
    metadata: dict[str, Any] = {
        "threadId": found.get("threadId"),
        "messageId": found.get("id"),
        "role": found.get("role"),
        "score": found.get("score"),
        "createdAt": found.get("createdAt"),
    }
    if isinstance(kept, dict) and kept.get("metadata"):
        metadata["metadata"] = kept["metadata"]
    return MemoryEntry(content=str(found.get("content", "")), metadata=metadata)


__all__ = ["AgentMemoryStore"]
