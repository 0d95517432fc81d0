"""The MCP server with the `mcp` package's own client: streamable HTTP at the local service's
/mcp (behind its bearer tokens), and stdio (`python -m agent_memory_client.mcp`)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from agent_memory_client import Client
from agent_memory_client.mcp import Connector, McpEndpoint
from tests.clients.conftest import ROOT, LocalService

TOOLS = {
    "remember",
    "recall",
    "forget",
    "list_memories",
    "thread_context",
    "read_working_memory",
    "update_working_memory",
    "recall_messages",
    "read_session_memory",
    "remember_in_session",
    "forget_in_session",
    "read_bot_memory",
    "remember_for_bot",
    "forget_for_bot",
}


def _http(service: LocalService, token: str, mode: str = "auto") -> McpClient:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return McpClient(streamable_http_client(f"{service.url}/mcp", http_client=http), mode=mode)


def _answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    structured: dict[str, Any] = result.structured_content
    # The text content says the same for clients that read only text.
    assert json.loads(result.content[0].text) == structured
    return structured


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_the_tools_over_streamable_http_act_as_the_caller(
    local_service: LocalService, mode: str
) -> None:
    _org, _user, token = local_service.user()
    _org2, _user2, other = local_service.user()

    async def scenario() -> None:
        async with _http(local_service, token, mode) as mcp:
            listed = {tool.name: tool for tool in (await mcp.list_tools()).tools}
            assert set(listed) == TOOLS
            for tool in listed.values():
                assert len(tool.description or "") > 40
                for name, field in tool.input_schema.get("properties", {}).items():
                    assert field.get("description"), f"{tool.name}.{name} has no description"
            assert listed["forget"].input_schema["required"] == ["id"]
            assert listed["remember"].input_schema["required"] == ["content"]

            saved = _answer(
                await mcp.call_tool(
                    "remember",
                    {
                        "content": "Prefers window seats.",
                        "category": "preference",
                        "importance": 0.9,
                    },
                )
            )
            _answer(
                await mcp.call_tool("remember", {"content": "Works at Acme.", "entity_id": "acme"})
            )
            recalled = _answer(await mcp.call_tool("recall", {"limit": 5}))["memories"]
            assert [m["content"] for m in recalled] == ["Prefers window seats.", "Works at Acme."]
            assert recalled[1]["entity"]["id"] == "acme"
            # With a query: by meaning where the deployment has it, else by importance (noted).
            by_query = _answer(await mcp.call_tool("recall", {"query": "seating", "limit": 5}))
            assert "Prefers window seats." in [m["content"] for m in by_query["memories"]]
            listed_prefs = _answer(await mcp.call_tool("list_memories", {"category": "preference"}))
            assert [m["id"] for m in listed_prefs["memories"]] == [saved["id"]]
            assert _answer(await mcp.call_tool("forget", {"id": saved["id"]})) == {
                "id": saved["id"],
                "deleted": True,
            }
            again = await mcp.call_tool("forget", {"id": saved["id"]})
            assert again.is_error
            assert "NotFound" in again.content[0].text
            refused = await mcp.call_tool("remember", {"content": ""})
            assert refused.is_error

        # The tools wrote the caller's own memories, as the REST API shows them to that token
        # and to no other.
        with Client(base_url=local_service.url, token=token) as rest:
            assert [m.content for m in rest.iter_agent_memories()] == ["Works at Acme."]
        with Client(base_url=local_service.url, token=other) as rest:
            assert list(rest.iter_agent_memories()) == []

    anyio.run(scenario)


def test_a_wrong_or_missing_token_is_refused_before_any_mcp_message(
    local_service: LocalService,
) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer amk_not_a_token"}, {"Authorization": "Basic x"}):
        answer = httpx.post(f"{local_service.url}/mcp", json=ping, headers=headers | auth)
        assert answer.status_code == 401
        assert answer.json()["error"]["_tag"] == "Unauthorized"
        assert answer.headers["www-authenticate"] == "Bearer"

    async def scenario() -> None:
        async with _http(local_service, "amk_not_a_token", "legacy") as mcp:
            await mcp.list_tools()

    with pytest.raises(Exception):  # the SDK's own error for a refused connection
        anyio.run(scenario)


def test_the_tools_over_stdio(local_service: LocalService) -> None:
    _org, _user, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as rest:
        rest.create_agent_memory("Speaks French.", "fact", importance=0.7)
    env = {
        **os.environ,
        "AGENT_MEMORY_URL": local_service.url,
        "AGENT_MEMORY_TOKEN": token,
        "PYTHONPATH": f"{ROOT / 'clients/python'}:{os.environ.get('PYTHONPATH', '')}",
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agent_memory_client.mcp"], env=env
    )

    async def scenario() -> None:
        async with McpClient(params) as mcp:
            assert {tool.name for tool in (await mcp.list_tools()).tools} == TOOLS
            found = _answer(await mcp.call_tool("list_memories", {}))["memories"]
            assert [m["content"] for m in found] == ["Speaks French."]
            _answer(await mcp.call_tool("remember", {"content": "Lives in Lyon."}))

    anyio.run(scenario)
    with Client(base_url=local_service.url, token=token) as rest:
        assert [m.content for m in rest.iter_agent_memories()] == [
            "Lives in Lyon.",
            "Speaks French.",
        ]


def test_a_throttled_token_gets_the_service_answer_and_its_retry_after() -> None:
    def service(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/me"
        body = {"error": {"_tag": "Throttled", "message": "over the limit", "path": []}}
        return httpx.Response(429, json=body, headers={"Retry-After": "7"})

    endpoint = McpEndpoint(Connector("http://svc", transport=httpx.MockTransport(service)))

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(endpoint), base_url="http://svc"
        ) as http:
            return await http.post("/mcp", json={}, headers={"Authorization": "Bearer t"})

    answer = anyio.run(scenario)
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "7"
    assert answer.json()["error"]["_tag"] == "Throttled"


def test_a_service_key_reaches_the_tools_as_the_person_it_names(
    local_service: LocalService,
) -> None:
    """A platform's key plus `Act-As` per MCP session: the memories are that person's; a
    person outside the key's organization is refused before any MCP message."""
    _org, key = local_service.platform("ana")

    def session(person: str) -> McpClient:
        headers = {"Authorization": f"Bearer {key}", "Act-As": person}
        http = httpx2.AsyncClient(headers=headers, timeout=30)
        return McpClient(streamable_http_client(f"{local_service.url}/mcp", http_client=http))

    async def scenario() -> None:
        async with session("ana") as mcp:
            _answer(await mcp.call_tool("remember", {"content": "Prefers aisle seats."}))

    anyio.run(scenario)
    refused = httpx.post(
        f"{local_service.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {key}", "Act-As": "nobody"},
    )
    assert refused.status_code == 404
    assert refused.json()["error"]["path"] == ["Act-As"]
    with Client(base_url=local_service.url, token=key, act_as="ana") as ana:
        assert [m.content for m in ana.iter_agent_memories()] == ["Prefers aisle seats."]
