"""Every example of seed 000's "Memory" part, walked through HTTP on the embedded AWS.

Where the seed shows JSON, the test sends those exact bytes (only the opaque Timeline heads
`v-7d21`, `v-8e02`, `v-9f13` are replaced by the heads this service made) or expects that
exact JSON back. The seed's revisions (5, 6, 7, 8, 9) are reached for real.
"""

from __future__ import annotations

import json
from typing import Any

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.memory_text import HEADER
from agent_memory.service.learning_pools import PoolRef
from tests.conftest import Api
from tests.support.sessions import (
    SEED_TIME,
    Client,
    InlineLearning,
    ana,
    error,
    org,
    services,
)

__all__ = ["ana", "org", "services"]  # the fixtures this module uses

READ_MEMORY = """{
  "entries": {
    "budget": {
      "key": "budget",
      "content": "The trip budget is 1500 EUR.",
      "kind": "fact",
      "sources": ["i-02"],
      "updatedAt": 1792486800000,
      "status": "active"
    }
  },
  "processed": ["i-01", "i-02"],
  "settings": { "use": true, "generate": false },
  "overrides": { "generate": false }
}"""

REMEMBER = """{
  "expected": "v-7d21",
  "revision": 5,
  "command": {
    "_tag": "Remember",
    "key": "budget",
    "content": "The trip budget is 1500 EUR.",
    "kind": "fact"
  }
}"""
FORGET = '{"expected":"v-8e02","revision":6,"command":{"_tag":"Forget","key":"budget"}}'
STOP_LEARNING = """{
  "expected": "v-9f13",
  "revision": 7,
  "command": { "_tag": "Configure", "generate": false }
}"""
FOLLOW_ORG = """{
  "expected": "v-9f13",
  "revision": 8,
  "command": { "_tag": "Configure", "generate": null }
}"""
REFRESH = '{ "expected": "v-9f13", "revision": 9, "command": { "_tag": "Refresh" } }'


def send(ana: Client, session_id: str, seed_body: str, heads: dict[str, str]) -> Any:
    """POST the seed's body bytes, with the seed's heads replaced by real ones."""
    for seed_head, real_head in heads.items():
        seed_body = seed_body.replace(seed_head, real_head)
    return ana.api.client.post(
        f"/v1/sessions/{session_id}/memory",
        content=seed_body.encode(),
        headers={**ana.user.headers, "content-type": "application/json"},
    )


def learning(services: Any) -> InlineLearning:
    inline: InlineLearning = services.sessions.learning
    return inline


# --- "Read memory" ------------------------------------------------------------------------


def test_read_memory_is_exactly_the_seed_json(ana: Client) -> None:
    session = ana.session()["id"]
    ana.turn(session, "Plan a trip to Lisbon for two.")  # i-01, read by consolidation
    view = ana.view(session)
    remembered = send(
        ana,
        session,
        REMEMBER.replace('"revision": 5', f'"revision": {view["revision"]}'),
        {"v-7d21": view["head"]},
    )
    assert remembered.status_code == 200, remembered.text
    after = remembered.json()["session"]
    configured = send(
        ana,
        session,
        STOP_LEARNING.replace('"revision": 7', f'"revision": {after["revision"]}'),
        {"v-9f13": after["head"]},
    )
    assert configured.status_code == 200, configured.text

    answer = ana.get(f"/v1/sessions/{session}/memory")
    assert answer.status_code == 200
    assert answer.json() == json.loads(READ_MEMORY)
    # Same fields in the seed's order, at every level.
    assert json.dumps(answer.json()) == json.dumps(json.loads(READ_MEMORY))


class SeedModel:
    """A model that finds the seed's budget fact in the item that states it."""

    name = "local/rules"

    def propose(self, request: Any) -> Any:
        from agent_memory.ports import ModelReply

        [source] = [i.id for i in request.input.items if "1500 EUR" in i.content]
        change = {
            "op": "remember",
            "key": "budget",
            "content": "The trip budget is 1500 EUR.",
            "kind": "fact",
            "sources": [source],
        }
        return ModelReply(text=json.dumps({"changes": [change]}), model=self.name)


class SeedCatalog:
    def resolve(self, name: str | None) -> Any:
        return SeedModel() if name else None


def test_read_memory_after_consolidation_is_exactly_the_seed_json(
    ana: Client, services: Any
) -> None:
    learning(services).models = SeedCatalog()
    session = ana.session()["id"]
    turn = ana.turn(session, "Plan a trip to Lisbon for two.", "We can spend 1500 EUR in total.")
    assert turn.json()["turn"]["itemIds"] == ["i-01", "i-02"]
    ana.command(session, json.loads(STOP_LEARNING)["command"])
    answer = ana.get(f"/v1/sessions/{session}/memory")
    assert json.dumps(answer.json()) == json.dumps(json.loads(READ_MEMORY))


# --- "Change memory": the seed's commands, at the seed's revisions -------------------------


def test_the_seed_commands_in_order(ana: Client, services: Any) -> None:
    session = ana.session()["id"]
    ana.turn(session, "Plan a trip to Lisbon.")  # revision 1; consolidation: 2
    ana.turn(session, "We fly on Friday.")  # 3; consolidation: 4
    app = {"items": [{"role": "tool", "content": "Booked seat 12A.", "app": "airline"}]}
    assert (
        ana.post(f"/v1/sessions/{session}/turns", app).json()["turn"]["learning"] == "skipped"
    )  # 5
    v7d21 = ana.view(session)
    assert v7d21["revision"] == 5

    # Remember: a new head and a new revision; the edit Item is the fact's source.
    remembered = send(ana, session, REMEMBER, {"v-7d21": v7d21["head"]})
    assert remembered.status_code == 200, remembered.text
    v8e02 = remembered.json()["session"]
    assert v8e02["revision"] == 6
    assert v8e02["head"] != v7d21["head"]
    assert v8e02 == ana.view(session)
    budget = ana.memory(session)["entries"]["budget"]
    assert (budget["content"], budget["kind"], budget["status"], budget["sources"]) == (
        "The trip budget is 1500 EUR.",
        "fact",
        "active",
        ["i-04"],
    )

    # The same body again: the Session changed since it was read.
    stale = send(ana, session, REMEMBER, {"v-7d21": v7d21["head"]})
    assert stale.status_code == 409
    assert stale.json()["error"]["_tag"] == "SessionConflict"
    assert ana.view(session) == v8e02

    # Forget: retracted, a new head and revision.
    forgot = send(ana, session, FORGET, {"v-8e02": v8e02["head"]})
    assert forgot.status_code == 200, forgot.text
    v9f13 = forgot.json()["session"]
    assert v9f13["revision"] == 7
    assert v9f13["head"] != v8e02["head"]
    budget = ana.memory(session)["entries"]["budget"]
    assert (budget["status"], budget["sources"]) == ("retracted", ["i-05"])

    # "Keep using the facts, but stop learning new ones": Configure keeps the head.
    stopped = send(ana, session, STOP_LEARNING, {"v-9f13": v9f13["head"]})
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["session"]["revision"] == 8
    assert stopped.json()["session"]["head"] == v9f13["head"]
    memory = ana.memory(session)
    assert (memory["settings"], memory["overrides"]) == (
        {"use": True, "generate": False},
        {"generate": False},
    )

    # "Follow the organization default for learning again".
    followed = send(ana, session, FOLLOW_ORG, {"v-9f13": v9f13["head"]})
    assert followed.status_code == 200, followed.text
    assert (followed.json()["session"]["revision"], followed.json()["session"]["head"]) == (
        9,
        v9f13["head"],
    )
    memory = ana.memory(session)
    assert (memory["settings"], memory["overrides"]) == ({"use": True, "generate": True}, {})

    # "Learn from the history now": consolidation runs with the Session's model.
    runs = len(learning(services).runs)
    refreshed = send(ana, session, REFRESH, {"v-9f13": v9f13["head"]})
    assert refreshed.status_code == 200, refreshed.text
    assert refreshed.json()["session"]["revision"] == 9
    assert learning(services).runs[0].reason == "refresh"
    assert len(learning(services).runs) == runs + 1
    # It read what was unread (the App result and both edits); a Refresh adds no Item.
    assert ana.memory(session)["processed"] == ["i-01", "i-02", "i-03", "i-04", "i-05"]
    after = ana.view(session)
    assert (after["head"], after["revision"]) == (v9f13["head"], 10)


def test_a_stale_head_alone_is_a_conflict(ana: Client) -> None:
    session = ana.session()["id"]
    view = ana.view(session)
    body = REMEMBER.replace('"revision": 5', '"revision": 0')
    answer = send(ana, session, body, {"v-7d21": "v-00000000"})
    assert error(answer) == (409, "SessionConflict", [])
    assert ana.view(session) == view
    assert ana.memory(session)["entries"] == {}


def test_forget_of_an_unknown_key_is_409_and_writes_nothing(ana: Client) -> None:
    session = ana.session()["id"]
    before = ana.view(session)
    answer = ana.command(session, {"_tag": "Forget", "key": "budget"})
    assert error(answer)[:2] == (409, "SessionConflict")
    assert ana.view(session) == before


def test_a_retracted_fact_comes_back_only_with_remember(ana: Client) -> None:
    session = ana.session()["id"]
    ana.command(
        session,
        {
            "_tag": "Remember",
            "key": "budget",
            "content": "The trip budget is 1500 EUR.",
            "kind": "fact",
        },
    )
    ana.command(session, {"_tag": "Forget", "key": "budget"})
    # The model sees the user restate it, but a retracted fact stays retracted.
    ana.turn(session, "My budget is 1500 EUR.")
    assert ana.memory(session)["entries"]["budget"]["status"] == "retracted"
    ana.command(
        session,
        {
            "_tag": "Remember",
            "key": "budget",
            "content": "The trip budget is 1800 EUR.",
            "kind": "fact",
        },
    )
    entry = ana.memory(session)["entries"]["budget"]
    assert (entry["status"], entry["content"]) == ("active", "The trip budget is 1800 EUR.")


# --- "Note": Refresh ----------------------------------------------------------------------


def test_refresh_does_nothing_when_generate_is_off(ana: Client, services: Any) -> None:
    session = ana.session()["id"]
    ana.command(session, {"_tag": "Configure", "generate": False})
    ana.turn(session, "My budget is 1500 EUR.")
    runs = len(learning(services).runs)
    before = ana.view(session)
    answer = ana.command(session, {"_tag": "Refresh"})
    assert answer.status_code == 200
    assert answer.json()["session"] == before == ana.view(session)
    assert len(learning(services).runs) == runs
    assert ana.memory(session)["entries"] == {}


def test_refresh_without_a_model_is_409(ana: Client) -> None:
    session = ana.session(model=None)["id"]
    answer = ana.command(session, {"_tag": "Refresh"})
    assert error(answer)[:2] == (409, "SessionConflict")


def test_refresh_does_not_check_expected_and_revision_but_needs_them(ana: Client) -> None:
    # Turns that were not learned from (generate off), then Refresh with stale values.
    with_model = ana.session()["id"]
    ana.command(with_model, {"_tag": "Configure", "generate": False})
    ana.turn(with_model, "My budget is 1500 EUR.")
    ana.command(with_model, {"_tag": "Configure", "generate": None})
    stale = send(ana, with_model, REFRESH, {"v-9f13": "v-anything"})
    assert stale.status_code == 200, stale.text
    assert "budget" in ana.memory(with_model)["entries"]
    missing = ana.post(f"/v1/sessions/{with_model}/memory", {"command": {"_tag": "Refresh"}})
    assert error(missing) == (400, "ValidationError", ["expected"])


# --- "Switches" ---------------------------------------------------------------------------


def test_switches_follow_the_organization_defaults(api: Api, org: str, ana: Client) -> None:
    session = ana.session()["id"]
    assert ana.memory(session)["settings"] == {"use": True, "generate": True}
    patch = api.client.patch(
        f"/v1/organizations/{org}/settings", json={"memory": {"generate": False}}, headers=api.admin
    )
    assert patch.status_code == 200
    memory = ana.memory(session)
    assert (memory["settings"], memory["overrides"]) == ({"use": True, "generate": False}, {})
    assert ana.turn(session, "My budget is 1500 EUR.").json()["turn"]["learning"] == "skipped"
    ana.command(session, {"_tag": "Configure", "generate": True})
    memory = ana.memory(session)
    assert (memory["settings"], memory["overrides"]) == (
        {"use": True, "generate": True},
        {"generate": True},
    )
    assert ana.turn(session, "My hotel is Sol.").json()["turn"]["learning"] == "started"
    # A Fork keeps the overrides of its source Session.
    fork = ana.post(f"/v1/sessions/{session}/fork", {}).json()["session"]["id"]
    assert ana.memory(fork)["overrides"] == {"generate": True}


# --- "How OpenBot uses memory" -------------------------------------------------------------


def test_memory_text_active_facts_newest_first_within_the_limit(ana: Client, services: Any) -> None:
    session = ana.session()["id"]
    clock = services.sessions._clock
    for n in range(12):
        clock.ms = SEED_TIME + n * 1000
        content = f"Fact number {n} " + "x" * 700
        ana.command(
            session,
            {"_tag": "Remember", "key": f"fact-{n:02d}", "content": content, "kind": "fact"},
        )
    ana.command(session, {"_tag": "Forget", "key": "fact-11"})
    text = ana.get(f"/v1/sessions/{session}/memory/text").json()
    assert text["maxLength"] == 8000
    assert text["length"] == len(text["text"]) <= 8000
    assert text["text"].startswith(HEADER)
    assert "past evidence" in text["text"]
    assert "current instructions win" in text["text"]
    # Retracted facts are not sent; newest first; older ones are left out, none is cut.
    assert "fact-11" not in text["keys"]
    assert text["keys"] == [f"fact-{n:02d}" for n in range(10, 0, -1)][: len(text["keys"])]
    assert len(text["keys"]) == 10
    assert text["text"].count("x" * 700) == len(text["keys"])

    ana.command(session, {"_tag": "Configure", "use": False})
    assert ana.get(f"/v1/sessions/{session}/memory/text").json() == {
        "text": "",
        "keys": [],
        "length": 0,
        "maxLength": 8000,
    }


def test_the_limit_is_a_server_setting(api: Api, org: str, services: Any) -> None:
    # sessions.memory.policy: MemoryRules.make({ maxLength: 4000 })
    services.session_memory._max_text_length = 4000
    ana = Client(api, api.user(org, user_id="ana"))
    session = ana.session()["id"]
    for n in range(8):
        ana.command(
            session, {"_tag": "Remember", "key": f"k{n}", "content": "y" * 900, "kind": "fact"}
        )
    text = ana.get(f"/v1/sessions/{session}/memory/text").json()
    assert text["maxLength"] == 4000
    assert text["length"] <= 4000
    line = len(f"- [fact] k0: {'y' * 900}\n")
    assert len(text["keys"]) == (4000 - len(HEADER)) // line == 4


def test_memory_belongs_to_one_session(ana: Client) -> None:
    agent = ana.agent()
    first = ana.session(agent)["id"]
    ana.turn(first, "My budget is 1500 EUR.")
    assert "budget" in ana.memory(first)["entries"]
    assert ana.memory(ana.session(agent)["id"])["entries"] == {}


def test_if_learning_cannot_start_the_turn_still_completes(ana: Client, services: Any) -> None:
    session = ana.session()["id"]

    def unavailable(pool: PoolRef, *, upto: int, reason: str) -> Any:
        raise Unavailable("the workflow service is down")

    services.sessions.learning.start = unavailable
    answer = ana.turn(session, "My budget is 1500 EUR.")
    assert answer.status_code == 200
    assert answer.json()["turn"]["learning"] == "skipped"
    assert ana.memory(session)["processed"] == []


class ScriptedCatalog:
    """Every model name resolves to `model`."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def resolve(self, name: str | None) -> Any:
        return self.model if name else None


def test_an_edit_made_while_the_model_works_is_kept(ana: Client, services: Any) -> None:
    session = ana.session()["id"]

    class EditingModel:
        """Proposes a budget; meanwhile the person Remembers another one."""

        name = "local/rules"

        def propose(self, request: Any) -> Any:
            from agent_memory.domain.identity import Principal
            from agent_memory.domain.session_memory import Remember
            from agent_memory.ports import ModelReply

            person = Principal("ana", ana.user.org_id, "member")
            now = services.sessions.get(person, session)
            edit = Remember("budget", "The trip budget is 900 EUR.", "fact")
            services.session_memory.command(person, session, now.head, now.revision, edit)
            change = {
                "op": "remember",
                "key": "budget",
                "content": "The trip budget is 1500 EUR.",
                "kind": "fact",
                "sources": [request.input.items[0].id],
            }
            return ModelReply(text=json.dumps({"changes": [change]}), model=self.name)

    learning(services).models = ScriptedCatalog(EditingModel())
    ana.turn(session, "My budget is 1500 EUR.")
    entry = ana.memory(session)["entries"]["budget"]
    assert entry["content"] == "The trip budget is 900 EUR."
    assert entry["sources"] == ["i-02"]
    [run] = ana.get(f"/v1/sessions/{session}/learning").json()["executions"]
    assert run["applied"] == []
    assert run["rejected"][0]["change"]["key"] == "budget"
    assert "person changed this entry" in run["rejected"][0]["reason"]


def test_a_failed_model_is_retried_with_the_next_turn(ana: Client, services: Any) -> None:
    from agent_memory.ports import ModelFailure

    real = learning(services).models

    class FailingOnce:
        calls = 0

        def resolve(self, name: str | None) -> Any:
            FailingOnce.calls += 1
            if FailingOnce.calls == 1:
                model = type("Down", (), {"name": "local/rules"})()

                def propose(_request: Any) -> Any:
                    raise ModelFailure("unavailable", "the model is down", retryable=True)

                model.propose = propose
                return model
            return real.resolve(name)

    learning(services).models = FailingOnce()
    session = ana.session()["id"]
    first = ana.turn(session, "My budget is 1500 EUR.")
    assert first.status_code == 200  # the Turn still completes
    assert ana.memory(session)["processed"] == []
    [failed] = ana.get(f"/v1/sessions/{session}/learning").json()["executions"]
    assert failed["status"] == "failed"
    ana.turn(session, "My hotel is Sol.")
    memory = ana.memory(session)
    assert memory["processed"] == ["i-01", "i-02"]
    assert {"budget", "hotel"} <= set(memory["entries"])
