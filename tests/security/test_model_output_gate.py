"""The attacker's matrix for what a model proposes to bot memory (DESIGN.md, "One gate on
model output"): the model is scripted to answer whatever an attacker would choose, and
everything is checked through HTTP.

- a run's log never shows the words of a change, nor its topics: only op, place, ids, reason;
- no secret is kept in content or topics, whatever the model answers;
- a fact cites only the run's new items;
- a run changes, cites and is shown only entries every reader of its chat may see.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent_memory.domain import model_gate as gate
from agent_memory.domain.tags import BAD_TOPIC
from agent_memory.domain.tasks.base import ModelRequest
from tests.conftest import Api, User
from tests.support.bots import Script, World, make_channel, script, services, turn, world

__all__ = ["script", "services", "world"]  # the fixtures this module uses

Answer = Callable[[ModelRequest], str]

BEN_SAYS = "Between us: I'm interviewing at Globex next Tuesday."


def items(request: ModelRequest) -> list[dict[str, Any]]:
    """The new items a learning request shows (ids, roles, words)."""
    lines = [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]
    return [line for line in lines if "role" in line]


def said(request: ModelRequest) -> str:
    """The id of the first person's words of the request."""
    return str(next(i["id"] for i in items(request) if i["role"] == "user"))


Change = Callable[[ModelRequest], dict[str, Any]]


def answering(*changes: Change) -> Answer:
    return lambda request: json.dumps({"changes": [change(request) for change in changes]})


def fact(content: str, topics: tuple[str, ...] = (), source: str | None = None) -> Change:
    """A fact citing `source`, or the request's first person's words."""
    return lambda r: {
        "op": "fact",
        "content": content,
        "topics": list(topics),
        "sources": [source or said(r)],
    }


def observation(content: str, *sources: str, topics: tuple[str, ...] = ()) -> Change:
    change = {
        "op": "observation",
        "content": content,
        "confidence": 0.5,
        "topics": list(topics),
        "sources": list(sources),
    }
    return lambda _r: change


def invalidate(entry_id: str) -> Change:
    return lambda _r: {"op": "invalidate", "id": entry_id}


def rename(old: str, new: str) -> Change:
    return lambda _r: {"op": "renameTopic", "from": old, "to": new}


def learn(
    world: World, script: Script, user: User, chat: dict[str, Any], text: str, answer: Answer
) -> dict[str, Any]:
    """A turn of `user` saying `text`, a confide and the turn's end: the model answers
    `answer`; the run as the Bot's owner sees it."""
    script.answers["learning_changes"] = answer
    turn_id = turn(world.api, user, chat["id"], text)["turn"]["id"]
    assert world.confide(user, chat, turn_id, "I am unsure.").status_code == 200
    world.complete(user, chat, turn_id)
    newest = world.executions(world.ana)[0]
    assert newest["status"] == "succeeded", newest
    return newest


def entries(world: World, user: User) -> dict[str, dict[str, Any]]:
    return {e["id"]: e for e in world.memory(user)}


def last_request(script: Script) -> ModelRequest:
    return [c for c in script.calls if c.task == "learning_changes"][-1]


# --- The learning log shows no words ---------------------------------------------------------


def test_a_refused_change_is_logged_by_op_place_ids_and_reason_never_its_words(
    world: World, script: Script
) -> None:
    adam = world.api.user(world.org, role="admin")
    chat = world.chat(world.ben)
    attack = answering(
        fact("Ben is interviewing at Globex next Tuesday.", ("Career",)),
        invalidate("Ben interviews at Globex"),
        observation("Ben leaves for Globex.", "Globex-Tuesday", topics=("globex-interview",)),
        rename("globex-interview", "career"),
    )
    done = learn(world, script, world.ben, chat, BEN_SAYS, attack)
    item = said(last_request(script))
    assert done["applied"] == []
    assert done["rejected"] == [
        {"change": {"op": "fact", "index": 0, "ids": [item]}, "reason": f"topic 1: {BAD_TOPIC}"},
        {"change": {"op": "invalidate", "index": 1, "ids": []}, "reason": gate.NOT_YOURS},
        {"change": {"op": "observation", "index": 2, "ids": []}, "reason": gate.NOT_SHOWN},
        {"change": {"op": "renameTopic", "index": 3, "ids": []}, "reason": gate.RENAME_NOT_YOURS},
    ]
    # The Bot's owner and an organization admin read every run of the organization.
    for reader in (world.ana, adam, world.ben):
        shown = world.get(reader, f"/v1/bots/{world.bot['id']}/learning")
        assert shown.status_code == 200, shown.text
        assert "Globex" not in shown.text
        assert "Career" not in shown.text


def test_an_applied_rename_is_logged_without_its_topics(world: World, script: Script) -> None:
    chat = world.chat(world.ben)
    interview = fact("Ben has an interview next Tuesday.", ("globex-interview",))
    learn(world, script, world.ben, chat, BEN_SAYS, answering(interview))
    to_career = answering(rename("globex-interview", "career"))
    done = learn(world, script, world.ben, chat, "Anything else?", to_career)
    assert done["applied"] == [{"key": "", "op": "renameTopic"}]
    shown = world.get(world.ana, f"/v1/bots/{world.bot['id']}/learning")
    assert "globex" not in shown.text.lower()
    [ben_fact] = world.memory(world.ben)
    assert "career" in ben_fact["tags"]


PRIVATE = {
    "ana": "Ana's aside: my sister Lena moves to Porto in June.",
    "ben": BEN_SAYS,
    "olga": "Olga's plan, keep it quiet: we acquire Initech.",
}
MARKERS = {"ana": "Porto", "ben": "Globex", "olga": "Initech"}


def echo(request: ModelRequest) -> str:
    """An attacker's model: every word of the person, copied into every field it can."""
    person = next(i for i in items(request) if i["role"] == "user")
    words = person["content"]
    slug = "-".join(w.lower() for w in words.split() if w.isalpha())[:60].strip("-")
    changes = [
        {"op": "fact", "content": words, "topics": [slug], "sources": [person["id"]]},
        {"op": "fact", "content": words, "topics": [words], "sources": [person["id"]]},
        {"op": "invalidate", "id": words},
        {"op": "observation", "content": words, "confidence": 1, "topics": [], "sources": [words]},
        {"op": "renameTopic", "from": slug, "to": "private"},
        {"op": "renameTopic", "from": "private", "to": slug},
    ]
    return json.dumps({"changes": changes})


def test_no_log_list_or_event_shows_a_person_the_words_of_another(
    api: Api, world: World, script: Script
) -> None:
    adam = api.user(world.org, role="admin")
    people = {"ana": world.ana, "ben": world.ben, "olga": world.olga, "adam": adam}
    linked = api.client.post(
        f"/v1/bots/{world.bot['id']}/links",
        json={"organizationId": world.other, "grants": {world.olga.id: "read"}},
        headers=world.ana.headers,
    )
    assert linked.status_code == 201, linked.text
    settings = api.client.patch(
        f"/v1/organizations/{world.other}/settings",
        json={"botMemoryModel": "openai/memory-bot"},
        headers=api.admin,
    )
    assert settings.status_code == 200, settings.text
    script.answers["learning_changes"] = echo
    urls: list[str] = [
        f"/v1/bots/{world.bot['id']}/learning",
        f"/v1/bots/{world.bot['id']}/memory",
        f"/v1/bots/{world.bot['id']}/memory/log",
        "/v1/events",
    ]
    for name in ("ana", "ben", "olga"):
        user = people[name]
        # The Bot's chat (private), a session of their own agent, and a thread.
        chat = world.chat(user)
        turn_id = turn(api, user, chat["id"], PRIVATE[name])["turn"]["id"]
        assert world.confide(user, chat, turn_id, "I am unsure.").status_code == 200
        world.complete(user, chat, turn_id)
        agent = api.client.post("/v1/agents", json={"name": "Mine"}, headers=user.headers)
        assert agent.status_code == 201, agent.text
        agent_id = agent.json()["agent"]["id"]
        session = api.client.post("/v1/sessions", json={"agentId": agent_id}, headers=user.headers)
        assert session.status_code == 201, session.text
        session_id = session.json()["session"]["id"]
        said_it = api.client.post(
            f"/v1/sessions/{session_id}/turns",
            json={"items": [{"role": "user", "content": PRIVATE[name]}]},
            headers=user.headers,
        )
        assert said_it.status_code == 200, said_it.text
        thread = api.client.post("/v1/threads", json={"agentId": agent_id}, headers=user.headers)
        assert thread.status_code == 201, thread.text
        thread_id = thread.json()["thread"]["id"]
        saved = api.client.post(
            f"/v1/threads/{thread_id}/messages",
            json={"messages": [{"role": "user", "content": PRIVATE[name]}]},
            headers=user.headers,
        )
        assert saved.status_code == 200, saved.text
        urls += [
            f"/v1/agents/{agent_id}/learning",
            f"/v1/agents/{agent_id}/memory/log",
            f"/v1/sessions/{session_id}/learning",
            f"/v1/threads/{thread_id}/learning",
            f"/v1/threads/{thread_id}/observations",
        ]
    # Each run kept one copy (a fact for its own person, renamed twice) and refused the rest.
    runs = world.executions(world.ana)
    assert [[a["op"] for a in r["applied"]] for r in runs] == [
        ["fact", "renameTopic", "renameTopic"]
    ] * 2
    assert [len(r["rejected"]) for r in runs] == [3, 3]
    for name, user in people.items():
        others = [MARKERS[o] for o in MARKERS if o != name]
        for url in urls:
            answer = api.client.get(url, headers=user.headers)
            for marker in others:
                assert marker not in answer.text, (name, url)
                assert marker.lower() not in answer.text, (name, url)


# --- No secret is kept ------------------------------------------------------------------------

SECRETS = [
    ("Ana's password is hunter2.", []),
    ("Ana's API key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z.", []),
    ("Ana's card is 4111 1111 1111 1111.", []),
    ("The app database is postgres://app:S3cret!@db.example.com:5432/main", []),
    ("Ana keeps a note.", ["hunter2-password"]),
    ("Ana keeps another note.", ["sk-live-4ec39hqlyjwdarjtt1zdp7dc"]),
]


def test_no_secret_is_kept_in_content_or_topics(world: World, script: Script) -> None:
    chat = world.chat(world.ana)

    def answer(request: ModelRequest) -> str:
        item = said(request)
        changes = [
            {"op": "fact", "content": content, "topics": topics, "sources": [item]}
            for content, topics in SECRETS
        ]
        changes.append({"op": "fact", "content": "Ana likes tea.", "topics": [], "sources": [item]})
        return json.dumps({"changes": changes})

    done = learn(world, script, world.ana, chat, "Let me tell you my logins.", answer)
    assert [a["op"] for a in done["applied"]] == ["fact"]
    assert [r["change"]["index"] for r in done["rejected"]] == list(range(len(SECRETS)))
    assert all(r["reason"].startswith("looks like ") for r in done["rejected"])
    [tea] = world.memory(world.ana)
    assert (tea["content"], [t for t in tea["tags"] if ":" not in t]) == ("Ana likes tea.", [])
    # An observation, and a rename to a secret topic, are held to the same rule.
    more = answering(
        observation("Ana's wifi password is hunter2.", tea["id"]),
        fact("Ana likes green tea.", ("tea",)),
        rename("tea", "hunter2-password"),
    )
    done = learn(world, script, world.ana, chat, "More tea.", more)
    assert [a["op"] for a in done["applied"]] == ["fact"]
    assert [(r["change"]["op"], r["reason"][:11]) for r in done["rejected"]] == [
        ("observation", "looks like "),
        ("renameTopic", "looks like "),
    ]
    shown = world.get(world.ana, f"/v1/bots/{world.bot['id']}/memory").text
    # A card number by its groups: a listing's millisecond times may hold "4111" alone.
    for secret in ("hunter2", "sk-proj", "4111 1111", "S3cret", "sk-live"):
        assert secret not in shown
        assert secret not in world.get(world.ana, f"/v1/bots/{world.bot['id']}/learning").text


# --- A fact cites only the run's evidence ---------------------------------------------------


def test_a_fact_cites_only_the_items_of_its_own_run(world: World, script: Script) -> None:
    chat = world.chat(world.ana)
    train = answering(fact("Ana takes the 8:10 train."))
    learn(world, script, world.ana, chat, "I take the 8:10 train.", train)
    first_item = said(last_request(script))
    old = answering(fact("Ana takes the 8:10 train again.", source=first_item))
    done = learn(world, script, world.ana, chat, "I cycle home.", old)
    assert done["applied"] == []
    assert done["rejected"] == [
        {"change": {"op": "fact", "index": 0, "ids": []}, "reason": gate.NOT_EVIDENCE}
    ]
    assert len(world.memory(world.ana)) == 1


def test_in_a_group_chat_a_fact_never_stands_on_another_members_old_words(
    world: World, script: Script
) -> None:
    channel = make_channel(world.api, world.ana, world.ben)
    chat = world.chat(world.ana, channelId=channel["id"])
    learn(world, script, world.ben, chat, "I will lead the launch.", answering())
    bens = said(last_request(script))
    attributed = answering(fact("Ben leads the launch.", source=bens))
    done = learn(world, script, world.ana, chat, "What is on today?", attributed)
    assert [r["reason"] for r in done["rejected"]] == [gate.NOT_EVIDENCE]
    assert world.memory(world.ben) == []


# --- A run changes, cites and is shown only what its readers may see -------------------------


def test_a_run_in_bens_chat_neither_sees_nor_changes_anas_private_entries(
    world: World, script: Script
) -> None:
    ana_chat = world.chat(world.ana)
    train = answering(fact("Ana takes the 8:10 train.", ("commute",)))
    learn(world, script, world.ana, ana_chat, "I take the 8:10 train.", train)
    pinned = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/memory",
        json={"command": {"_tag": "Remember", "content": "My locker is 42.", "tags": ["gym"]}},
        headers=world.ana.headers,
    )
    assert pinned.status_code == 200, pinned.text
    pin_id = pinned.json()["entry"]["id"]
    fact_id = next(i for i, e in entries(world, world.ana).items() if e["layer"] == "fact")
    learn(world, script, world.ana, ana_chat, "Noted.", answering(observation("Early.", fact_id)))
    before = entries(world, world.ana)
    assert len(before) == 3

    ben_chat = world.chat(world.ben)
    attack = answering(
        invalidate(fact_id),
        invalidate(pin_id),
        rename("commute", "travel"),
        observation("Ben and Ana both commute.", fact_id),
    )
    done = learn(world, script, world.ben, ben_chat, "I take the bus.", attack)
    assert done["applied"] == []
    assert [(r["change"], r["reason"]) for r in done["rejected"]] == [
        ({"op": "invalidate", "index": 0, "ids": []}, gate.NOT_YOURS),
        ({"op": "invalidate", "index": 1, "ids": []}, gate.NOT_YOURS),
        ({"op": "renameTopic", "index": 2, "ids": []}, gate.RENAME_NOT_YOURS),
        ({"op": "observation", "index": 3, "ids": []}, gate.NOT_SHOWN),
    ]
    # Ana's entries, her pinned one and the observation built on them stand as they were.
    assert entries(world, world.ana) == before
    # Ben's run was never shown Ana's words, entries or topics.
    shown = last_request(script).user
    for hidden in ("8:10", "locker", "commute", "gym", fact_id, pin_id):
        assert hidden not in shown
    assert "Topic counts over all valid entries: {}" in shown

    # Ana's own run may change what she may see, her pinned entry too.
    mine = answering(invalidate(pin_id))
    done = learn(world, script, world.ana, ana_chat, "I moved lockers.", mine)
    assert done["applied"] == [{"key": pin_id, "op": "invalidate"}]
    assert "invalidatedAt" in entries(world, world.ana)[pin_id]


def test_a_group_chats_run_changes_no_members_private_entry(world: World, script: Script) -> None:
    pinned = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/memory",
        json={"command": {"_tag": "Remember", "content": "I am vegan.", "tags": ["food"]}},
        headers=world.ana.headers,
    )
    pin_id = pinned.json()["entry"]["id"]
    channel = make_channel(world.api, world.ana, world.ben)
    group = world.chat(world.ana, channelId=channel["id"])
    attack = answering(invalidate(pin_id), rename("food", "diet"))
    done = learn(world, script, world.ana, group, "Lunch plans?", attack)
    assert [r["reason"] for r in done["rejected"]] == [gate.NOT_YOURS, gate.RENAME_NOT_YOURS]
    assert "I am vegan." not in last_request(script).user
    assert "invalidatedAt" not in entries(world, world.ana)[pin_id]
    assert "food" in entries(world, world.ana)[pin_id]["tags"]
