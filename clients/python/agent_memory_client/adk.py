"""Google ADK's `BaseMemoryService` on agent-memory threads (ADR 0082).

    from google.adk.runners import Runner
    memory = AgentMemoryService(AsyncClient(base_url=..., token=SERVICE_KEY))
    runner = Runner(agent=agent, app_name="travel", session_service=..., memory_service=memory)

An ADK app is a service agent of that name (made on first use, with recall across the user's
threads switched on); an ADK user is a person: with a service key, the person of that id in
the key's organization (added on first use), with a user's token, that user alone. Each ADK
session is one thread of the person with the app's agent; each event with text is one
message, its role and text for the service and the event itself (as ADK dumps it) in the
message's opaque `item`, so adding a session again saves only events not saved yet.
`search_memory` is the service's recall over the person's latest threads of the app (by
words, and by meaning where the deployment embeds), answered as `MemoryEntry` items.

Needs the `google-adk` extra (`pip install './clients/python[google-adk]'`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from agent_memory_client._async_client import AsyncClient
from agent_memory_client._people import READ_LIMIT, People, recall, save
from agent_memory_client.errors import NotFound
from agent_memory_client.models import Message

if TYPE_CHECKING:
    from google.adk.sessions.session import Session

# The thread of events added without a session, and of memories added directly.
NO_SESSION = "__unknown_session_id__"
MEMORIES = "__memories__"
# As many as ADK's own in-memory service answers.
RECALL_LIMIT = 10
_KEY = "adk"


class AgentMemoryService(BaseMemoryService):
    """An ADK memory service whose memories are the person's threads with the app's agent.

    `client` is an `AsyncClient`: a service key (each ADK `user_id` is a person of its
    organization) or a user's token (ADK's `user_id` must then be that user's id).
    """

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self._people = People(client)
        self._threads: dict[tuple[str, str, str], str] = {}

    # ------------------------------------------------------------------ the interface

    async def add_session_to_memory(self, session: Session) -> None:
        await self._add(session.app_name, session.user_id, session.id, session.events)

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        await self._add(app_name, user_id, session_id or NO_SESSION, events)

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Each entry is one message of the person's memories thread of the app."""
        now = datetime.now(UTC).timestamp()
        events = [
            Event(
                id=entry.id or Event.new_id(),
                author=entry.author or "user",
                content=entry.content,
                timestamp=_seconds(entry.timestamp) or now,
                custom_metadata=dict(entry.custom_metadata) or None,
            )
            for entry in memories
        ]
        await self._add(app_name, user_id, MEMORIES, events)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        person = await self._people.person(user_id)
        agent = await self._people.agent(person, user_id, app_name)
        found = await recall(person, agent, query, RECALL_LIMIT)
        return SearchMemoryResponse(memories=[_entry(m) for m in found])

    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Delete one memory (an id `search_memory` answered): its thread's messages are
        saved again without it (their service ids change; the thread stays)."""
        if not memory_id:
            return
        thread_id, _, message_id = memory_id.partition("/")
        if not message_id:
            return
        person = await self._people.person(user_id)
        try:
            messages = await person.list_messages(thread_id, limit=READ_LIMIT)
        except NotFound:
            return  # not this person's thread: nothing of theirs to delete
        kept = [m for m in messages if m.id != message_id]
        if len(kept) == len(messages):
            return
        await person.clear_messages(thread_id)
        await save(person, thread_id, [_again(m) for m in kept])

    # ------------------------------------------------------------------ helpers

    async def _add(
        self, app_name: str, user_id: str, session_id: str, events: Sequence[Event]
    ) -> None:
        person = await self._people.person(user_id)
        agent = await self._people.agent(person, user_id, app_name)
        thread = await self._thread(person, agent, user_id, session_id)
        saved: set[str | None] = set()
        if thread is not None:
            saved = {_event_id(m) for m in await person.list_messages(thread, limit=READ_LIMIT)}
        fresh = [e for e in events if _text(e) and e.id not in saved]
        if not fresh:
            return
        if thread is None:
            thread = (await person.create_thread(agent)).id
            self._threads[(agent, user_id, session_id)] = thread
        await save(person, thread, [_message(e, session_id) for e in fresh])

    async def _thread(
        self, person: AsyncClient, agent: str, user_id: str, session: str
    ) -> str | None:
        """The person's thread of an ADK session, found by the session id its messages
        carry (None: nothing of it saved yet)."""
        cached = self._threads.get((agent, user_id, session))
        if cached is not None:
            return cached
        found = None
        async for thread in person.iter_threads(agent_id=agent):
            latest = await person.list_messages(thread.id, limit=1)
            if latest and _session_of(latest[0]) == session:
                found = thread.id
                break
        if found is not None:
            self._threads[(agent, user_id, session)] = found
        return found


def _text(event: Event) -> str:
    parts = event.content.parts if event.content and event.content.parts else []
    return "\n".join(p.text for p in parts if p.text)


def _message(event: Event, session_id: str) -> dict[str, Any]:
    role = "user" if event.author == "user" else "assistant"
    dumped = event.model_dump(mode="json", exclude_none=True, by_alias=True)
    return {"role": role, "content": _text(event), "item": {_KEY: dumped, "session": session_id}}


def _again(message: Message) -> dict[str, Any]:
    kept: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.item is not None:
        kept["item"] = message.item
    return kept


def _event_id(message: Message) -> str | None:
    event = (message.item or {}).get(_KEY)
    return event.get("id") if isinstance(event, dict) else None


def _session_of(message: Message) -> str | None:
    session = (message.item or {}).get("session")
    return session if isinstance(session, str) else None


def _entry(found: dict[str, Any]) -> MemoryEntry:
    """A recalled message as ADK's memory entry; its id names the thread and the message."""
    item = found.get("item") or {}
    event = item.get(_KEY) if isinstance(item, dict) else None
    role = "user" if found.get("role") == "user" else "model"
    content = types.Content(role=role, parts=[types.Part(text=str(found.get("content", "")))])
    author = event.get("author") if isinstance(event, dict) else None
    stamp = event.get("timestamp") if isinstance(event, dict) else None
    if not isinstance(stamp, int | float):
        stamp = (found.get("createdAt") or 0) / 1000
    return MemoryEntry(
        id=f"{found.get('threadId')}/{found.get('id')}",
        content=content,
        author=author or ("user" if role == "user" else None),
        timestamp=datetime.fromtimestamp(stamp, UTC).isoformat(),
    )


def _seconds(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        return None


__all__ = ["AgentMemoryService"]
