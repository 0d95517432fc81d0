"""The MCP tools beyond agent memories, with the `mcp` package's own client at the local
service's /mcp: a thread's context, working memory and recall, session memory and bot memory,
each acting as the caller, and refusals as plain tool errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client as McpClient

from agent_memory_client import Client
from agent_memory_client.mcp import Connector, build_server
from tests.clients.conftest import LocalService
from tests.clients.test_mcp import _answer, _http


@pytest.fixture(scope="module")
def person(local_service: LocalService) -> Iterator[tuple[str, Client]]:
    _org, _user, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as client:
        yield token, client


def _error(result: Any) -> str:
    assert result.is_error, result.structured_content
    text: str = result.content[0].text
    return text


def test_thread_tools(local_service: LocalService, person: tuple[str, Client]) -> None:
    token, rest = person
    agent = rest.create_agent("mcp-threads").id
    options = {"workingMemory": {"enabled": True, "scope": "thread"}, "semanticRecall": True}
    rest.patch_draft(agent, {"options": options})
    rest.activate(agent, rest.publish(agent).number)
    thread = rest.create_thread(agent).id
    rest.save_messages(thread, [{"role": "user", "content": "My cat is called Miso."}])

    async def scenario() -> None:
        async with _http(local_service, token) as mcp:
            context = _answer(
                await mcp.call_tool("thread_context", {"thread_id": thread, "message": "Hi"})
            )
            assert [m["content"] for m in context["messages"]] == ["My cat is called Miso."]
            assert "system" in context
            updated = _answer(
                await mcp.call_tool(
                    "update_working_memory",
                    {"thread_id": thread, "content": "# User\n- cat: Miso"},
                )
            )
            assert updated["content"] == "# User\n- cat: Miso"
            read = _answer(await mcp.call_tool("read_working_memory", {"thread_id": thread}))
            assert read == updated
            # Recall is off for this agent: the service's refusal, as a tool error.
            recalled = await mcp.call_tool("recall_messages", {"thread_id": thread, "query": "cat"})
            if not recalled.is_error:
                assert isinstance(_answer(recalled)["messages"], list)
            # Another user's thread (or none) is a NotFound tool error.
            missing = await mcp.call_tool("read_working_memory", {"thread_id": "thr_nope"})
            assert "NotFound" in _error(missing)

    anyio.run(scenario)
    assert rest.get_working_memory(thread).content == "# User\n- cat: Miso"


def test_session_and_bot_memory_tools(
    local_service: LocalService, person: tuple[str, Client]
) -> None:
    token, rest = person
    session = rest.create_session(rest.create_agent("mcp-sessions").id, model=None).id
    bot = rest.create_bot("mcp-bot").id

    async def scenario() -> None:
        async with _http(local_service, token) as mcp:
            remembered = _answer(
                await mcp.call_tool(
                    "remember_in_session",
                    {"session_id": session, "key": "budget", "content": "1500 EUR."},
                )
            )
            assert remembered["key"] == "budget"
            memory = _answer(await mcp.call_tool("read_session_memory", {"session_id": session}))
            assert memory["entries"]["budget"]["content"] == "1500 EUR."
            _answer(
                await mcp.call_tool("forget_in_session", {"session_id": session, "key": "budget"})
            )
            again = await mcp.call_tool(
                "forget_in_session", {"session_id": session, "key": "budget"}
            )
            assert "NotFound" in _error(again)

            entry = _answer(
                await mcp.call_tool(
                    "remember_for_bot",
                    {"bot_id": bot, "content": "Refunds take 5 days.", "tags": ["billing"]},
                )
            )["entry"]
            found = _answer(await mcp.call_tool("read_bot_memory", {"bot_id": bot}))
            assert [e["content"] for e in found["entries"]] == ["Refunds take 5 days."]
            _answer(await mcp.call_tool("forget_for_bot", {"bot_id": bot, "entry_id": entry["id"]}))

    anyio.run(scenario)
    assert rest.get_session_memory(session).entries["budget"].status == "retracted"
    assert [e.status for e in rest.get_bot_memory(bot).entries] == ["retracted"]


def test_another_users_objects_and_a_refused_token_are_plain_tool_errors(
    local_service: LocalService, person: tuple[str, Client]
) -> None:
    _token, rest = person
    bot = rest.create_bot("private-bot").id
    _org, _user, stranger = local_service.user()

    async def scenario() -> None:
        async with _http(local_service, stranger) as mcp:
            refused = await mcp.call_tool(
                "remember_for_bot", {"bot_id": bot, "content": "Injected."}
            )
            assert "NotFound" in _error(refused)
        # stdio's token is the environment's: a refused one answers each call as a tool
        # error (the in-memory transport stands in for stdio's pipes).
        server = build_server(Connector(local_service.url, token="amk_not_a_token"))
        async with McpClient(server) as mcp:
            answer = await mcp.call_tool("read_bot_memory", {"bot_id": bot})
            assert "Unauthorized: unknown or revoked token" in _error(answer)

    anyio.run(scenario)
    assert rest.get_bot_memory(bot).entries == []
