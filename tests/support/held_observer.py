"""The observer's world with its runs held (`HeldWorkflow`): a module-scoped embedded AWS
with the app, the scripted observer (`OBSERVER`) and `local/rules`, the steps of each run
run by the test in the order it chooses."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from tests.conftest import Api
from tests.support.held_workflow import HeldRun, HeldWorkflow
from tests.support.observer import OBSERVER, Script
from tests.support.threads import World, agent_of


@dataclass
class Held:
    api: Api
    workflow: HeldWorkflow
    script: Script

    def world(self, options: dict[str, Any]) -> World:
        """A new organization, its owner and agent, `options` active."""
        org = self.api.org()
        owner, member = self.api.user(org), self.api.user(org)
        world = World(self.api, owner, member, agent_of(self.api, owner, [member.id]))
        world.activate(options)
        return world

    def observer_runs(self) -> list[HeldRun]:
        """The observer's held runs, oldest first."""
        return [r for r in self.workflow.started.values() if "thread-observe" in r.name]


@pytest.fixture(scope="module")
def held() -> Iterator[Held]:
    from fastapi.testclient import TestClient

    from agent_memory.adapters.rules_model import RulesModel
    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters
    from agent_memory.persistence.limits import ProcessCounters
    from tests.support.aws import embedded_settings
    from tests.support.in_memory import FixedClock
    from tests.support.learning_doubles import Catalog, ScriptedModel
    from tests.support.workflow import wired_services

    with embedded_settings() as (session, _local, settings):
        script = Script()
        workflow = HeldWorkflow()
        models = {
            OBSERVER: ScriptedModel(name=OBSERVER, script=script),
            "local/rules": RulesModel(),
        }
        adapters = replace(
            aws_adapters(settings, session),
            counters=ProcessCounters(),
            orchestrator=workflow,
            models=Catalog(models),
            clock=FixedClock(int(time.time() * 1000)),
        )
        services = wired_services(settings, adapters, workflow=workflow)
        with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
            yield Held(Api(client), workflow, script)
