"""A world semantic recall answers by meaning (seeds 003 and 004), for a move's round trip
(tests/integration/test_move_deployment.py): a thread's past messages and agent memories,
the ids recall answers, and the vectors a one-machine deployment keeps."""

from __future__ import annotations

import json
from pathlib import Path

from agent_memory.wiring import VECTORS_FILE
from tests.conftest import Api, User
from tests.support.requests import agent, post
from tests.support.threads import World, assistant, user

# Each question's answer is neither the newest message nor the most important memory.
SAID = ("My sister lives in Porto.", "I adopted a cat named Miso.", "I love spicy ramen.")
ASKED = "What is the name of my pet?"
NOTES = (("Ana plays the cello on Sundays.", 0.1), ("Ana's desk is by the window.", 0.9))
QUERY = "Which musical instrument does Ana play?"


def remembers_by_meaning(api: Api, ana: User, ben: User) -> str:
    """A thread of an agent with semantic recall on (its messages indexed in batches of 2 by
    the background), and agent memories about Ana (embedded when written). Its id."""
    world = World(api, ana, ben, agent(api, ana, name="recaller"))
    world.activate({"lastMessages": 2, "semanticRecall": {"topK": 1, "messageRange": 0}})
    thread_id = world.thread()
    for said in SAID:
        assert world.save(thread_id, user(said), assistant("Noted.")).status_code == 200
    for content, importance in NOTES:
        about = {"type": "actor", "id": ana.id}
        body = {"category": "fact", "content": content, "entity": about, "importance": importance}
        post(api, ben, "/v1/agent_memories", body)
    return thread_id


def recalled(api: Api, ana: User, thread_id: str) -> dict[str, list[str]]:
    """The ids semantic recall answers Ana: a thread's context and a recall of memories."""
    asked = {"message": {"role": "user", "content": ASKED}}
    context = post(api, ana, f"/v1/threads/{thread_id}/context", asked)
    memories = post(api, ana, "/v1/agent_memories/recall", {"query": QUERY, "limit": 3})["data"]
    return {
        "messages": [m["id"] for w in context["recalled"] for m in w["messages"]],
        "memories": [m["id"] for m in memories],
    }


def source_vectors(path: Path) -> list[str]:
    """The vectors semantic recall keeps in a one-machine deployment's log, base64."""
    lines = [json.loads(line) for line in (path / VECTORS_FILE).read_text().splitlines()]
    found = [put["v"] for line in lines for put in line.get("put", [])]
    assert found, "the source embedded nothing"
    return found
