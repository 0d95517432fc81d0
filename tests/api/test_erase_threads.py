"""Deleting a thread, or an agent with everyone's threads of it, takes their vectors, over
HTTP with the learning workflow inline (the recall step embeds what a thread saves)."""

from __future__ import annotations

from typing import Any

from agent_memory.domain.recall import vector_key
from tests.support.embedders import TinyEmbedder, adapters
from tests.support.requests import agent, get
from tests.support.threads import World, services, titler, user, world

__all__ = ["adapters", "services", "titler", "world"]


def test_deleting_an_agent_takes_everyones_threads_and_their_vectors(
    world: World, services: Any, adapters: Any
) -> None:
    owner, member = world.owner, world.member
    # lastMessages 1: a batch of one message, so each save is indexed by its own run.
    world.activate({"lastMessages": 1, "semanticRecall": True, "generateTitle": False})
    threads = [world.thread(), world.thread(member)]
    for thread_id, who in zip(threads, (owner, member), strict=True):
        assert world.save(thread_id, user("Ana lives in Lisbon."), user=who).status_code == 200
    other = agent(world.api, member, "other")
    answer = world.api.client.post("/v1/threads", json={"agentId": other}, headers=member.headers)
    kept = str(answer.json()["thread"]["id"])
    index = services.erasure.vectors
    probe = TinyEmbedder().embed(["x"])[0]
    before = {h.key for h in index.query(probe, 10, org=member.org_id, owner=member.id)}
    assert vector_key(threads[1], 0) in before  # the recall step embedded it
    answer = world.api.client.delete(f"/v1/agents/{world.agent}", headers=owner.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["threads"] == 2
    get(world.api, owner, f"/v1/threads/{threads[0]}", 404)
    get(world.api, member, f"/v1/threads/{threads[1]}/messages", 404)
    assert [t["id"] for t in get(world.api, member, "/v1/threads")["threads"]] == [kept]
    for who in (owner, member):
        assert index.query(probe, 10, org=who.org_id, owner=who.id) == []
    # Nor does semantic recall's idle flush keep their ids.
    from agent_memory.persistence.recall_pending import PendingRecalls

    pending = {row.thread_id for row in PendingRecalls(adapters.store).rows()}
    assert not pending & set(threads)
    # A client following the feed learns it went.
    events = get(world.api, member, "/v1/events?limit=100")["events"]
    gone = [e["object"]["threadId"] for e in events if e["type"] == "thread.deleted"]
    assert gone == [threads[1]]


def test_deleting_a_thread_takes_its_messages_and_vectors_and_keeps_the_rest(
    world: World, services: Any
) -> None:
    owner = world.owner
    world.activate(
        {
            "lastMessages": 1,
            "semanticRecall": True,
            "generateTitle": False,
            "workingMemory": {"enabled": True, "scope": "resource"},
        }
    )
    gone, kept = world.thread(), world.thread()
    for thread_id in (gone, kept):
        assert world.save(thread_id, user("Ana lives in Lisbon.")).status_code == 200
    notes = {"content": "Prefers mornings"}
    put = world.api.client.put(
        f"/v1/threads/{gone}/working-memory", json=notes, headers=owner.headers
    )
    assert put.status_code == 200, put.text
    index = services.erasure.vectors
    probe = TinyEmbedder().embed(["x"])[0]
    assert vector_key(gone, 0) in {
        h.key for h in index.query(probe, 10, org=owner.org_id, owner=owner.id)
    }
    answer = world.api.client.delete(f"/v1/threads/{gone}", headers=owner.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"id": gone, "object": "thread", "deleted": True, "messages": 1}
    get(world.api, owner, f"/v1/threads/{gone}", 404)
    again = world.api.client.delete(f"/v1/threads/{gone}", headers=owner.headers)
    assert again.status_code == 404
    assert [t["id"] for t in get(world.api, owner, "/v1/threads")["threads"]] == [kept]
    left = {h.key for h in index.query(probe, 10, org=owner.org_id, owner=owner.id)}
    assert vector_key(gone, 0) not in left
    assert vector_key(kept, 0) in left
    # The person's working memory with the agent serves their other threads: it stays.
    assert (
        get(world.api, owner, f"/v1/threads/{kept}/working-memory")["content"] == "Prefers mornings"
    )
    events = get(world.api, owner, "/v1/events?limit=100")["events"]
    assert [e["object"]["threadId"] for e in events if e["type"] == "thread.deleted"] == [gone]
