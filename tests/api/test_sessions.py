"""Agents, sessions, turns, fork, access and errors through HTTP on the embedded AWS.

Learning runs inline here (`InlineLearning`: the session pool, the real `local/rules` model,
no workflow), so every revision is deterministic; tests/integration covers the workflow.
"""

from __future__ import annotations

from typing import Any

from agent_memory.bootstrap import build_services
from tests.conftest import Api
from tests.support.sessions import (
    Client,
    ana,
    error,
    org,
    services,
)

__all__ = ["ana", "org", "services"]  # the fixtures this module uses

# --- agents and sessions ------------------------------------------------------------------


def test_agents_have_an_owner_and_members(api: Api, org: str, ana: Client) -> None:
    ben = Client(api, api.user(org, user_id="ben"))
    cid = Client(api, api.user(org, user_id="cid"))
    answer = ana.post("/v1/agents", {"name": "Trip planner", "members": ["ben"]})
    assert answer.status_code == 201
    agent = answer.json()["agent"]
    assert agent == {"id": agent["id"], "name": "Trip planner", "owner": "ana", "members": ["ben"]}
    assert ben.get(f"/v1/agents/{agent['id']}").json() == {"agent": agent}
    assert error(cid.get(f"/v1/agents/{agent['id']}")) == (404, "NotFound", [])


def test_members_must_be_people_of_the_organization(api: Api, ana: Client) -> None:
    stranger = api.user(api.org(), user_id="eve")
    answer = ana.post("/v1/agents", {"name": "x", "members": ["nobody", stranger.id]})
    assert error(answer) == (404, "NotFound", ["members", 0])


def test_a_session_view_and_its_model(ana: Client) -> None:
    agent = ana.agent()
    default = ana.session(agent)
    assert default == {
        "id": default["id"],
        "agentId": agent,
        "owner": "ana",
        "kind": "chat",
        "model": "local/rules",
        "head": default["head"],
        "revision": 0,
        "parentId": None,
    }
    assert default["head"].startswith("v-")
    assert ana.session(agent, model=None)["model"] is None
    # Bedrock runs wherever the deployment runs on AWS (here, the embedded AWS).
    bedrock = "bedrock/amazon.nova-lite-v1:0"
    assert ana.session(agent, model=bedrock, kind="review")["kind"] == "review"
    assert ana.view(default["id"]) == default


def test_session_input_errors(ana: Client) -> None:
    agent = ana.agent()
    assert error(ana.post("/v1/sessions", {"agentId": agent, "model": "acme/x"})) == (
        400,
        "ValidationError",
        ["model"],
    )
    assert error(ana.post("/v1/sessions", {"agentId": agent, "kind": "meeting"}))[2] == ["kind"]
    assert error(ana.post("/v1/sessions", {"agentId": "nope"})) == (404, "NotFound", ["agentId"])


def test_the_admin_token_cannot_own_sessions(api: Api) -> None:
    answer = api.client.post("/v1/agents", json={"name": "x"}, headers=api.admin)
    assert error(answer)[:2] == (403, "Forbidden")


# --- access -------------------------------------------------------------------------------


def test_only_the_owner_uses_a_session(api: Api, org: str, ana: Client) -> None:
    ben = Client(api, api.user(org, user_id="ben"))
    eve = Client(api, api.user(api.org(), user_id="eve"))
    admin = Client(api, api.user(org, role="admin"))
    shared = ana.agent(members=["ben"])
    session = ana.session(shared)["id"]
    for stranger in (ben, eve):
        for url in ("", "/memory", "/memory/text", "/learning"):
            assert error(stranger.get(f"/v1/sessions/{session}{url}"))[:2] == (404, "NotFound")
        assert stranger.turn(session, "hi").status_code == 404
        assert stranger.post(f"/v1/sessions/{session}/fork", {}).status_code == 404
        refresh = {"expected": "v", "revision": 0, "command": {"_tag": "Refresh"}}
        assert stranger.post(f"/v1/sessions/{session}/memory", refresh).status_code == 404
    # A member of the shared agent starts sessions of their own with it.
    assert ben.session(shared)["owner"] == "ben"
    # The organization's admins may look.
    assert admin.get(f"/v1/sessions/{session}").status_code == 200


# --- turns --------------------------------------------------------------------------------


def test_a_turn_appends_items_and_learns(ana: Client) -> None:
    session = ana.session()
    answer = ana.turn(session["id"], "Plan a trip to Lisbon.", "My budget is 1500 EUR.")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["turn"]["itemIds"] == ["i-01", "i-02"]
    assert body["turn"]["learning"] == "started"
    assert body["turn"]["agentLearning"] == "skipped"
    assert body["turn"]["id"]
    assert body["session"]["head"] != session["head"]
    assert body["session"]["revision"] == 1
    # Consolidation ran: revision moved again, head did not.
    view = ana.view(session["id"])
    assert (view["head"], view["revision"]) == (body["session"]["head"], 2)
    memory = ana.memory(session["id"])
    assert memory["processed"] == ["i-01", "i-02"]
    assert memory["entries"]["budget"]["sources"] == ["i-02"]
    assert memory["entries"]["budget"]["content"].endswith("budget is 1500 EUR.")
    executions = ana.get(f"/v1/sessions/{session['id']}/learning").json()["executions"]
    assert executions[0]["applied"] == [{"key": "budget", "op": "remember"}]


def test_a_turn_that_only_runs_an_app_action_changes_no_memory(ana: Client) -> None:
    session = ana.session()
    items = [{"role": "tool", "content": "My budget is 99 EUR.", "app": "calendar"}]
    answer = ana.post(f"/v1/sessions/{session['id']}/turns", {"items": items})
    assert answer.json()["turn"]["learning"] == "skipped"
    memory = ana.memory(session["id"])
    assert (memory["entries"], memory["processed"]) == ({}, [])
    assert ana.view(session["id"])["revision"] == 1


def test_a_turn_without_generate_or_model_is_skipped(ana: Client) -> None:
    agent = ana.agent()
    no_model = ana.session(agent, model=None)
    assert ana.turn(no_model["id"], "My budget is 1 EUR.").json()["turn"]["learning"] == "skipped"
    off = ana.session(agent)
    ana.command(off["id"], {"_tag": "Configure", "generate": False})
    assert ana.turn(off["id"], "My budget is 1 EUR.").json()["turn"]["learning"] == "skipped"
    assert ana.memory(off["id"])["entries"] == {}


def test_a_turn_may_name_its_model(ana: Client) -> None:
    session = ana.session(model=None)
    answer = ana.turn(session["id"], "My budget is 1500 EUR.", model="local/rules")
    assert answer.json()["turn"]["learning"] == "started"
    assert "budget" in ana.memory(session["id"])["entries"]
    assert error(ana.turn(session["id"], "x", model="acme/x"))[2] == ["model"]


def test_a_turn_with_a_stale_state_is_a_conflict(ana: Client) -> None:
    session = ana.session()
    first = ana.turn(session["id"], "Hello.", expected=session["head"], revision=0)
    assert first.status_code == 200
    before = ana.view(session["id"])
    stale = ana.turn(session["id"], "Again.", expected=session["head"], revision=0)
    assert error(stale)[:2] == (409, "SessionConflict")
    assert ana.view(session["id"]) == before
    assert ana.memory(session["id"])["processed"] == ["i-01"]


def test_turn_limits(ana: Client) -> None:
    session = ana.session()["id"]
    url = f"/v1/sessions/{session}/turns"
    assert error(ana.post(url, {"items": []}))[:2] == (400, "ValidationError")
    # Past the schema's bounds (characters, items): 400, as a client validating it expects.
    big = ana.post(url, {"items": [{"role": "user", "content": "x" * (32 * 1024 + 1)}]})
    assert error(big) == (400, "ValidationError", ["items", 0, "content"])
    many = ana.post(url, {"items": [{"role": "user", "content": "x"}] * 65})
    assert error(many) == (400, "ValidationError", ["items"])
    # Within them but past the byte bound no schema states: 413.
    wide = ana.post(url, {"items": [{"role": "user", "content": "é" * (16 * 1024 + 1)}]})
    assert error(wide) == (413, "TooLarge", ["items", 0, "content"])
    bad_role = ana.post(url, {"items": [{"role": "system", "content": "x"}]})
    assert error(bad_role) == (400, "ValidationError", ["items", 0, "role"])
    assert ana.view(session)["revision"] == 0


# --- fork ---------------------------------------------------------------------------------


def test_fork_copies_history_memory_and_overrides(ana: Client) -> None:
    session = ana.session()["id"]
    ana.turn(session, "My budget is 1500 EUR.")
    ana.command(session, {"_tag": "Configure", "use": False})
    source = ana.view(session)
    answer = ana.post(f"/v1/sessions/{session}/fork", {})
    assert answer.status_code == 201
    fork = answer.json()["session"]
    assert fork["id"] != session
    assert (fork["head"], fork["revision"], fork["parentId"]) == (
        source["head"],
        source["revision"],
        session,
    )
    assert ana.memory(fork["id"]) == ana.memory(session)

    # Afterwards the two are independent.
    assert ana.command(fork["id"], {"_tag": "Forget", "key": "budget"}).status_code == 200
    assert ana.memory(session)["entries"]["budget"]["status"] == "active"
    assert ana.view(session) == source
    assert ana.turn(fork["id"], "Next.").json()["turn"]["itemIds"] == ["i-03"]


# --- command errors -----------------------------------------------------------------------


def test_command_errors_name_their_path(ana: Client) -> None:
    session = ana.session()["id"]
    cases = [
        (
            {"_tag": "Remember", "key": "budget", "content": "x", "kind": "rumour"},
            ["command", "kind"],
        ),
        ({"_tag": "Remember", "key": "budget", "kind": "fact"}, ["command", "content"]),
        ({"_tag": "Remember", "key": "a b", "content": "x", "kind": "fact"}, ["command", "key"]),
        (
            {"_tag": "Remember", "key": "k", "content": "x", "kind": "fact", "x": 1},
            ["command", "x"],
        ),
        ({"_tag": "Configure", "use": "yes"}, ["command", "use"]),
        ({"_tag": "Delete", "key": "budget"}, ["command", "_tag"]),
        ({"key": "budget"}, ["command", "_tag"]),
    ]
    for command, path in cases:
        assert error(ana.command(session, command)) == (400, "ValidationError", path), command
    view = ana.view(session)
    assert error(
        ana.post(
            f"/v1/sessions/{session}/memory",
            {"expected": view["head"], "command": {"_tag": "Refresh"}},
        )
    ) == (
        400,
        "ValidationError",
        ["revision"],
    )
    assert ana.view(session)["revision"] == 0


# --- the real workflow --------------------------------------------------------------------


def test_the_learning_workflow_learns_from_a_turn(
    local_aws: Any, settings: Any, adapters: Any
) -> None:
    """Turn -> Step Functions (moto executes the ASL) -> the session pool -> memory."""
    import time

    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import step_services

    session, local = local_aws
    real = build_services(settings, adapters)
    step_services.use(real)
    sfn = session.client("stepfunctions")
    try:
        with TestClient(create_app(lambda: real), raise_server_exceptions=False) as http:
            api = Api(http)
            ana = Client(api, api.user(api.org(), user_id="ana"))
            session_id = ana.session()["id"]
            turned = ana.turn(session_id, "Plan a trip.", "My budget is 1500 EUR.").json()
            assert turned["turn"]["learning"] == "started"
            deadline = time.monotonic() + 20
            executions: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                executions = ana.get(f"/v1/sessions/{session_id}/learning").json()["executions"]
                if executions and executions[0]["status"] != "running":
                    break
                time.sleep(0.05)
            assert executions[0]["status"] == "succeeded", executions
            assert executions[0]["itemIds"] == ["i-01", "i-02"]
            assert executions[0]["applied"] == [{"key": "budget", "op": "remember"}]
            memory = ana.memory(session_id)
            assert memory["entries"]["budget"]["sources"] == ["i-02"]
            assert memory["processed"] == ["i-01", "i-02"]
            view = ana.view(session_id)
            assert (view["head"], view["revision"]) == (turned["session"]["head"], 2)
    finally:
        for listed in sfn.list_executions(stateMachineArn=local.state_machine_arn)["executions"]:
            while (
                sfn.describe_execution(executionArn=listed["executionArn"])["status"] == "RUNNING"
            ):
                time.sleep(0.05)
        step_services.reset()
