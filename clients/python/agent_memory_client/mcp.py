"""The agent-memory MCP server: tools over the caller's agent memories (seed 004), a thread's
context, working memory and recall (seed 003), session memory (seed 000) and bot memory (002).

- stdio, for desktop clients: `python -m agent_memory_client.mcp` with `AGENT_MEMORY_URL` and
  `AGENT_MEMORY_TOKEN` in the environment (a service key with `AGENT_MEMORY_ACT_AS`, the
  person it acts for; over HTTP, the request's `Act-As` header).
- streamable HTTP, inside the service: `agent_memory_client.asgi.with_mcp(api_app)` serves
  `/mcp` beside the API's routes, behind the same bearer token (checked with `GET /v1/me`
  before any MCP message is read); each tool calls the API with the caller's own token, in
  process.
- on Lambda, behind the same HTTP API: `agent_memory_client.lambda_handler`.

Stateless and JSON-answering over HTTP, so any instance (or Lambda) can answer any request.
Needs the `mcp` extra (`pip install './clients/python[mcp]'`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import anyio
import httpx
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field

from agent_memory_client._async_client import AsyncClient
from agent_memory_client.errors import AgentMemoryError, NotFound, Unauthorized, ValidationError
from agent_memory_client.models import ForgetCommand, RememberCommand

# ASGI's types, as Starlette spells them.
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# What the service answers for these tools' rows; a model needs no more than these fields.
_SHOWN = ("id", "category", "content", "importance", "entity", "expires_at", "created_at")

INSTRUCTIONS = (
    "Long-term memory about the user and their world, kept between conversations. Call "
    "`recall` at the start of a task to load what is known; call `remember` when the user "
    "states a lasting preference, fact or instruction (not small talk); call `forget` with a "
    "memory's id when the user retracts it or it is wrong; `list_memories` browses newest "
    "first. With a thread id: `thread_context` (what the model gets for a turn), "
    "`read_working_memory`/`update_working_memory`, `recall_messages`. With a session id: "
    "`read_session_memory`, `remember_in_session`, `forget_in_session`. With a bot id: "
    "`read_bot_memory`, `remember_for_bot`, `forget_for_bot`."
)

Category = Literal["preference", "fact", "instruction"]


@dataclass(frozen=True)
class Connector:
    """How the tools reach the service: `base_url`, through `transport` (an in-process
    ASGI transport inside the service; None: over the network), with the request's bearer
    token, else `token` (stdio)."""

    base_url: str
    token: str | None = None
    transport: httpx.AsyncBaseTransport | None = None
    # The person a service key `token` acts for (stdio).
    act_as: str | None = None

    def client(self, headers: Mapping[str, str] | None) -> AsyncClient:
        from_request = bearer(headers)
        token = from_request or self.token
        if not token:
            raise ToolError("no token: set AGENT_MEMORY_TOKEN, or send Authorization: Bearer")
        person = acting_for(headers) if from_request else self.act_as
        return AsyncClient(self.base_url, token, transport=self.transport, act_as=person)


def bearer(headers: Mapping[str, str] | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, if there is one."""
    if not headers:
        return None
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def acting_for(headers: Mapping[str, str] | None) -> str | None:
    """The person an `Act-As` header names, if there is one."""
    if not headers:
        return None
    return next((v.strip() for k, v in headers.items() if k.lower() == "act-as"), None)


def _shown(memory: Any) -> dict[str, Any]:
    data = memory.model_dump(mode="json")
    return {key: data[key] for key in _SHOWN if data.get(key) is not None}


def _tool_error(error: AgentMemoryError) -> ToolError:
    where = f" (field: {'.'.join(str(p) for p in error.path)})" if error.path else ""
    return ToolError(f"{error.code}: {error.message}{where}")


_REMEMBER = (
    "Save a long-term memory about the user (a preference, a fact or an instruction) so it "
    "can be recalled in later conversations. Answers the saved memory with its id."
)


_RECALL = (
    "Recall the user's long-term memories: with a `query`, the closest in meaning first "
    "(where this deployment has semantic recall); otherwise the most important first. "
    "Expired memories are left out."
)


_FORGET = "Delete one long-term memory by its id, when the user retracts it or it is wrong."


_LIST_MEMORIES = "List the user's long-term memories, newest first (optionally of one category)."


def build_server(connector: Connector) -> MCPServer:
    """The MCP server and its tools, each calling the service through `connector`."""
    server = MCPServer("agent-memory", instructions=INSTRUCTIONS, version="0.1.0")

    async def call(ctx: Context, work: Callable[[AsyncClient], Awaitable[Any]]) -> Any:
        async with connector.client(ctx.headers if _in_request(ctx) else None) as client:
            try:
                return await work(client)
            except AgentMemoryError as error:
                raise _tool_error(error) from error
            except httpx.TransportError as error:
                # One plain tool error, not the transport's exception chain.
                raise ToolError(f"Unavailable: the service could not be reached: {error}") from None

    _add_writes(server, call)
    _add_reads(server, call)
    _add_thread_tools(server, call)
    _add_session_tools(server, call)
    _add_bot_tools(server, call)
    return server


# One tool's call of the service, with the request's token (`build_server`'s `call`).
Call = Callable[[Context, Callable[[AsyncClient], Awaitable[Any]]], Awaitable[Any]]


def _add_writes(server: MCPServer, call: Call) -> None:
    """remember and forget."""

    @server.tool(
        description=_REMEMBER,
        annotations=ToolAnnotations(title="Remember", readOnlyHint=False, idempotentHint=False),
    )
    async def remember(
        content: Annotated[
            str,
            Field(
                description="One self-contained statement to keep, written so it makes sense "
                "on its own later, e.g. 'The user prefers window seats.' (1 to 4,000 characters)",
                min_length=1,
                max_length=4000,
            ),
        ],
        ctx: Context,
        category: Annotated[
            Category,
            Field(
                description="'preference' (what the user likes or wants), 'fact' (something "
                "true about the user or their world), or 'instruction' (how to behave)"
            ),
        ] = "fact",
        importance: Annotated[
            float | None,
            Field(
                description="0 to 1: how much this matters (default 0.5); recall returns the "
                "most important first",
                ge=0,
                le=1,
            ),
        ] = None,
        entity_id: Annotated[
            str | None,
            Field(
                description="The id of the person, account or thing this memory is about, "
                "when it is not the user themselves",
                max_length=255,
            ),
        ] = None,
    ) -> dict[str, Any]:
        entity = {"id": entity_id, "type": "entity"} if entity_id else None

        async def work(client: AsyncClient) -> dict[str, Any]:
            made = await client.create_agent_memory(
                content, category, importance=importance, entity=entity
            )
            return _shown(made)

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description=_FORGET,
        annotations=ToolAnnotations(title="Forget", destructiveHint=True, idempotentHint=True),
    )
    async def forget(
        id: Annotated[
            str, Field(description="The id of the memory (from recall or list_memories)")
        ],
        ctx: Context,
    ) -> dict[str, Any]:

        async def work(client: AsyncClient) -> dict[str, Any]:
            try:
                deleted = await client.delete_agent_memory(id)
            except NotFound as error:
                raise ToolError(f"NotFound: no memory {id} (already forgotten?)") from error
            return {"id": deleted.id, "deleted": True}

        result: dict[str, Any] = await call(ctx, work)
        return result


def _add_reads(server: MCPServer, call: Call) -> None:
    """recall and list_memories."""

    @server.tool(
        description=_RECALL, annotations=ToolAnnotations(title="Recall", readOnlyHint=True)
    )
    async def recall(
        ctx: Context,
        query: Annotated[
            str | None,
            Field(
                description="What you need to know, in words (e.g. 'seating preferences'); "
                "leave it out to get the most important memories"
            ),
        ] = None,
        limit: Annotated[
            int, Field(description="How many memories at most (1 to 100)", ge=1, le=100)
        ] = 10,
    ) -> dict[str, Any]:

        async def work(client: AsyncClient) -> dict[str, Any]:
            note = None
            try:
                found = await client.recall_agent_memories(limit=limit, query=query)
            except ValidationError as error:
                if not query or error.path != ["query"]:
                    raise
                # This deployment recalls by importance only: answer that, and say so.
                found = await client.recall_agent_memories(limit=limit)
                note = "semantic recall is not available here: most important first instead"
            answer: dict[str, Any] = {"memories": [_shown(m) for m in found.data]}
            if note:
                answer["note"] = note
            return answer

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description=_LIST_MEMORIES,
        annotations=ToolAnnotations(title="List memories", readOnlyHint=True),
    )
    async def list_memories(
        ctx: Context,
        category: Annotated[
            Category | None,
            Field(description="Only this category: 'preference', 'fact' or 'instruction'"),
        ] = None,
        limit: Annotated[
            int, Field(description="How many memories at most (1 to 100)", ge=1, le=100)
        ] = 10,
    ) -> dict[str, Any]:

        async def work(client: AsyncClient) -> dict[str, Any]:
            page = await client.list_agent_memories(limit=limit, category=category)
            return {"memories": [_shown(m) for m in page.data], "has_more": page.has_more}

        result: dict[str, Any] = await call(ctx, work)
        return result


# --------------------------------------------------------------------------- beyond agent memories

ThreadId = Annotated[
    str, Field(description="The id of a thread of the user (thr_...)", min_length=1, max_length=100)
]
SessionId = Annotated[
    str,
    Field(description="The id of a session of the user (ses_...)", min_length=1, max_length=100),
]
BotId = Annotated[
    str,
    Field(description="The id of a bot the user may use (bot_...)", min_length=1, max_length=100),
]
SessionKind = Literal["fact", "decision", "preference", "procedure", "hypothesis"]


def _json(answer: Any) -> dict[str, Any]:
    """A client answer as the API gives it (camelCase where the API is)."""
    data: dict[str, Any] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _add_thread_tools(server: MCPServer, call: Call) -> None:
    """A thread's turn context, its working memory (read, update) and recall."""

    @server.tool(
        description="What the agent's model gets for a turn of a thread: the last messages, "
        "messages recalled from the user's other threads, the working memory, the "
        "observations and the system text. Give the user's new message to recall by it.",
        annotations=ToolAnnotations(title="Thread context", readOnlyHint=True),
    )
    async def thread_context(
        thread_id: ThreadId,
        ctx: Context,
        message: Annotated[
            str | None,
            Field(description="The user's message of this turn (recall looks for it)"),
        ] = None,
    ) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return _json(await client.thread_context(thread_id, message))

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description="Read a thread's working memory: the notes (markdown, or a JSON object "
        "when the agent has a schema) kept across its turns, or across the user's threads.",
        annotations=ToolAnnotations(title="Read working memory", readOnlyHint=True),
    )
    async def read_working_memory(thread_id: ThreadId, ctx: Context) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return _json(await client.get_working_memory(thread_id))

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description="Replace a thread's working memory with new notes: the whole text "
        "(markdown), or the whole JSON object when the agent has a schema (checked).",
        annotations=ToolAnnotations(
            title="Update working memory", readOnlyHint=False, idempotentHint=True
        ),
    )
    async def update_working_memory(
        thread_id: ThreadId,
        content: Annotated[
            str | dict[str, Any],
            Field(description="The new working memory, whole: markdown text or a JSON object"),
        ],
        ctx: Context,
    ) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return _json(await client.put_working_memory(thread_id, content))

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description="Find the messages of the user's past conversations closest in meaning "
        "to a query (where the agent has recall on), with their thread.",
        annotations=ToolAnnotations(title="Recall messages", readOnlyHint=True),
    )
    async def recall_messages(
        thread_id: ThreadId,
        query: Annotated[
            str, Field(description="What to look for, in words", min_length=1, max_length=10000)
        ],
        ctx: Context,
        limit: Annotated[
            int | None, Field(description="How many messages at most (1 to 50)", ge=1, le=50)
        ] = None,
    ) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return {"messages": await client.recall_thread(thread_id, query, limit=limit)}

        result: dict[str, Any] = await call(ctx, work)
        return result


def _add_session_tools(server: MCPServer, call: Call) -> None:
    """A session's memory: read, remember, forget (seed 000)."""

    @server.tool(
        description="Read a session's memory: its entries by key (content, kind, status: "
        "'retracted' once forgotten), what is switched on, and which turns were learned from.",
        annotations=ToolAnnotations(title="Read session memory", readOnlyHint=True),
    )
    async def read_session_memory(session_id: SessionId, ctx: Context) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return _json(await client.get_session_memory(session_id))

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description="Remember something in a session's memory under a short key (a new "
        "content for an existing key replaces it). Answers the session's new revision.",
        annotations=ToolAnnotations(
            title="Remember in session", readOnlyHint=False, idempotentHint=True
        ),
    )
    async def remember_in_session(
        session_id: SessionId,
        key: Annotated[
            str,
            Field(description="A short stable name, e.g. 'budget'", min_length=1, max_length=200),
        ],
        content: Annotated[
            str,
            Field(
                description="The statement to keep, self-contained", min_length=1, max_length=4000
            ),
        ],
        ctx: Context,
        kind: Annotated[
            SessionKind,
            Field(description="fact, decision, preference, procedure or hypothesis"),
        ] = "fact",
    ) -> dict[str, Any]:
        command = RememberCommand(key=key, content=content, kind=kind)

        async def work(client: AsyncClient) -> dict[str, Any]:
            session = await client.update_session_memory(session_id, lambda _s, _m: command)
            return {"sessionId": session.id, "revision": session.revision, "key": key}

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description="Forget the entry of a key in a session's memory.",
        annotations=ToolAnnotations(
            title="Forget in session", destructiveHint=True, idempotentHint=True
        ),
    )
    async def forget_in_session(
        session_id: SessionId,
        key: Annotated[
            str, Field(description="The key of the entry (from read_session_memory)", min_length=1)
        ],
        ctx: Context,
    ) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            def build(_session: Any, memory: Any) -> ForgetCommand:
                entry = memory.entries.get(key)
                if entry is None or entry.status != "active":
                    raise ToolError(f"NotFound: no entry {key!r} in this session's memory")
                return ForgetCommand(key=key)

            session = await client.update_session_memory(session_id, build)
            return {"sessionId": session.id, "revision": session.revision, "forgotten": key}

        result: dict[str, Any] = await call(ctx, work)
        return result


def _add_bot_tools(server: MCPServer, call: Call) -> None:
    """A bot's memory: read, remember, forget (seed 002)."""

    @server.tool(
        description="Read a bot's memory: its entries (id, content, tags), optionally only "
        "those with all the given tags.",
        annotations=ToolAnnotations(title="Read bot memory", readOnlyHint=True),
    )
    async def read_bot_memory(
        bot_id: BotId,
        ctx: Context,
        tags: Annotated[
            list[str] | None, Field(description="Only entries with every one of these tags")
        ] = None,
    ) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return _json(await client.get_bot_memory(bot_id, tags=tags))

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description="Remember an entry in a bot's memory (needs write on the bot). Answers "
        "the entry with its id.",
        annotations=ToolAnnotations(title="Remember for bot", readOnlyHint=False),
    )
    async def remember_for_bot(
        bot_id: BotId,
        content: Annotated[
            str,
            Field(
                description="The statement to keep, self-contained", min_length=1, max_length=4000
            ),
        ],
        ctx: Context,
        tags: Annotated[
            list[str] | None, Field(description="Topics to file it under, e.g. ['billing']")
        ] = None,
    ) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return _json(await client.remember_entry(bot_id, content, tags))

        result: dict[str, Any] = await call(ctx, work)
        return result

    @server.tool(
        description="Forget one entry of a bot's memory by its id (needs write on the bot).",
        annotations=ToolAnnotations(title="Forget for bot", destructiveHint=True),
    )
    async def forget_for_bot(
        bot_id: BotId,
        entry_id: Annotated[str, Field(description="The entry's id (from read_bot_memory)")],
        ctx: Context,
    ) -> dict[str, Any]:
        async def work(client: AsyncClient) -> dict[str, Any]:
            return _json(await client.forget_entry(bot_id, entry_id))

        result: dict[str, Any] = await call(ctx, work)
        return result


def _in_request(ctx: Context) -> bool:
    try:
        ctx.request_context  # noqa: B018 (raises outside a request)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- over HTTP


class McpEndpoint:
    """An ASGI app serving MCP (streamable HTTP, stateless, JSON answers) at any path it is
    given; a request without a token the service accepts gets the service's own 401."""

    def __init__(self, connector: Connector) -> None:
        self.connector = connector
        self.server = build_server(connector)
        # Requests reach it through the API's own host (API Gateway, or loopback): the bearer
        # token, not the Host header, is what protects it.
        self.security = TransportSecuritySettings(enable_dns_rebinding_protection=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _no_lifespan(receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = await self._refusal(bearer(headers), acting_for(headers))
        if refusal is not None:
            await _send_error(send, refusal)
            return
        # One manager per request: stateless, and its run() may be entered only once.
        manager = StreamableHTTPSessionManager(
            app=self.server._lowlevel_server,  # the SDK's own route to the low-level server
            json_response=True,
            stateless=True,
            security_settings=self.security,
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)

    async def _refusal(self, token: str | None, person: str | None) -> AgentMemoryError | None:
        """The service's refusal of this token, or of the person a service key acts for
        (None: it may go on)."""
        if not token:
            return Unauthorized(401, "missing bearer token")
        async with AsyncClient(
            self.connector.base_url,
            token,
            transport=self.connector.transport,
            max_retries=0,
            act_as=person,
        ) as client:
            try:
                await client.me()
            except AgentMemoryError as error:
                return error
        return None


async def _send_error(send: Send, error: AgentMemoryError) -> None:
    """The service's error answer, as the API gives it (API.md "Errors")."""
    body = {"error": {"_tag": error.code, "message": error.message, "path": error.path}}
    payload = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    if error.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if error.retry_after is not None:
        headers.append((b"retry-after", str(round(error.retry_after)).encode()))
    status = error.status
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def _no_lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


# --------------------------------------------------------------------------- over stdio


def main() -> None:
    """`python -m agent_memory_client.mcp`: serve the tools over stdio."""
    url = os.environ.get("AGENT_MEMORY_URL", "").strip()
    token = os.environ.get("AGENT_MEMORY_TOKEN", "").strip()
    if not url or not token:
        raise SystemExit("agent-memory MCP: set AGENT_MEMORY_URL and AGENT_MEMORY_TOKEN")
    act_as = os.environ.get("AGENT_MEMORY_ACT_AS", "").strip() or None
    server = build_server(Connector(url, token=token, act_as=act_as))
    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()

__all__ = ["Connector", "McpEndpoint", "bearer", "build_server", "main"]
