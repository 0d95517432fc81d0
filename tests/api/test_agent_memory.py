"""Agent memory (seed 000, "Agent memory") through HTTP on the embedded AWS.

The learning workflow's steps run inline (`InlineWorkflow` plays the state machine: the real
LearningService steps, the agent pool, DynamoDB and KMS on moto) with a scripted helper
model, so every turn's learning has ended when its answer arrives. tests/integration runs
the same through the real state machine.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from agent_memory.domain import agent_memory as rules
from agent_memory.domain.consolidation import KIND_NOT_KEPT, OUTSIDE_ONLY, STAYS_RETRACTED
from agent_memory.domain.model_gate import SECRET
from tests.conftest import Api
from tests.support.agents import HELPER, org, remember, replying
from tests.support.events import helper
from tests.support.learning_doubles import ScriptedModel
from tests.support.sessions import Client, error
from tests.support.workflow import wired_services

__all__ = ["helper", "org"]  # the fixtures this module uses

TESTS_FIRST = "Always run the tests before you report that work is done."


@pytest.fixture
def services(settings: Any, adapters: Any, helper: ScriptedModel) -> Any:
    return wired_services(settings, adapters, {HELPER: helper})


def person(api: Api, org: str, user_id: str, name: str | None = None) -> Client:
    body = {"organizationId": org, "id": user_id} | ({"name": name} if name else {})
    answer = api.client.post("/v1/admin/users", json=body, headers=api.admin)
    assert answer.status_code == 201, answer.text
    data = answer.json()
    from tests.conftest import User

    return Client(api, User(data["id"], org, data["token"], data["tokenPrefix"]))


@pytest.fixture
def ana(api: Api, org: str) -> Client:
    return person(api, org, "ana", "Ana")


def settings_patch(api: Api, org: str, body: dict[str, Any]) -> None:
    answer = api.client.patch(f"/v1/organizations/{org}/settings", json=body, headers=api.admin)
    assert answer.status_code == 200, answer.text


def memory(client: Client, agent: str) -> dict[str, Any]:
    answer = client.get(f"/v1/agents/{agent}/memory")
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def log(client: Client, agent: str, query: str = "") -> list[dict[str, Any]]:
    answer = client.get(f"/v1/agents/{agent}/memory/log{query}")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["changes"])


def learning(client: Client, agent: str) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/agents/{agent}/learning")
    assert answer.status_code == 200, answer.text
    return list(answer.json()["executions"])


def turn(client: Client, session: str, *items: dict[str, Any]) -> dict[str, Any]:
    answer = client.post(f"/v1/sessions/{session}/turns", {"items": list(items)})
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["turn"])


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def command(client: Client, agent: str, expected: int, body: dict[str, Any]) -> Any:
    return client.post(f"/v1/agents/{agent}/memory", {"expected": expected, "command": body})


# --- learning ------------------------------------------------------------------------------


def test_a_turn_teaches_the_agent_lasting_experience(ana: Client, helper: ScriptedModel) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    helper.script = replying(remember("tests-first", TESTS_FIRST, "procedure", "i-01"))

    answer = turn(ana, session, user(TESTS_FIRST))

    assert answer["agentLearning"] == "started"
    assert memory(ana, agent) == {
        "entries": {
            "tests-first": {
                "key": "tests-first",
                "content": TESTS_FIRST,
                "kind": "procedure",
                "sources": [{"session": session, "item": "i-01"}],
                "updatedAt": memory(ana, agent)["entries"]["tests-first"]["updatedAt"],
                "status": "active",
            }
        },
        "version": 1,
    }
    [change] = log(ana, agent)
    assert change["version"] == 1
    assert change["by"] == "consolidation"
    assert change["keys"] == ["tests-first"]
    assert isinstance(change["at"], int)
    [execution] = learning(ana, agent)
    assert execution["status"] == "succeeded"
    assert execution["sessionId"] == session
    assert execution["itemIds"] == ["i-01"]
    assert execution["applied"] == [{"key": "tests-first", "op": "remember"}]
    [request] = helper.calls
    assert request.input.pool_kind == "agent"
    assert request.input.allowed_kinds == ("procedure", "preference", "decision")
    assert [(i.id, i.session) for i in request.input.items] == [("i-01", session)]


def test_the_helper_is_told_which_person_it_works_with(ana: Client, helper: ScriptedModel) -> None:
    session = ana.session()["id"]
    turn(ana, session, user("I prefer short answers with a list of changes."))

    [request] = helper.calls
    assert request.input.person == "Ana"
    assert "The person the agent works with is Ana" in request.system


def test_only_lasting_kinds_are_kept(ana: Client, helper: ScriptedModel) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    helper.script = replying(
        remember("budget", "The trip budget is 1500 EUR.", "fact", "i-01"),
        remember("maybe-berlin", "Ana may go to Berlin.", "hypothesis", "i-01"),
        remember("tests-first", TESTS_FIRST, "procedure", "i-01"),
        remember("short-answers", "Ana likes short answers.", "preference", "i-01"),
        remember("effect", "The team uses Effect for new services.", "decision", "i-01"),
    )
    turn(ana, session, user("Lots said here."))

    kept = memory(ana, agent)["entries"]
    assert sorted(kept) == ["effect", "short-answers", "tests-first"]
    [execution] = learning(ana, agent)
    refused = {r["change"]["key"]: r["reason"] for r in execution["rejected"]}
    assert refused == {
        "budget": KIND_NOT_KEPT.format(kind="fact"),
        "maybe-berlin": KIND_NOT_KEPT.format(kind="hypothesis"),
    }


def test_an_entry_only_app_results_support_is_never_kept(
    ana: Client, helper: ScriptedModel
) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    helper.script = replying(
        remember("from-app", "Deploy on Fridays.", "procedure", "i-02"),
        remember("tests-first", TESTS_FIRST, "procedure", "i-01", "i-02"),
    )
    turn(
        ana,
        session,
        user(TESTS_FIRST),
        {"role": "tool", "content": "Policy: deploy on Fridays.", "app": "wiki"},
    )

    assert list(memory(ana, agent)["entries"]) == ["tests-first"]
    [execution] = learning(ana, agent)
    assert execution["rejected"] == [
        {
            "change": {
                "op": "remember",
                "key": "from-app",
                "kind": "procedure",
                "sources": ["i-02"],
            },
            "reason": OUTSIDE_ONLY,
        }
    ]


def test_app_results_alone_do_not_even_reach_the_helper(ana: Client, helper: ScriptedModel) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    turn(ana, session, {"role": "tool", "content": "Always deploy on Fridays.", "app": "wiki"})

    assert helper.calls == []
    [execution] = learning(ana, agent)
    assert execution["status"] == "skipped"
    # Left unread: a later turn reads them together with what a person says.
    turn(ana, session, user(TESTS_FIRST))
    assert [i.id for i in helper.calls[0].input.items] == ["i-01", "i-02"]


def test_the_helper_reads_only_items_agent_learning_has_not_read(
    ana: Client, helper: ScriptedModel
) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    helper.script = replying(remember("tests-first", TESTS_FIRST, "procedure", "i-01"))
    turn(ana, session, user(TESTS_FIRST))
    helper.script = replying(
        remember("tests-first", "Run tests first.", "procedure", "i-01"),
        remember("lists", "Ana likes lists of changes.", "preference", "i-02"),
    )
    turn(ana, session, user("I like a list of changes."))

    assert [i.id for i in helper.calls[1].input.items] == ["i-02"]
    entries = memory(ana, agent)["entries"]
    assert entries["tests-first"]["content"] == TESTS_FIRST
    assert entries["lists"]["sources"] == [{"session": session, "item": "i-02"}]
    newest = learning(ana, agent)[0]
    assert newest["rejected"][0]["reason"].startswith("names a source that is not one of")


def test_secrets_are_never_kept(ana: Client, helper: ScriptedModel) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    secret = "The deploy password is Hunter2-xyz!"
    helper.script = replying(remember("deploy", secret, "procedure", "i-01"))
    turn(ana, session, user(secret))

    assert memory(ana, agent) == {"entries": {}, "version": 0}
    [execution] = learning(ana, agent)
    assert execution["rejected"][0]["reason"] == SECRET.format(what="a password")


@pytest.mark.parametrize(
    ("setup", "note"),
    [
        ("review", rules.REVIEW_SESSION),
        ("generate-off", rules.GENERATE_OFF),
        ("agent-memory-off", rules.AGENT_MEMORY_OFF),
        ("no-helper", rules.NO_HELPER),
    ],
)
def test_turns_that_teach_nothing_never_call_the_helper(
    api: Api, org: str, ana: Client, helper: ScriptedModel, setup: str, note: str
) -> None:
    agent = ana.agent()
    session = ana.session(agent, kind="review" if setup == "review" else "chat")["id"]
    if setup == "generate-off":
        assert ana.command(session, {"_tag": "Configure", "generate": False}).status_code == 200
    if setup == "agent-memory-off":
        settings_patch(api, org, {"agentMemory": False})
    if setup == "no-helper":
        settings_patch(api, org, {"helperModel": None})
    helper.script = replying(remember("tests-first", TESTS_FIRST, "procedure", "i-01"))

    assert turn(ana, session, user(TESTS_FIRST))["agentLearning"] == "skipped"
    assert turn(ana, session, user("I like lists."))["agentLearning"] == "skipped"

    assert helper.calls == []
    assert memory(ana, agent) == {"entries": {}, "version": 0}
    assert log(ana, agent) == []
    executions = learning(ana, agent)
    assert [(e["status"], e["sessionId"], e["note"]) for e in executions] == [
        ("skipped", session, note),
        ("skipped", session, note),
    ]
    assert executions[0]["startedAt"] >= executions[1]["startedAt"]


def test_what_was_said_while_generate_was_off_never_teaches(
    ana: Client, helper: ScriptedModel
) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    ana.command(session, {"_tag": "Configure", "generate": False})
    turn(ana, session, user("My private plan: always leave early."))
    ana.command(session, {"_tag": "Configure", "generate": None})

    assert turn(ana, session, user(TESTS_FIRST))["agentLearning"] == "started"
    [request] = helper.calls
    # i-01 was said with generate off; the Configure commands add no item.
    assert [i.id for i in request.input.items] == ["i-02"]


def test_the_queue_decides_which_turn_asks_the_helper(
    services: Any, ana: Client, helper: ScriptedModel
) -> None:
    agent = ana.agent()
    session_id = ana.session(agent)["id"]
    turn(ana, session_id, user(TESTS_FIRST))
    turn(ana, session_id, user("I like lists."))
    stored = services.sessions._repo.get(session_id)

    # The first turn's hook runs after the second turn is stored: a turn is still queued.
    hook = services.sessions.agent_learning
    assert hook.after_turn(stored, 1, generate=True) == "skipped"
    assert learning(ana, agent)[0]["note"] == rules.QUEUED
    assert len(helper.calls) == 2  # one per turn, none for the queued hook call


# --- retracted stays retracted, versions, the log -----------------------------------------


def test_a_retracted_entry_stays_retracted_until_a_person_remembers_it(
    ana: Client, helper: ScriptedModel
) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    helper.script = replying(remember("tests-first", TESTS_FIRST, "procedure", "i-01"))
    turn(ana, session, user(TESTS_FIRST))
    forgot = command(ana, agent, 1, {"_tag": "Forget", "key": "tests-first"})
    assert forgot.status_code == 200, forgot.text
    assert forgot.json()["version"] == 2
    assert forgot.json()["entries"]["tests-first"]["status"] == "retracted"

    helper.script = replying(remember("tests-first", TESTS_FIRST, "procedure", "i-02"))
    turn(ana, session, user("Again: always run the tests first."))
    assert memory(ana, agent)["entries"]["tests-first"]["status"] == "retracted"
    assert learning(ana, agent)[0]["rejected"][0]["reason"] == STAYS_RETRACTED
    assert memory(ana, agent)["version"] == 2

    back = command(
        ana,
        agent,
        2,
        {"_tag": "Remember", "key": "tests-first", "content": TESTS_FIRST, "kind": "procedure"},
    )
    assert back.status_code == 200, back.text
    entry = back.json()["entries"]["tests-first"]
    assert (entry["status"], entry["sources"], back.json()["version"]) == ("active", [], 3)
    assert [(c["version"], c["by"], c["keys"]) for c in log(ana, agent)] == [
        (3, "person", ["tests-first"]),
        (2, "person", ["tests-first"]),
        (1, "consolidation", ["tests-first"]),
    ]


def test_commands_need_the_current_version(ana: Client) -> None:
    agent = ana.agent()
    body = {"_tag": "Remember", "key": "lists", "content": "Ana likes lists.", "kind": "preference"}
    assert command(ana, agent, 0, body).json()["version"] == 1

    stale = command(ana, agent, 0, body | {"content": "Ana likes prose."})
    unknown = command(ana, agent, 1, {"_tag": "Forget", "key": "nope"})
    ahead = command(ana, agent, 5, {"_tag": "Forget", "key": "lists"})

    for answer in (stale, unknown, ahead):
        assert error(answer)[:2] == (409, "VersionConflict")
    assert memory(ana, agent)["version"] == 1
    assert memory(ana, agent)["entries"]["lists"]["content"] == "Ana likes lists."
    assert len(log(ana, agent)) == 1


def test_commands_are_validated(ana: Client) -> None:
    agent = ana.agent()
    fact = {"_tag": "Remember", "key": "budget", "content": "1500 EUR", "kind": "fact"}
    assert error(command(ana, agent, 0, fact)) == (400, "ValidationError", ["command", "kind"])
    configure = {"_tag": "Configure", "generate": False}
    assert error(command(ana, agent, 0, configure)) == (400, "ValidationError", ["command", "_tag"])
    as_text = ana.post(f"/v1/agents/{agent}/memory", {"expected": "0", "command": fact})
    assert error(as_text) == (400, "ValidationError", ["expected"])
    bad_key = fact | {"key": "no spaces", "kind": "decision"}
    assert error(command(ana, agent, 0, bad_key)) == (400, "ValidationError", ["command", "key"])
    assert memory(ana, agent)["version"] == 0


def test_the_log_pages_back_by_version(ana: Client) -> None:
    agent = ana.agent()
    for version in range(5):
        body = {"_tag": "Remember", "key": f"k{version}", "content": "x", "kind": "decision"}
        assert command(ana, agent, version, body).status_code == 200
    assert [c["version"] for c in log(ana, agent, "?limit=2")] == [5, 4]
    assert [c["version"] for c in log(ana, agent, "?limit=2&before=4")] == [3, 2]
    assert [c["version"] for c in log(ana, agent, "?before=2")] == [1]
    assert error(ana.get(f"/v1/agents/{agent}/memory/log?limit=0"))[0] == 400


# --- fork and promotion --------------------------------------------------------------------


def test_a_fork_never_changes_agent_memory(ana: Client, helper: ScriptedModel) -> None:
    agent = ana.agent()
    session = ana.session(agent)["id"]
    helper.script = replying(remember("tests-first", TESTS_FIRST, "procedure", "i-01"))
    turn(ana, session, user(TESTS_FIRST))
    before = (memory(ana, agent), log(ana, agent), learning(ana, agent))

    fork = ana.post(f"/v1/sessions/{session}/fork", {})
    assert fork.status_code == 201, fork.text
    assert (memory(ana, agent), log(ana, agent), learning(ana, agent)) == before

    # The fork's copied history was its source's to teach: its turn reads only its own item.
    helper.script = replying()
    turn(ana, fork.json()["session"]["id"], user("I like lists."))
    assert [i.id for i in helper.calls[-1].input.items] == ["i-02"]
    assert memory(ana, agent) == before[0]


def test_promotion_keeps_exactly_the_lasting_active_entries(ana: Client) -> None:
    agent = ana.agent("Planner")
    session = ana.session(agent, kind="subagent")["id"]
    turn(ana, session, user("Work on the trip."))
    for key, kind in (
        ("budget", "fact"),
        ("maybe", "hypothesis"),
        ("tests-first", "procedure"),
        ("lists", "preference"),
        ("effect", "decision"),
        ("old-way", "procedure"),
    ):
        body = {"_tag": "Remember", "key": key, "content": f"About {key}.", "kind": kind}
        assert ana.command(session, body).status_code == 200
    assert ana.command(session, {"_tag": "Forget", "key": "old-way"}).status_code == 200
    sources = ana.memory(session)["entries"]

    answer = ana.post(f"/v1/sessions/{session}/promote", {})

    assert answer.status_code == 201, answer.text
    promoted = answer.json()["agent"]
    assert promoted["owner"] == "ana"
    assert promoted["members"] == []
    assert promoted["name"] == "Planner (promoted)"
    assert promoted["id"] != agent
    held = memory(ana, promoted["id"])
    assert held["version"] == 1
    assert sorted(held["entries"]) == ["effect", "lists", "tests-first"]
    for key, entry in held["entries"].items():
        assert entry["status"] == "active"
        assert entry["content"] == f"About {key}."
        assert entry["sources"] == [
            {"session": session, "item": item} for item in sources[key]["sources"]
        ]
        assert entry["updatedAt"] == sources[key]["updatedAt"]
    [change] = log(ana, promoted["id"])
    assert (change["version"], change["by"]) == (1, "promotion")
    assert sorted(change["keys"]) == ["effect", "lists", "tests-first"]
    named = ana.post(f"/v1/sessions/{session}/promote", {"name": "Tester"})
    assert named.json()["agent"]["name"] == "Tester"


def test_only_a_subagent_session_can_be_promoted(ana: Client) -> None:
    for kind in ("chat", "review"):
        session = ana.session(kind=kind)["id"]
        answer = ana.post(f"/v1/sessions/{session}/promote", {})
        assert error(answer) == (409, "SessionConflict", [])
    blank = ana.post(f"/v1/sessions/{ana.session(kind='subagent')['id']}/promote", {"name": ""})
    assert error(blank) == (400, "ValidationError", ["name"])


def test_promotion_splits_a_large_memory_and_keeps_every_entry(
    services: Any, ana: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Transactions of 10 actions here (DynamoDB's are 100), so a memory of 25 entries needs
    # three of them and the test stays short.
    from agent_memory.persistence import agent_memory as stored_memory

    monkeypatch.setattr(stored_memory, "PROMOTION_BATCH", 10)
    repo = services.agent_memory._repo
    sizes: list[int] = []
    write = repo._store.write

    def counted(actions: Any) -> None:
        sizes.append(len(actions))
        write(actions)

    session = ana.session(kind="subagent")["id"]
    turn(ana, session, user("Work."))
    for n in range(25):
        body = {
            "_tag": "Remember",
            "key": f"p{n:03d}",
            "content": f"Step {n}.",
            "kind": "procedure",
        }
        assert ana.command(session, body).status_code == 200

    monkeypatch.setattr(repo, "_store", SimpleNamespace(write=counted))
    promoted = ana.post(f"/v1/sessions/{session}/promote", {}).json()["agent"]["id"]
    monkeypatch.undo()
    assert len(sizes) >= 3
    assert max(sizes) <= 10

    held = memory(ana, promoted)
    assert len(held["entries"]) == 25
    assert held["version"] == 1
    assert len(log(ana, promoted)[0]["keys"]) == 25


# --- memory text -------------------------------------------------------------------------


def test_the_memory_text_shows_active_entries_newest_first(ana: Client) -> None:
    agent = ana.agent()
    for n, key in enumerate(("older", "newer", "gone")):
        body = {"_tag": "Remember", "key": key, "content": f"The {key} one.", "kind": "decision"}
        assert command(ana, agent, n, body).status_code == 200
    assert command(ana, agent, 3, {"_tag": "Forget", "key": "gone"}).status_code == 200

    text = ana.get(f"/v1/agents/{agent}/memory/text").json()

    assert text["keys"] == ["newer", "older"]
    assert text["text"].startswith(rules.HEADER)
    assert "current instructions win" in text["text"]
    assert rules.PRIVACY not in text["text"]
    assert text["length"] == len(text["text"])
    assert text["maxLength"] == 8000


def test_a_shared_agent_text_carries_fixed_privacy_rules(api: Api, org: str, ana: Client) -> None:
    ben = person(api, org, "ben")
    shared = ana.agent("Team", members=["ben"])
    empty = ben.get(f"/v1/agents/{shared}/memory/text").json()
    assert empty == {
        "text": rules.PRIVACY,
        "keys": [],
        "length": len(rules.PRIVACY),
        "maxLength": 8000,
    }

    body = {"_tag": "Remember", "key": "effect", "content": "Use Effect.", "kind": "decision"}
    assert command(ben, shared, 0, body).status_code == 200
    text = ana.get(f"/v1/agents/{shared}/memory/text").json()["text"]
    assert text == rules.PRIVACY + rules.HEADER + "- [decision] effect: Use Effect.\n"


def test_the_memory_text_stops_before_the_first_entry_that_does_not_fit(ana: Client) -> None:
    agent = ana.agent()
    for n in range(3):
        body = {"_tag": "Remember", "key": f"k{n}", "content": "x" * 3000, "kind": "procedure"}
        assert command(ana, agent, n, body).status_code == 200
    text = ana.get(f"/v1/agents/{agent}/memory/text").json()
    assert text["keys"] == ["k2", "k1"]
    assert text["length"] <= 8000


# --- access --------------------------------------------------------------------------------


def test_owner_and_members_read_and_change_others_get_404(api: Api, org: str, ana: Client) -> None:
    ben = person(api, org, "ben")
    carl = person(api, org, "carl")
    outsider = person(api, api.org(), "olga")
    agent = ana.agent("Team", members=["ben"])
    body = {"_tag": "Remember", "key": "effect", "content": "Use Effect.", "kind": "decision"}

    assert command(ben, agent, 0, body).status_code == 200
    assert command(ana, agent, 1, {"_tag": "Forget", "key": "effect"}).status_code == 200
    for url in ("memory", "memory/log", "memory/text", "learning"):
        assert ben.get(f"/v1/agents/{agent}/{url}").status_code == 200
        for stranger in (carl, outsider):
            assert error(stranger.get(f"/v1/agents/{agent}/{url}"))[:2] == (404, "NotFound")
    for stranger in (carl, outsider):
        assert error(command(stranger, agent, 2, body))[:2] == (404, "NotFound")
    assert memory(ana, agent)["version"] == 2
    subagent = ana.session(agent, kind="subagent")["id"]
    assert error(ben.post(f"/v1/sessions/{subagent}/promote", {}))[:2] == (404, "NotFound")
