"""AgentMemoryStore with the real `strands-agents` package against the local service: a later
agent's MemoryManager finds what an earlier agent run added, a retried batch is saved once,
notes, and people of two organizations kept apart. The model is a scripted one: nothing
leaves the machine."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from strands import Agent
from strands.memory import MemoryManager
from strands.memory.types import AddMessagesContext
from strands.models import Model

from agent_memory_client import AsyncClient, Client
from agent_memory_client.strands import AgentMemoryStore
from tests.clients.conftest import LocalService, run_readme_example


class ScriptedModel(Model):
    """Answers each call with the next scripted text; keeps what it was shown."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.shown: list[str] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        self.shown.append(repr(messages) + repr(args) + repr(kwargs.get("system_prompt")))
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": self.answers.pop(0)}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


@pytest.fixture(scope="module")
def platforms(local_service: LocalService) -> tuple[str, str]:
    """Two organizations' service keys (their people are added by the store)."""
    _org, key = local_service.platform()
    _org2, other = local_service.platform()
    return key, other


def _agent(url: str, key: str, user: str, model: ScriptedModel) -> tuple[Agent, MemoryManager]:
    store = AgentMemoryStore(AsyncClient(url, key), name="assistant", user_id=user)
    manager = MemoryManager(stores=[store])
    return Agent(model=model, memory_manager=manager, callback_handler=None), manager


def test_a_later_agent_finds_what_an_earlier_run_added(
    local_service: LocalService, platforms: tuple[str, str]
) -> None:
    key, other_key = platforms
    url = local_service.url
    first, _manager = _agent(url, key, "ana", ScriptedModel("Noted."))
    assert str(first("I am allergic to peanuts.")).strip() == "Noted."

    # A new agent (a new process, as far as the store knows) searches and is given it.
    model = ScriptedModel("You are allergic to peanuts.")
    later, manager = _agent(url, key, "ana", model)
    found = asyncio.run(manager.search("allergic"))
    assert "I am allergic to peanuts." in [entry.content for entry in found]
    assert found[0].store_name == "assistant"
    later("What am I allergic to?")
    assert "I am allergic to peanuts." in model.shown[0], "the memory was injected"

    # Another person of the platform, and ana of another organization, find nothing.
    _ben, bens = _agent(url, key, "ben", ScriptedModel())
    assert asyncio.run(bens.search("allergic")) == []
    _elsewhere, theirs = _agent(url, other_key, "ana", ScriptedModel())
    assert asyncio.run(theirs.search("allergic")) == []
    # The run is one thread of ana's, its messages once each.
    with Client(base_url=url, token=key, act_as="ana") as ana:
        [agent] = [a for a in ana.iter_agents() if a.name == "assistant"]
        saved = [
            m.content for t in ana.iter_threads(agent_id=agent.id) for m in ana.list_messages(t.id)
        ]
        assert saved.count("I am allergic to peanuts.") == 1
        assert saved.count("Noted.") == 1


def test_retried_batches_notes_and_a_users_token(local_service: LocalService) -> None:
    _org, user_id, token = local_service.user()

    def said(text: str) -> Any:
        return {"role": "user", "content": [{"text": text}]}

    async def scenario() -> None:
        async with AsyncClient(local_service.url, token) as client:
            store = AgentMemoryStore(client, name="notes-app")
            batch = [said("I fly from Lyon."), said("I like aisle seats.")]
            context = AddMessagesContext(sequence_numbers=[0, 1])
            first = await store.add_messages(batch, context)
            retried = await store.add_messages(batch, context)
            assert (first["saved"], retried["saved"]) == (2, 0)
            assert retried["threadId"] == first["threadId"]
            # Numbers from 0 again with other messages: a new run, a new thread.
            second = await store.add_messages([said("I moved to Paris.")], AddMessagesContext([0]))
            assert second["saved"] == 1
            assert second["threadId"] != first["threadId"]
            await store.add("Prefers vegetarian meals.", {"source": "form"})
            [note] = await store.search("vegetarian meals")
            assert note.content == "Prefers vegetarian meals."
            assert (note.metadata or {}).get("metadata") == {"source": "form"}
            found = await store.search("Lyon", {"max_search_results": 1})
            assert [e.content for e in found] == ["I fly from Lyon."]
            with pytest.raises(ValueError, match="not this token's user"):
                await AgentMemoryStore(client, user_id="someone-else").search("x")

    asyncio.run(scenario())
    with Client(base_url=local_service.url, token=token) as me:
        assert me.me().id == user_id


def test_the_readme_example_runs(
    local_service: LocalService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_readme_example("## Strands", local_service, monkeypatch)
    assert capsys.readouterr().out.strip() == "['I am allergic to peanuts.']"
