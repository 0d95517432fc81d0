"""The observer's world: a module-scoped embedded AWS with the app, scripted observer and
reflector models, a thread to observe."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from agent_memory.domain.observation import BLOCK_DEADLINE_S
from tests.conftest import Api
from tests.support.threads import World, agent_of

OBSERVER = "openai/observer"


REFLECTOR = "openai/reflector"


def words(tag: str) -> str:
    """A message of exactly 100 tokens, recognisable by `tag` (a word and a number: two
    tokens)."""
    return " ".join([tag] + ["alpha"] * 94)


def turn(n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    return (
        {"role": "user", "content": words(f"question{n}")},
        {"role": "assistant", "content": words(f"answer{n}")},
    )


@dataclass
class Script:
    """The observer's and reflector's model: numbered chunks, each call recorded."""

    calls: list[Any] = field(default_factory=list)
    title: str | None = None
    working_memory: Any = None
    delay_s: float = 0.0
    # Words added to each observation, so the log grows as fast as a test needs.
    padding: int = 0
    # The next calls that fail (the provider is down).
    failures: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Any) -> str:
        with self.lock:
            self.calls.append(request)
            number = len(self.calls)
        if self.failures:
            self.failures -= 1
            from agent_memory.ports import ModelFailure

            raise ModelFailure("unavailable", "the observer is down", retryable=True)
        if self.delay_s:
            time.sleep(self.delay_s)
        if request.task == "reflection":
            return json.dumps({"observations": f"- reflection {number}"})
        seen = [json.loads(line)["content"].split()[0] for line in _message_lines(request.user)]
        return json.dumps(
            {
                "observations": f"- chunk {number}: {' '.join(seen)}" + " beta" * self.padding,
                "title": self.title,
                "workingMemory": self.working_memory,
            }
        )

    def tasks(self) -> list[str]:
        return [call.task for call in self.calls]


def _message_lines(user: str) -> list[str]:
    lines = user.split("New messages, oldest first:\n", 1)[1].splitlines()
    return [line for line in lines if line.startswith("{")]


@dataclass
class Observed:
    world: World
    script: Script
    services: Any
    clock: Any

    def options(self, observation: dict[str, Any], **top: Any) -> None:
        self.world.activate(
            {"observationalMemory": {"model": OBSERVER, "observation": observation, **top}}
        )

    def turns(self, thread: str, *numbers: int) -> None:
        for n in numbers:
            assert self.world.save(thread, *turn(n)).status_code == 200

    def context(self, thread: str) -> dict[str, Any]:
        answer = self.world.context(thread)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def log(self, thread: str) -> dict[str, Any]:
        answer = self.world.get(f"/v1/threads/{thread}/observations")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@dataclass
class Stack:
    """One embedded AWS and app for the module (each test makes its own organization,
    users and agent, so tests stay independent): provisioning per test would cost more
    than the tests themselves."""

    api: Api
    script: Script
    services: Any
    clock: Any
    adapters: Any


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """One embedded AWS for a module's observer tests (each test makes its own threads)."""
    from fastapi.testclient import TestClient

    from agent_memory.adapters.rules_model import RulesModel
    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters
    from agent_memory.persistence.limits import ProcessCounters
    from tests.support.aws import embedded_settings
    from tests.support.in_memory import FixedClock
    from tests.support.learning_doubles import Catalog, ScriptedModel
    from tests.support.workflow import InlineWorkflow, wired_services

    with embedded_settings() as (session, _local, settings):
        script = Script()
        models = {
            OBSERVER: ScriptedModel(name=OBSERVER, script=script),
            REFLECTOR: ScriptedModel(name=REFLECTOR, script=script),
            "local/rules": RulesModel(),
        }
        workflow = InlineWorkflow()
        clock = FixedClock(int(time.time() * 1000))
        adapters = replace(
            aws_adapters(settings, session),
            counters=ProcessCounters(),
            orchestrator=workflow,
            models=Catalog(models),
            clock=clock,
        )
        services = wired_services(settings, adapters, workflow=workflow)
        with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
            yield Stack(Api(client), script, services, clock, adapters)


@pytest.fixture
def observed(stack: Stack) -> Iterator[Observed]:
    script = stack.script
    script.calls.clear()
    script.title, script.working_memory, script.delay_s, script.padding = None, None, 0.0, 0
    script.failures = 0
    api = stack.api
    org = api.org()
    owner, member = api.user(org), api.user(org)
    world = World(api, owner, member, agent_of(api, owner, [member.id]))
    yield Observed(world, script, stack.services, stack.clock)
    stack.services.threads.observer.block_deadline_s = BLOCK_DEADLINE_S


def firsts(context: dict[str, Any]) -> list[str]:
    return [m["content"].split()[0] for m in context["messages"]]


def recalled(observed: Observed, thread: str, text: str) -> list[str]:
    answer = observed.world.api.client.post(
        f"/v1/threads/{thread}/context",
        json={"message": {"role": "user", "content": text}},
        headers=observed.world.owner.headers,
    )
    assert answer.status_code == 200, answer.text
    return [m["content"] for g in answer.json()["recalled"] for m in g["messages"]]
