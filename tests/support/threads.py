"""Builders of seed 003 objects over HTTP: an agent with memory options, a thread world, messages;
the scripted title model."""

from __future__ import annotations

# The fixtures of the thread tests: the inline learning workflow, the world of two users.
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Api, User


def agent_of(api: Api, owner: User, members: list[str] | None = None) -> str:
    body: dict[str, Any] = {"name": "helper"} | ({"members": members} if members else {})
    answer = api.client.post("/v1/agents", json=body, headers=owner.headers)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["agent"]["id"])


@dataclass
class World:
    api: Api
    owner: User
    member: User
    agent: str

    def activate(self, options: dict[str, Any] | None) -> None:
        """Publish `options` as the agent's next version and activate it."""
        client, headers = self.api.client, self.owner.headers
        memory = None if options is None else {"options": options}
        saved = client.patch(
            f"/v1/agents/{self.agent}/draft", json={"memory": memory}, headers=headers
        )
        assert saved.status_code == 200, saved.text
        version = client.post(f"/v1/agents/{self.agent}/publish", json={}, headers=headers)
        number = version.json()["version"]["number"]
        url = f"/v1/agents/{self.agent}/versions/{number}/activate"
        assert client.post(url, json={}, headers=headers).status_code == 200

    def thread(self, user: User | None = None) -> str:
        who = user or self.owner
        answer = self.api.client.post(
            "/v1/threads", json={"agentId": self.agent}, headers=who.headers
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["thread"]["id"])

    def save(self, thread: str, *messages: dict[str, Any], user: User | None = None) -> Any:
        who = user or self.owner
        return self.api.client.post(
            f"/v1/threads/{thread}/messages", json={"messages": list(messages)}, headers=who.headers
        )

    def context(self, thread: str, user: User | None = None) -> Any:
        who = user or self.owner
        return self.api.client.post(
            f"/v1/threads/{thread}/context",
            json={"message": {"role": "user", "content": "hi"}},
            headers=who.headers,
        )

    def get(self, url: str, user: User | None = None) -> Any:
        return self.api.client.get(url, headers=(user or self.owner).headers)


TITLER = "openai/titler"


@pytest.fixture
def titler() -> Any:
    from tests.support.learning_doubles import ScriptedModel

    return ScriptedModel(name=TITLER, script=lambda request: '{"title": "Lisbon in May"}')


@pytest.fixture
def services(settings: Any, adapters: Any, titler: Any) -> Any:
    """The services with the learning workflow run inline at each start (as the state
    machine runs it, without its retries) and a catalog of a scripted title model and
    local/rules; the real Step Functions and `make run`'s runner have their own tests."""
    from agent_memory.adapters.rules_model import RulesModel
    from tests.support.workflow import wired_services

    return wired_services(settings, adapters, {TITLER: titler, "local/rules": RulesModel()})


@pytest.fixture
def world(api: Api) -> World:
    org = api.org()
    owner, member = api.user(org), api.user(org)
    return World(api, owner, member, agent_of(api, owner, [member.id]))


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


CHAT = [
    user("My sister Ana lives in Lisbon."),
    assistant("Lisbon is lovely."),
    user("I adopted a cat named Miso last spring."),
    assistant("Cats are great company."),
    user("My favourite food is spicy ramen."),
    assistant("Noted."),
]


def recall_on(world: World, **options: Any) -> None:
    world.activate({"lastMessages": options.pop("last", 2), "semanticRecall": options or True})


def ask(world: World, thread: str, text: str, who: Any = None) -> dict[str, Any]:
    answer = world.api.client.post(
        f"/v1/threads/{thread}/context",
        json={"message": {"role": "user", "content": text}},
        headers=(who or world.owner).headers,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def contents(group: dict[str, Any]) -> list[str]:
    return [m["content"] for m in group["messages"]]


@contextmanager
def make_run_world(tmp_path: Any, clock: Any = None) -> Iterator[World]:
    """`make run`'s wiring (SQLite, the local cipher, the template's state machine run in
    process by the step handlers) with one organization's owner and agent; `clock`, when
    given, is the adapters' clock."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import build_services, local_adapters, step_services
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import hash_token
    from infra.local.runner import learning_workflow
    from tests.conftest import ADMIN_TOKEN

    settings = load_settings(
        {"DEFAULT_MODEL": "local/rules", "MEMORY_ADMIN_TOKEN_SHA256": hash_token(ADMIN_TOKEN)}
    )
    _name, definition, tasks = learning_workflow()
    adapters = local_adapters(settings, tmp_path, workflow=definition, tasks=tasks)
    if clock is not None:
        adapters.clock = clock
    services = build_services(settings, adapters)
    step_services.use(services)
    runner: Any = adapters.orchestrator
    runner.run()
    try:
        with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
            api = Api(client)
            owner = api.user(api.org())
            yield World(api, owner, owner, agent_of(api, owner))
    finally:
        runner.close()
        step_services.reset()
        adapters.store.close()
