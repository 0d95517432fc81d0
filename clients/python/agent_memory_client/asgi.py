"""`with_mcp(api_app)`: the service's ASGI app with MCP at `/mcp` (infra/local/serve.py).

The `mcp` SDK is imported at the first `/mcp` request, not at start: it costs seconds to
import, and most runs of `make run` (and of the suite's servers) never serve MCP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import httpx

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"


def with_mcp(api: ASGIApp, *, path: str = MCP_PATH) -> ASGIApp:
    """`api` with MCP at `path`: the tools call `api` in process with the caller's token."""
    endpoint: list[ASGIApp] = []
    building = anyio.Lock()

    async def mcp_endpoint() -> ASGIApp:
        async with building:
            if not endpoint:
                from agent_memory_client.mcp import Connector, McpEndpoint

                connector = Connector("http://agent-memory", transport=httpx.ASGITransport(api))
                endpoint.append(McpEndpoint(connector))
        return endpoint[0]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path", "") in (path, f"{path}/"):
            await (await mcp_endpoint())(scope, receive, send)
        else:
            await api(scope, receive, send)

    return app
