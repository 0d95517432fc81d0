"""Lambda: the MCP server behind the service's own HTTP API (template.yaml `McpFunction`,
route `ANY /mcp`). Needs the `lambda` extra (mcp, mangum).

The tools call the service's HTTP API with the caller's own token, at the API this request
came through (`requestContext.domainName`, set by API Gateway, not by the client), or at
`AGENT_MEMORY_URL` when set. So this function holds no table, key or model permission: every
request is authorized by the API function exactly as a direct call would be.
"""

from __future__ import annotations

import os
from typing import Any

from mangum import Mangum

from agent_memory_client.mcp import Connector, McpEndpoint

# One endpoint per API base URL, kept across invocations (building one costs ~35 ms).
_endpoints: dict[str, McpEndpoint] = {}


def base_url(event: dict[str, Any]) -> str:
    """Where the service's API is, for this request."""
    configured = os.environ.get("AGENT_MEMORY_URL", "").strip()
    if configured:
        return configured.rstrip("/")
    context = event.get("requestContext") or {}
    domain = context.get("domainName")
    if not domain:
        raise RuntimeError("no requestContext.domainName: set AGENT_MEMORY_URL")
    stage = context.get("stage") or "$default"
    prefix = "" if stage == "$default" else f"/{stage}"
    return f"https://{domain}{prefix}"


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    url = base_url(event)
    endpoint = _endpoints.get(url)
    if endpoint is None:
        endpoint = _endpoints[url] = McpEndpoint(Connector(url))
    answer: dict[str, Any] = Mangum(endpoint, lifespan="off")(event, context)
    return answer
