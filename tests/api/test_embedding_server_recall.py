"""Semantic recall against an OpenAI-compatible embedding server (an Ollama or vLLM user's
setup: `EMBEDDING_MODEL=openai/<model>`, `OPENAI_BASE_URL` at the server, no size given),
over HTTP with the learning workflow run inline: the model's size is learned from its first
answer, a size named in the model wins, and a server that cannot be reached makes recall
degrade (the turn's context) or answer a clear 503 (agent memories by `query`), while the
background run that could not embed says why."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.embedding_server import EmbeddingServer, embedding_server
from tests.support.threads import (
    CHAT,
    World,
    ask,
    contents,
    recall_on,
    services,
    titler,
    user,
    world,
)

__all__ = ["services", "titler", "world"]

MODEL = "nomic-embed-text"


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with embedding_server(dimensions=48) as running:
        yield running


@pytest.fixture
def named() -> str:
    """EMBEDDING_MODEL as the deployment names it."""
    return f"openai/{MODEL}"


@pytest.fixture
def settings(settings: Any, server: EmbeddingServer, named: str) -> Any:
    return settings.model_copy(
        update={"embedding_model": named, "openai_base_url": server.url, "openai_api_key": ""}
    )


def embedders(world: World) -> list[dict[str, Any]]:
    answer = world.get("/v1/capabilities")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["embedders"])


def test_recall_works_with_a_model_of_unknown_size(world: World, server: EmbeddingServer) -> None:
    assert embedders(world) == [{"name": f"openai/{MODEL}", "dimensions": None}]
    recall_on(world, topK=1, messageRange=0, last=2)
    past = world.thread()
    assert world.save(past, *CHAT).status_code == 200
    context = ask(world, world.thread(), "What is the name of my cat?")
    [group] = context["recalled"]
    assert group["threadId"] == past
    assert contents(group) == ["I adopted a cat named Miso last spring."]
    assert set(server.models) == {MODEL}
    assert set(server.asked) == {None}
    assert embedders(world) == [{"name": f"openai/{MODEL}", "dimensions": 48}]


class TestSized:
    @pytest.fixture
    def named(self) -> str:
        return f"openai/{MODEL}?dimensions=16"

    def test_a_size_named_in_the_model_wins(self, world: World, server: EmbeddingServer) -> None:
        assert embedders(world) == [{"name": f"openai/{MODEL}", "dimensions": 16}]
        recall_on(world, topK=1, messageRange=1, last=2)
        world.save(world.thread(), *CHAT)
        context = ask(world, world.thread(), "Where does my sister live?")
        # The fake server's vectors carry no meaning: the lexical score finds the pair (the
        # answer is read with the message before it), the window shows both.
        [group] = context["recalled"]
        assert "My sister Ana lives in Lisbon." in contents(group)
        assert set(server.asked) == {16}


def test_a_server_that_cannot_be_reached(world: World, server: EmbeddingServer) -> None:
    recall_on(world, topK=1, messageRange=0, last=1)
    server.down = True
    thread = world.thread()
    assert world.save(thread, user("I adopted a cat named Miso last spring.")).status_code == 200
    # The run that could not embed says why; the message waits for the next run.
    runs = world.get(f"/v1/threads/{thread}/learning").json()["executions"]
    [failed] = [r for r in runs if r["kind"] == "thread-recall"]
    assert failed["status"] == "failed"
    assert "503" in failed["error"]["message"]
    # The turn goes on without recall.
    assert ask(world, world.thread(), "What is my cat called?")["recalled"] == []
    # Agent memories by meaning have nothing to answer with: a 503 naming the model.
    memory = {"category": "fact", "content": "The cat is called Miso."}
    created = world.api.client.post("/v1/agent_memories", json=memory, headers=world.owner.headers)
    assert created.status_code == 201, created.text
    found = world.api.client.post(
        "/v1/agent_memories/recall",
        json={"limit": 5, "query": "cat"},
        headers=world.owner.headers,
    )
    assert found.status_code == 503, found.text
    error = found.json()["error"]
    assert error["_tag"] == "Unavailable"
    assert error["message"].startswith(f"the embedding model openai/{MODEL} could not answer")
    # Back up: the next save's run embeds what waited.
    server.down = False
    world.save(thread, user("The weather was grey today."))
    recalled = ask(world, world.thread(), "Which cat did I adopt last spring?")["recalled"]
    assert [contents(g) for g in recalled] == [["I adopted a cat named Miso last spring."]]
