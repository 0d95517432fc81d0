"""AgentMemorySession with the real `openai-agents` package: the scenarios of the SDK's own
session tests (tests/test_session.py there), on threads of the local service. The model is a
scripted one: no model is called."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, TResponseInputItem, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import Session
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseOutputMessage,
    ResponseOutputText,
)

from agent_memory_client import AsyncClient, Client, NotFound, ValidationError
from agent_memory_client.openai_agents import AgentMemorySession
from tests.clients.conftest import LocalService

# No trace export: nothing in these tests leaves the machine.
set_tracing_disabled(True)


class ScriptedModel(Model):
    """Answers each turn with the next scripted text; keeps what it was given."""

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.inputs: list[Any] = []

    def _output(self, given: Any) -> list[Any]:
        self.inputs.append(given)
        text = self.answers.pop(0)
        part = ResponseOutputText(type="output_text", text=text, annotations=[])
        return [
            ResponseOutputMessage(
                id=f"msg-{len(self.inputs)}",
                type="message",
                role="assistant",
                status="completed",
                content=[part],
            )
        ]

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return ModelResponse(
            output=self._output(kwargs["input"] if "input" in kwargs else args[1]),
            usage=Usage(),
            response_id=None,
        )

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        output = self._output(kwargs["input"] if "input" in kwargs else args[1])
        response = Response(
            id="resp-1",
            created_at=0,
            model="scripted",
            object="response",
            output=output,
            tool_choice="none",
            tools=[],
            parallel_tool_calls=False,
        )
        yield ResponseCreatedEvent(type="response.created", response=response, sequence_number=0)
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=1
        )


@pytest.fixture(scope="module")
def rest(local_service: LocalService) -> Any:
    _org, _user, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as client:
        yield client


@pytest.fixture(scope="module")
def agent_id(rest: Client) -> str:
    return rest.create_agent("sdk-sessions").id


def _session(rest: Client, agent_id: str) -> AgentMemorySession:
    return AgentMemorySession(rest.create_thread(agent_id).id, client=rest)


async def _run(method: str, agent: Agent[Any], text: Any, session: Session) -> Any:
    if method == "run":
        return await Runner.run(agent, text, session=session)
    result = Runner.run_streamed(agent, text, session=session)
    async for _event in result.stream_events():
        pass
    return result


def test_it_is_an_sdk_session(rest: Client, agent_id: str) -> None:
    assert isinstance(_session(rest, agent_id), Session)


@pytest.mark.parametrize("method", ["run", "run_streamed"])
def test_a_second_turn_sees_the_first(rest: Client, agent_id: str, method: str) -> None:
    session = _session(rest, agent_id)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)

    async def scenario() -> None:
        model.answers = ["San Francisco", "California"]
        first = await _run(method, agent, "What city is the Golden Gate Bridge in?", session)
        assert first.final_output == "San Francisco"
        second = await _run(method, agent, "What state is it in?", session)
        assert second.final_output == "California"
        # The model got the whole conversation, the SDK's items as it had saved them.
        contents = [item.get("content") for item in model.inputs[-1]]
        assert contents[0] == "What city is the Golden Gate Bridge in?"
        assert contents[-1] == "What state is it in?"
        assert len(contents) == 3

    asyncio.run(scenario())
    # The thread holds the conversation for every other client too.
    assert [m.content for m in rest.list_messages(session.session_id)] == [
        "What city is the Golden Gate Bridge in?",
        "San Francisco",
        "What state is it in?",
        "California",
    ]


def test_different_sessions_keep_separate_histories(rest: Client, agent_id: str) -> None:
    cats, dogs = _session(rest, agent_id), _session(rest, agent_id)
    model = ScriptedModel()
    agent = Agent(name="test", model=model)

    async def scenario() -> None:
        model.answers = ["I like cats", "I like dogs", "Yes, you mentioned cats"]
        await Runner.run(agent, "I like cats", session=cats)
        await Runner.run(agent, "I like dogs", session=dogs)
        third = await Runner.run(agent, "What did I say I like?", session=cats)
        assert third.final_output == "Yes, you mentioned cats"
        seen = [item.get("content") for item in model.inputs[-1]]
        assert "I like cats" in seen
        assert "I like dogs" not in seen

    asyncio.run(scenario())


def test_add_get_clear_and_items_come_back_as_sent(rest: Client, agent_id: str) -> None:
    session = _session(rest, agent_id)
    call: TResponseInputItem = {
        "type": "function_call",
        "call_id": "call_1",
        "name": "weather",
        "arguments": '{"city": "Lyon"}',
    }
    output: TResponseInputItem = {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "Sunny, 21 C",
    }
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
        call,
        output,
    ]

    async def scenario() -> None:
        await session.add_items(items)
        assert await session.get_items() == items
        await session.clear_session()
        assert await session.get_items() == []
        # An item the service cannot keep as sent is refused, not cut.
        with pytest.raises(ValidationError) as refused:
            await session.add_items([{"role": "user", "content": "x" * 40_000}])
        assert refused.value.path[-1] == "item"

    asyncio.run(scenario())
    # The thread itself stays (clear_session removes its messages only).
    assert rest.get_thread(session.session_id).id == session.session_id


def test_pop_item(rest: Client, agent_id: str) -> None:
    session = _session(rest, agent_id)
    other = _session(rest, agent_id)

    async def scenario() -> None:
        assert await session.pop_item() is None
        await session.add_items(
            [
                {"role": "user", "content": "Hello"},
                {"role": "assistant", "content": "Hi there!"},
                {"role": "user", "content": "How are you?"},
            ]
        )
        await other.add_items([{"role": "user", "content": "Other session"}])
        assert await session.pop_item() == {"role": "user", "content": "How are you?"}
        assert [i.get("content") for i in await session.get_items()] == ["Hello", "Hi there!"]
        assert (await session.pop_item() or {}).get("content") == "Hi there!"
        assert (await session.pop_item() or {}).get("content") == "Hello"
        assert await session.pop_item() is None
        assert await session.get_items() == []
        assert await other.get_items() == [{"role": "user", "content": "Other session"}]

    asyncio.run(scenario())


def test_get_items_with_limit(local_service: LocalService, rest: Client, agent_id: str) -> None:
    thread = rest.create_thread(agent_id).id
    items: list[TResponseInputItem] = []
    for n in range(1, 4):
        items.append({"role": "user", "content": f"Message {n}"})
        items.append({"role": "assistant", "content": f"Response {n}"})

    async def scenario() -> None:
        # The same session over the AsyncClient.
        async with AsyncClient(base_url=rest.base_url, token=_token(rest)) as client:
            session = AgentMemorySession(thread, client=client)
            await session.add_items(items)
            assert await session.get_items() == items
            assert await session.get_items(limit=2) == items[-2:]
            assert await session.get_items(limit=4) == items[-4:]
            assert await session.get_items(limit=10) == items
            assert await session.get_items(limit=0) == []

    asyncio.run(scenario())


def test_a_session_input_callback_prepares_the_input(rest: Client, agent_id: str) -> None:
    session = _session(rest, agent_id)
    model = ScriptedModel()
    model.answers = ["I'm a scripted model"]
    agent = Agent(name="test", model=model)

    def only_user_messages(history: list[Any], new_input: list[Any]) -> list[Any]:
        return [item for item in history if item.get("role") == "user"] + new_input

    async def scenario() -> None:
        await session.add_items(
            [
                {"role": "user", "content": "Hello there."},
                {"role": "assistant", "content": "Hi, I'm here to assist you."},
            ]
        )
        config = RunConfig(session_input_callback=only_user_messages)
        new_turn = [{"role": "user", "content": "What is your name?"}]
        result = await Runner.run(agent, new_turn, session=session, run_config=config)
        assert result.final_output == "I'm a scripted model"
        assert [i.get("content") for i in model.inputs[-1]] == [
            "Hello there.",
            "What is your name?",
        ]
        # The history stays whole; the new turn is appended to it, the model's answer as the
        # SDK's own output item.
        history = await session.get_items()
        assert [i.get("content") for i in history[:3]] == [
            "Hello there.",
            "Hi, I'm here to assist you.",
            "What is your name?",
        ]
        assert history[3]["content"][0]["text"] == "I'm a scripted model"  # type: ignore[index]

    asyncio.run(scenario())
    # The service reads the answer's words (titles, recall, the observer).
    assert rest.list_messages(session.session_id)[-1].content == "I'm a scripted model"


def _token(client: Client) -> str:
    return str(client._http.headers["Authorization"]).removeprefix("Bearer ")


def test_a_platform_keeps_each_persons_conversation_through_its_service_key(
    local_service: LocalService,
) -> None:
    """One service key; the SDK session of each person is on that person's own thread."""
    _org, key = local_service.platform("ana", "ben")
    with Client(base_url=local_service.url, token=key) as platform:
        ana, ben = platform.acting_for("ana"), platform.acting_for("ben")
        agent = ana.create_agent("Helper").id
        session = AgentMemorySession(ana.create_thread(agent).id, client=ana)

        async def scenario() -> list[Any]:
            await session.add_items([{"role": "user", "content": "I am Ana."}])
            return await session.get_items()

        assert [i["content"] for i in asyncio.run(scenario())] == ["I am Ana."]
        assert ana.get_thread(session.session_id).resource_id == "ana"
        with pytest.raises(NotFound):
            ben.list_messages(session.session_id)
