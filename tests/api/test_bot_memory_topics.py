"""Topic renames by the memory Bot over HTTP (seed 002, "How the Bot learns": "A topic
rename still covers all matching entries. Changes to tags or status do not decrypt and
encrypt the old content again"; API.md, "Rules seed 002 leaves open"), and the bot memory
log's `before` cursor.

The memory Bot's model is scripted (tests/api/test_confide.py); learning runs inline.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent_memory.domain.model_gate import RENAME_NOT_YOURS
from agent_memory.domain.tags import BAD_TOPIC, COLON_TAG
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.persistence.bot_memory import bot_pool
from agent_memory.ports import KeyRange
from tests.conftest import User
from tests.support.bots import Script, World, error, script, services, turn, world

__all__ = ["script", "services", "world"]  # the fixtures this module uses

Answer = Callable[[ModelRequest], str]


def lines(request: ModelRequest) -> list[dict[str, Any]]:
    return [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]


def facts(*topics: str) -> Answer:
    """One fact per topic, each citing the person's words of the request."""

    def answer(request: ModelRequest) -> str:
        person = next(line for line in lines(request) if line.get("role") == "user")
        changes = [
            {"op": "fact", "content": f"About {t}.", "topics": [t], "sources": [person["id"]]}
            for t in topics
        ]
        return json.dumps({"changes": changes})

    return answer


def plans(numbers: range) -> Answer:
    """A fact on "trip" per number, each citing the person's words of the request."""

    def answer(request: ModelRequest) -> str:
        person = next(line for line in lines(request) if line.get("role") == "user")
        changes = [
            {
                "op": "fact",
                "content": f"Trip plan {n}.",
                "topics": ["trip"],
                "sources": [person["id"]],
            }
            for n in numbers
        ]
        return json.dumps({"changes": changes})

    return answer


def renames(*pairs: tuple[str, str]) -> Answer:
    changes = [{"op": "renameTopic", "from": old, "to": new} for old, new in pairs]
    return lambda _request: json.dumps({"changes": changes})


def learn(world: World, script: Script, chat: dict[str, Any], answer: Answer) -> dict[str, Any]:
    """A turn of Ana, a confide and the turn's completion: the memory Bot learns `answer`."""
    script.answers["learning_changes"] = answer
    turn_id = turn(world.api, world.ana, chat["id"], "We plan the trip to Lisbon.")["turn"]["id"]
    assert world.confide(world.ana, chat, turn_id, "I am unsure.").status_code == 200
    world.complete(world.ana, chat, turn_id)
    newest = world.executions(world.ana)[0]
    assert newest["status"] == "succeeded", newest
    return newest


def read(world: World, user: User, tags: str | None = None) -> list[dict[str, Any]]:
    url = f"/v1/bots/{world.bot['id']}/memory" + (f"?tags={tags}" if tags else "")
    answer = world.get(user, url)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["entries"])


def topics(entry: dict[str, Any]) -> list[str]:
    return [t for t in entry["tags"] if ":" not in t]


def entry_rows(services: Any, world: World) -> dict[str, Any]:
    store = services.bot_memory.repo._store
    page = store.query(bot_pool(world.bot["id"], world.org).pk, KeyRange(low="MEM#", high="MEM#~"))
    return {r["sk"]: (bytes(r["content"]), r["updatedAt"], r["rev"]) for r in page.records}


def test_a_rename_covers_every_entry_without_rewriting_them(
    world: World, script: Script, services: Any
) -> None:
    chat = world.chat(world.ana)
    learn(world, script, chat, facts("travel"))
    # More entry rows on "trip" (a base row and a recency copy each) than one transaction
    # holds, written as the memory Bot writes them.
    for start in range(0, 60, 30):
        learn(world, script, chat, plans(range(start, start + 30)))
    assert len(read(world, world.ana, "trip")) == 60
    before = entry_rows(services, world)

    done = learn(
        world,
        script,
        chat,
        renames(("trip", "travel"), ("travel", "for:bot"), ("travel", "Trip Plans")),
    )
    # The rename into an existing topic merges; a colon tag or a malformed topic: refused,
    # recorded by op, place and reason (a topic is words: the run's log never names one).
    assert done["applied"] == [{"key": "", "op": "renameTopic"}]
    assert [(r["change"], r["reason"]) for r in done["rejected"]] == [
        ({"op": "renameTopic", "index": 1, "ids": []}, f"topic 2: {COLON_TAG}"),
        ({"op": "renameTopic", "index": 2, "ids": []}, f"topic 2: {BAD_TOPIC}"),
    ]
    assert read(world, world.ana, "trip") == []
    merged = read(world, world.ana, "travel")
    assert len(merged) == 61
    assert all(topics(e) == ["travel"] for e in merged)
    # No entry row was rewritten: content sealed as it was, same version, same time.
    assert entry_rows(services, world) == before

    # The next learning sees the new name in its entries and its topic counts.
    learn(world, script, chat, renames())
    shown = [c for c in script.calls if c.task == "learning_changes"][-1]
    assert 'Topic counts over all valid entries: {"travel": 61}' in shown.user
    assert {tuple(e["topics"]) for e in lines(shown) if "layer" in e} == {("travel",)}

    # The log shows the rename with every entry it covered that Ana may see.
    log = world.get(world.ana, f"/v1/bots/{world.bot['id']}/memory/log?limit=2").json()
    renamed = next(c for c in log["changes"] if len(c["ids"]) == 60)
    assert renamed["by"] == "memory_bot"
    assert {e["id"] for e in merged} - set(renamed["ids"]) == {
        e["id"] for e in merged if e["content"] == "About travel."
    }
    # Ben sees none of Ana's entries, so none of the rename either.
    assert world.get(world.ben, f"/v1/bots/{world.bot['id']}/memory/log").json() == {"changes": []}


def test_a_renamed_name_learned_again_is_a_new_topic(world: World, script: Script) -> None:
    chat = world.chat(world.ana)
    learn(world, script, chat, facts("trip", "food"))
    # A rename, then a fact on the old name, in one answer: the fact is a new "trip".
    rename_then_fact = both(renames(("trip", "travel")), facts("trip"))
    assert [a["op"] for a in learn(world, script, chat, rename_then_fact)["applied"]] == [
        "renameTopic",
        "fact",
    ]
    assert [e["content"] for e in read(world, world.ana, "trip")] == ["About trip."]
    assert [e["content"] for e in read(world, world.ana, "travel")] == ["About trip."]
    # Renaming the new topic leaves the earlier rename's entries where they are; a topic no
    # entry carries any more is not renamed (recorded with its reason).
    done = learn(world, script, chat, renames(("trip", "journey"), ("trip", "other")))
    assert [a["op"] for a in done["applied"]] == ["renameTopic"]
    assert [r["reason"] for r in done["rejected"]] == [RENAME_NOT_YOURS]
    assert len(read(world, world.ana, "journey")) == 1
    assert len(read(world, world.ana, "travel")) == 1
    # A person's Remember of a renamed name is that name too.
    remembered = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/memory",
        json={"command": {"_tag": "Remember", "content": "Pack light.", "tags": ["trip"]}},
        headers=world.ana.headers,
    )
    assert topics(remembered.json()["entry"]) == ["trip"]
    assert [e["content"] for e in read(world, world.ana, "trip")] == ["Pack light."]


def both(first: Answer, second: Answer) -> Answer:
    def answer(request: ModelRequest) -> str:
        changes = json.loads(first(request))["changes"] + json.loads(second(request))["changes"]
        return json.dumps({"changes": changes})

    return answer


def remember(world: World, user: User, content: str) -> int:
    answer = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/memory",
        json={"command": {"_tag": "Remember", "content": content}},
        headers=user.headers,
    )
    assert answer.status_code == 200, answer.text
    return int(answer.json()["version"])


def test_the_log_pages_back_with_before(world: World) -> None:
    mine = []
    for n in range(3):
        mine.append(remember(world, world.ana, f"Mine {n}."))
        # Ben's changes in between are not Ana's to see: a page reads past them.
        for m in range(2):
            remember(world, world.ben, f"Ben's {n}.{m}.")
    url = f"/v1/bots/{world.bot['id']}/memory/log"
    first = world.get(world.ana, f"{url}?limit=2").json()["changes"]
    assert [c["version"] for c in first] == [mine[2], mine[1]]
    second = world.get(world.ana, f"{url}?limit=2&before={first[-1]['version']}").json()
    assert [c["version"] for c in second["changes"]] == [mine[0]]
    assert world.get(world.ana, f"{url}?before={mine[0]}").json() == {"changes": []}
    assert [c["version"] for c in world.get(world.ben, f"{url}?limit=3").json()["changes"]] == [
        mine[2] + 2,
        mine[2] + 1,
        mine[1] + 2,
    ]
    # A version is a positive integer.
    assert error(world.get(world.ana, f"{url}?before=0")) == (400, "ValidationError", ["before"])
    assert error(world.get(world.ana, f"{url}?before=x"))[0] == 400
