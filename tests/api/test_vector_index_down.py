"""A vector index that fails (S3 Vectors throttling or unreachable) over HTTP, with the
learning workflow run inline: the turn's context goes on without the index, agent memories
are still saved and deleted (their vector waits or stays behind, a warning says so),
recall by meaning answers a clear 503, and removing the last message removes one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from agent_memory.ports.vectors import (
    Vector,
    VectorHit,
    VectorIndex,
    VectorIndexFailure,
    VectorRecord,
)
from tests.support.threads import (
    CHAT,
    World,
    ask,
    contents,
    recall_on,
    services,
    titler,
    world,
)

__all__ = ["services", "titler", "world"]


class Flaky:
    """The wired index (`ports.VectorIndex`), failing every call while `down`."""

    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        self.down = False

    def _up(self) -> None:
        if self.down:
            raise VectorIndexFailure("S3 Vectors answered ThrottlingException")

    def put(self, records: Sequence[VectorRecord]) -> None:
        self._up()
        self.index.put(records)

    def delete(self, keys: Sequence[str]) -> None:
        self._up()
        self.index.delete(keys)

    def query(self, vector: Vector, top_k: int, **scope: Any) -> list[VectorHit]:
        self._up()
        return self.index.query(vector, top_k, **scope)


@pytest.fixture
def adapters(adapters: Any, settings: Any) -> Any:
    from agent_memory.adapters.choice import embedder, vector_index

    built = adapters.embedder or embedder(settings)
    return replace(adapters, embedder=built, vectors=Flaky(vector_index(settings, built, None)))


@pytest.fixture
def index(adapters: Any) -> Flaky:
    flaky: Flaky = adapters.vectors
    return flaky


def test_the_turn_goes_on_without_the_index(
    world: World, index: Flaky, caplog: pytest.LogCaptureFixture
) -> None:
    recall_on(world, topK=1, messageRange={"before": 1, "after": 0}, last=2)
    past = world.thread()
    assert world.save(past, *CHAT).status_code == 200
    index.down = True
    # The context answers (200) with what needs no index; the log says what was skipped.
    ask(world, world.thread(), "What is the name of my cat?")
    assert "semantic recall's index skipped: S3 Vectors answered" in caplog.text
    index.down = False
    [group] = ask(world, world.thread(), "What is the name of my cat?")["recalled"]
    assert "I adopted a cat named Miso last spring." in contents(group)


def test_removing_the_last_message_removes_one(
    world: World, index: Flaky, caplog: pytest.LogCaptureFixture
) -> None:
    recall_on(world, topK=1, messageRange=0, last=2)
    thread = world.thread()
    assert world.save(thread, *CHAT[:2]).status_code == 200
    index.down = True
    headers = world.owner.headers
    removed = world.api.client.delete(f"/v1/threads/{thread}/messages/last", headers=headers)
    assert removed.status_code == 200, removed.text
    left = world.get(f"/v1/threads/{thread}/messages").json()["messages"]
    assert [m["content"] for m in left] == ["My sister Ana lives in Lisbon."]
    assert "a removed message's vector kept" in caplog.text


def test_agent_memories_are_kept_and_recall_says_why(
    world: World, index: Flaky, caplog: pytest.LogCaptureFixture
) -> None:
    client, headers = world.api.client, world.owner.headers
    memory = {"category": "fact", "content": "The cat is called Miso."}
    kept = client.post("/v1/agent_memories", json=memory, headers=headers).json()["id"]
    index.down = True
    created = client.post(
        "/v1/agent_memories", json=memory | {"content": "Miso is a cat."}, headers=headers
    )
    assert created.status_code == 201, created.text
    assert "memory saved without its vector" in caplog.text
    memory_id = created.json()["id"]
    assert client.get(f"/v1/agent_memories/{memory_id}", headers=headers).status_code == 200
    found = client.post(
        "/v1/agent_memories/recall", json={"limit": 5, "query": "cat"}, headers=headers
    )
    assert found.status_code == 503, found.text
    assert found.json()["error"]["_tag"] == "Unavailable"
    assert "S3 Vectors" in found.json()["error"]["message"]
    # Deleted while its vector cannot be: the memory is gone all the same.
    deleted = client.delete(f"/v1/agent_memories/{kept}", headers=headers)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"id": kept, "object": "agent_memory", "deleted": True}
    assert "a deleted memory's vector kept" in caplog.text
    assert client.get(f"/v1/agent_memories/{kept}", headers=headers).status_code == 404
    index.down = False
    # Back up: a memory saved now is found by meaning; the deleted one, whose vector
    # stayed in the index, never is.
    again = client.post(
        "/v1/agent_memories", json=memory | {"content": "My cat Miso sleeps."}, headers=headers
    )
    found = client.post(
        "/v1/agent_memories/recall", json={"limit": 5, "query": "cat"}, headers=headers
    )
    assert found.status_code == 200, found.text
    ids = [m["id"] for m in found.json()["data"]]
    assert again.json()["id"] in ids
    assert kept not in ids
