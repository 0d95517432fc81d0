"""The people and agents a framework's memory adapter works as (ADR 0082): with a service
key, each framework user is a person of its organization (added on first use); with a user's
token, that user alone. A framework app is the person's agent of that name, made on first use
with recall over the person's threads."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from agent_memory_client._async_client import AsyncClient
from agent_memory_client.errors import NotFound
from agent_memory_client.models import MessageIn

# What the app's agent remembers with: recall over the person's threads of the app.
AGENT_OPTIONS: dict[str, Any] = {
    "observationalMemory": {"retrieval": {"scope": "resource", "vector": True}}
}
# The service's bounds (API.md "Threads"): messages per save, messages per read, recall.
SAVE_BATCH = 50
READ_LIMIT = 1000
RECALL_MAX = 50


class People:
    """Clients acting as framework users, and their agents by app name (cached)."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        self._caller: Any = None
        self._people: dict[str, AsyncClient] = {}
        self._agents: dict[tuple[str, str], str] = {}
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _bind(self) -> None:
        """Frameworks run their calls in event loops of their own (Strands' sync agent call,
        then the caller's `asyncio.run`): connections opened in one loop cannot serve
        another, so each new loop gets the client anew (same token, same settings)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None:
            self.client = _rebound(self.client)
            self._people.clear()
            self._lock = asyncio.Lock()
        self._loop = loop

    async def person(self, user_id: str | None) -> AsyncClient:
        """The client acting as `user_id` (None: the token's own user)."""
        self._bind()
        async with self._lock:
            key = user_id or ""
            if key in self._people:
                return self._people[key]
            if self._caller is None:
                self._caller = await self.client.me()
            caller = self._caller
            if caller.role != "service-key":
                if user_id is not None and user_id != caller.id:
                    raise ValueError(
                        f"user {user_id!r} is not this token's user ({caller.id}): use the "
                        "user's own token, or a service key to serve many users"
                    )
                person = self.client
            else:
                if user_id is None:
                    raise ValueError("a service key serves many users: name the user")
                person = self.client.acting_for(user_id)
                try:
                    await person.me()
                except NotFound:
                    await self.client.add_user(caller.organization_id, id=user_id)
            self._people[key] = person
            return person

    async def agent(self, person: AsyncClient, user_id: str | None, app_name: str) -> str:
        """The person's agent named after the app, made with recall on first use."""
        key = (user_id or "", app_name)
        if key in self._agents:
            return self._agents[key]
        found = None
        async for agent in person.iter_agents():
            if agent.name == app_name:
                found = agent.id
                break
        if found is None:
            found = (await person.create_agent(app_name)).id
            await person.patch_draft(found, {"options": AGENT_OPTIONS})
            await person.activate(found, (await person.publish(found)).number)
        self._agents[key] = found
        return found


def _rebound(client: AsyncClient) -> AsyncClient:
    """`client` with a connection pool of its own (its transport kept when it was given one
    that holds no connections, such as an in-process app's)."""
    old = client._http  # this package's own client: its settings are read here
    transport = old._transport
    fresh = object.__new__(type(client))
    fresh.__dict__.update(client.__dict__)
    fresh._http = httpx.AsyncClient(
        base_url=old.base_url,
        headers=old.headers,
        timeout=old.timeout,
        transport=None if isinstance(transport, httpx.AsyncHTTPTransport) else transport,
    )
    return fresh


async def save(person: AsyncClient, thread: str, messages: list[dict[str, Any]]) -> None:
    """Save messages in order, in batches the service takes."""
    for start in range(0, len(messages), SAVE_BATCH):
        batch: list[MessageIn | dict[str, Any]] = [*messages[start : start + SAVE_BATCH]]
        await person.save_messages(thread, batch)


async def recall(person: AsyncClient, agent: str, query: str, limit: int) -> list[dict[str, Any]]:
    """The person's messages with the agent closest to `query` (by words, and by meaning
    where the deployment embeds), across their latest threads of it."""
    threads = await person.list_threads(agent_id=agent, limit=1)
    if not threads.threads or not query.strip():
        return []
    return await person.recall_thread(
        threads.threads[0].id, query, limit=max(1, min(limit, RECALL_MAX))
    )
