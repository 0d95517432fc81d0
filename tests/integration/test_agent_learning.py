"""Agent memory learning end to end: turns through HTTP, the real ASL in moto's executor,
the step handlers with the agent pool, DynamoDB and KMS on the embedded AWS, and a scripted
helper model (the organization's `helperModel`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.domain import agent_memory as rules
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.ports import ModelFailure
from agent_memory.service.learning_pools import PoolRef, SourceRef
from agent_memory.service.learning_runs import execution_name
from tests.conftest import ADMIN_TOKEN
from tests.support.state_machine import Workflow, workflow

HELPER = "openai/helper"
TESTS_FIRST = "Always run the tests before you report that work is done."
LISTS = "I like a list of changes at the end."


class Person:
    """One user of the HTTP API."""

    def __init__(self, client: Any, user_id: str, token: str) -> None:
        self.client = client
        self.id = user_id
        self.headers = {"Authorization": f"Bearer {token}"}

    def post(self, url: str, body: Any, status: int = 200) -> Any:
        answer = self.client.post(url, json=body, headers=self.headers)
        assert answer.status_code == status, answer.text
        return answer.json()

    def get(self, url: str) -> Any:
        answer = self.client.get(url, headers=self.headers)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def agent(self, members: list[str] | None = None) -> str:
        body = {"name": "Coder", "members": members or []}
        return str(self.post("/v1/agents", body, 201)["agent"]["id"])

    def session(self, agent: str, kind: str = "chat") -> str:
        answer = self.post("/v1/sessions", {"agentId": agent, "kind": kind}, 201)
        return str(answer["session"]["id"])

    def turn(self, session: str, *texts: str) -> dict[str, Any]:
        items = [{"role": "user", "content": text} for text in texts]
        return dict(self.post(f"/v1/sessions/{session}/turns", {"items": items})["turn"])


class World:
    def __init__(self, flow: Workflow, client: Any, org: str) -> None:
        self.flow = flow
        self.client = client
        self.org = org
        self.admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    def person(self, user_id: str, name: str) -> Person:
        body = {"organizationId": self.org, "id": user_id, "name": name}
        data = self.client.post("/v1/admin/users", json=body, headers=self.admin).json()
        return Person(self.client, data["id"], data["token"])

    def arn(self, agent: str, session: str, upto: int) -> str:
        ref = PoolRef("agent", self.org, agent, SourceRef("session", session))
        return self.flow.arn(execution_name(ref, upto))


@pytest.fixture
def world(local_aws: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    with workflow(local_aws, settings, monkeypatch, model=HELPER, notes=False) as flow:
        flow.model.script = lambda request: json.dumps({"changes": []})
        with TestClient(create_app(lambda: flow.services), raise_server_exceptions=False) as client:
            admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
            org = client.post("/v1/admin/organizations", json={"name": "A"}, headers=admin)
            org_id = org.json()["id"]
            patched = client.patch(
                f"/v1/organizations/{org_id}/settings",
                json={"helperModel": HELPER},
                headers=admin,
            )
            assert patched.status_code == 200, patched.text
            yield World(flow, client, org_id)


def remember(key: str, content: str, kind: str, source: str) -> str:
    change = {"op": "remember", "key": key, "content": content, "kind": kind}
    return json.dumps({"changes": [change | {"sources": [source]}]})


def test_a_turn_teaches_the_agent_through_the_state_machine(world: World) -> None:
    ana = world.person("ana", "Ana")
    agent = ana.agent()
    session = ana.session(agent)
    world.flow.model.script = lambda r: remember("tests-first", TESTS_FIRST, "procedure", "i-01")

    assert ana.turn(session, TESTS_FIRST)["agentLearning"] == "started"
    described = world.flow.wait_arn(world.arn(agent, session, 1))

    assert described["status"] == "SUCCEEDED"
    assert world.flow.task_states(described["executionArn"]) == [
        "LoadEvidence",
        "CallModel",
        "ApplyLearning",
    ]
    held = ana.get(f"/v1/agents/{agent}/memory")
    assert held["version"] == 1
    assert held["entries"]["tests-first"]["sources"] == [{"session": session, "item": "i-01"}]
    [execution] = ana.get(f"/v1/agents/{agent}/learning")["executions"]
    assert (execution["status"], execution["sessionId"]) == ("succeeded", session)
    assert execution["itemIds"] == ["i-01"]
    assert execution["model"] == HELPER
    [request] = world.flow.model.calls
    assert (request.input.pool_kind, request.input.person) == ("agent", "Ana")
    # The workflow's messages carry ids only.
    history = json.dumps(world.flow.history(described["executionArn"]), default=str)
    assert "run the tests" not in history
    assert session in history


def test_turns_that_teach_nothing_start_no_execution(world: World) -> None:
    ana = world.person("ana", "Ana")
    agent = ana.agent()
    review = ana.session(agent, kind="review")
    quiet = ana.session(agent)
    view = ana.get(f"/v1/sessions/{quiet}")["session"]
    configure = {"_tag": "Configure", "generate": False}
    body = {"expected": view["head"], "revision": view["revision"], "command": configure}
    ana.post(f"/v1/sessions/{quiet}/memory", body)

    assert ana.turn(review, TESTS_FIRST)["agentLearning"] == "skipped"
    assert ana.turn(quiet, TESTS_FIRST)["agentLearning"] == "skipped"

    assert (
        world.flow.sfn.list_executions(stateMachineArn=world.flow.machine_arn)["executions"] == []
    )
    assert world.flow.model.calls == []
    executions = ana.get(f"/v1/agents/{agent}/learning")["executions"]
    assert [(e["sessionId"], e["status"], e["note"]) for e in executions] == [
        (quiet, "skipped", rules.GENERATE_OFF),
        (review, "skipped", rules.REVIEW_SESSION),
    ]
    assert ana.get(f"/v1/agents/{agent}/memory") == {"entries": {}, "version": 0}


def test_two_people_of_a_shared_agent_teach_one_memory(world: World) -> None:
    ana = world.person("ana", "Ana")
    ben = world.person("ben", "Ben")
    agent = ana.agent(members=["ben"])
    ana_session, ben_session = ana.session(agent), ben.session(agent)

    def script(request: ModelRequest) -> str:
        evidence = request.input
        key = "tests-first" if evidence.person == "Ana" else "lists"
        kind = "procedure" if key == "tests-first" else "preference"
        return remember(key, f"{evidence.person}: {evidence.items[0].content}", kind, "i-01")

    world.flow.model.script = script
    ana.turn(ana_session, TESTS_FIRST)
    world.flow.wait_arn(world.arn(agent, ana_session, 1))
    ben.turn(ben_session, LISTS)
    world.flow.wait_arn(world.arn(agent, ben_session, 1))

    held = ben.get(f"/v1/agents/{agent}/memory")
    assert held["version"] == 2
    assert held["entries"]["tests-first"]["content"] == f"Ana: {TESTS_FIRST}"
    assert held["entries"]["lists"]["sources"] == [{"session": ben_session, "item": "i-01"}]
    changes = ana.get(f"/v1/agents/{agent}/memory/log")["changes"]
    assert [(c["version"], c["by"], c["keys"]) for c in changes] == [
        (2, "consolidation", ["lists"]),
        (1, "consolidation", ["tests-first"]),
    ]
    executions = ana.get(f"/v1/agents/{agent}/learning")["executions"]
    assert [e["sessionId"] for e in executions] == [ben_session, ana_session]
    assert rules.PRIVACY in ben.get(f"/v1/agents/{agent}/memory/text")["text"]


def test_a_failed_helper_is_recorded_and_the_next_turn_reads_the_items_again(
    world: World,
) -> None:
    ana = world.person("ana", "Ana")
    agent = ana.agent()
    session = ana.session(agent)

    def broken(request: ModelRequest) -> str:
        raise ModelFailure("config", "the helper rejected the request", retryable=False)

    world.flow.model.script = broken
    ana.turn(session, TESTS_FIRST)
    assert world.flow.wait_arn(world.arn(agent, session, 1))["status"] == "FAILED"
    [failed] = ana.get(f"/v1/agents/{agent}/learning")["executions"]
    assert failed["status"] == "failed"
    assert failed["error"]["type"] == "ModelConfigError"

    world.flow.model.script = lambda r: remember("lists", LISTS, "preference", "i-02")
    ana.turn(session, LISTS)
    assert world.flow.wait_arn(world.arn(agent, session, 2))["status"] == "SUCCEEDED"
    assert [i.id for i in world.flow.model.calls[-1].input.items] == ["i-01", "i-02"]
    assert list(ana.get(f"/v1/agents/{agent}/memory")["entries"]) == ["lists"]


def test_turns_in_a_row_ask_the_helper_at_most_once_each_and_read_each_item_once(
    world: World,
) -> None:
    ana = world.person("ana", "Ana")
    agent = ana.agent()
    session = ana.session(agent)
    turns = 4
    for n in range(turns):
        ana.turn(session, f"Note {n}.")
    world.flow.wait_all()

    assert 1 <= len(world.flow.model.calls) <= turns
    executions = ana.get(f"/v1/agents/{agent}/learning")["executions"]
    assert len(executions) == turns
    assert all(e["status"] in ("succeeded", "skipped") for e in executions)
    covered = {item for e in executions for item in e["itemIds"]}
    assert covered == {f"i-0{n}" for n in range(1, turns + 1)}
    # Every item was read once for good: the read position is past the last one.
    assert world.flow.services.agent_memory._repo.position(agent, session).position == turns
