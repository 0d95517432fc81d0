"""AgentMemoryService with the real `google-adk` package against the local service: ADK's
Runner and its `load_memory` tool recalling an earlier session, sessions added twice saved
once, the optional writes and deletes, and people of two organizations kept apart. The model
is a scripted one: nothing leaves the machine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.load_memory_tool import load_memory_tool as load_memory
from google.genai import types
from pydantic import Field

from agent_memory_client import AsyncClient, Client
from agent_memory_client.adk import AgentMemoryService
from tests.clients.conftest import LocalService, run_readme_example

APP = "travel"


class ScriptedLlm(BaseLlm):
    """Asked a question, calls `load_memory` with it; given the tool's answer, says the
    memories it got; told something, answers "Noted."."""

    model: str = "scripted"
    seen: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.seen.append(llm_request)
        last = llm_request.contents[-1].parts or []
        answered = [p.function_response for p in last if p.function_response]
        if answered:
            # The tool's answer as ADK hands it to a model: `LoadMemoryResponse` as `result`.
            loaded = (answered[0].response or {})["result"]
            texts = [p.text for m in loaded.memories for p in m.content.parts or [] if p.text]
            yield LlmResponse(content=_model_says("Remembered: " + " | ".join(texts)))
            return
        text = "".join(p.text or "" for p in last)
        if text.endswith("?"):
            call = types.FunctionCall(name="load_memory", args={"query": text})
            yield LlmResponse(
                content=types.Content(role="model", parts=[types.Part(function_call=call)])
            )
            return
        yield LlmResponse(content=_model_says("Noted."))


def _model_says(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


@pytest.fixture(scope="module")
def platforms(local_service: LocalService) -> tuple[str, str]:
    """Two organizations' service keys (their people are added by the adapter)."""
    _org, key = local_service.platform()
    _org2, other = local_service.platform()
    return key, other


async def _say(runner: Runner, sessions: InMemorySessionService, user: str, text: str) -> Any:
    session = await sessions.create_session(app_name=APP, user_id=user)
    final = ""
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for event in runner.run_async(user_id=user, session_id=session.id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(p.text or "" for p in event.content.parts)
    done = await sessions.get_session(app_name=APP, user_id=user, session_id=session.id)
    return done, final


def test_the_runners_load_memory_recalls_an_earlier_session(
    local_service: LocalService, platforms: tuple[str, str]
) -> None:
    key, other_key = platforms

    async def scenario() -> None:
        async with AsyncClient(local_service.url, key) as client:
            memory = AgentMemoryService(client)
            sessions = InMemorySessionService()
            agent = LlmAgent(name="assistant", model=ScriptedLlm(), tools=[load_memory])
            runner = Runner(
                agent=agent, app_name=APP, session_service=sessions, memory_service=memory
            )
            first, said = await _say(runner, sessions, "ana", "I am allergic to peanuts.")
            assert said == "Noted."
            await memory.add_session_to_memory(first)
            await memory.add_session_to_memory(first)  # again: nothing saved twice
            _later, answer = await _say(runner, sessions, "ana", "What am I allergic to?")
            assert "I am allergic to peanuts." in answer
            # Another person of the platform recalls nothing of ana's.
            _theirs, nothing = await _say(runner, sessions, "ben", "What am I allergic to?")
            assert "peanuts" not in nothing
            assert (
                await memory.search_memory(app_name=APP, user_id="ben", query="peanuts")
            ).memories == []
        # Another organization's person of the same id recalls nothing either.
        async with AsyncClient(local_service.url, other_key) as client:
            found = await AgentMemoryService(client).search_memory(
                app_name=APP, user_id="ana", query="peanuts"
            )
            assert found.memories == []

    asyncio.run(scenario())
    # The session is one thread of ana's, its two events saved once, as ana's own.
    with Client(base_url=local_service.url, token=key, act_as="ana") as ana:
        [agent] = [a for a in ana.iter_agents() if a.name == APP]
        threads = list(ana.iter_threads(agent_id=agent.id))
        saved = [m.content for t in threads for m in ana.list_messages(t.id)]
        assert saved.count("I am allergic to peanuts.") == 1
        assert saved.count("Noted.") == 1


def test_events_memories_and_deletes(local_service: LocalService) -> None:
    _org, _user, token = local_service.user()

    async def scenario() -> None:
        async with AsyncClient(local_service.url, token) as client:
            me = (await client.me()).id or ""
            memory = AgentMemoryService(client)
            said = Event(
                author="user",
                content=types.Content(role="user", parts=[types.Part(text="I fly from Lyon.")]),
            )
            for _ in range(2):
                await memory.add_events_to_memory(
                    app_name=APP, user_id=me, events=[said], session_id="s1"
                )
            entry = MemoryEntry(
                content=types.Content(
                    role="user", parts=[types.Part(text="Window seats, always.")]
                ),
                author="user",
            )
            await memory.add_memory(app_name=APP, user_id=me, memories=[entry])
            found = await memory.search_memory(app_name=APP, user_id=me, query="Lyon")
            texts = [m.content.parts[0].text for m in found.memories if m.content.parts]
            assert texts == ["I fly from Lyon."]
            assert found.memories[0].author == "user"
            seats = await memory.search_memory(app_name=APP, user_id=me, query="window seats")
            [seat] = seats.memories
            await memory.delete_memory(app_name=APP, user_id=me, memory_id=seat.id)
            gone = await memory.search_memory(app_name=APP, user_id=me, query="window seats")
            assert gone.memories == []
            # A user's token serves that user alone.
            with pytest.raises(ValueError, match="not this token's user"):
                await memory.search_memory(app_name=APP, user_id="someone-else", query="x")

    asyncio.run(scenario())


def test_the_readme_example_runs(
    local_service: LocalService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_readme_example("## Google ADK", local_service, monkeypatch)
    assert capsys.readouterr().out.strip() == "['I am allergic to peanuts.']"
