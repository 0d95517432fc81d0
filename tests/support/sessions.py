"""Seed 000 over HTTP: a client for one person, the learning run inline, an organization with
a user."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from agent_memory.adapters.choice import model_catalog
from agent_memory.bootstrap import build_services
from agent_memory.domain.runs import RunError, RunView
from agent_memory.domain.tasks.base import STEP_DEADLINE_S
from agent_memory.ports import ModelCatalog, ModelFailure, Store
from agent_memory.service.learning_pools import Outcome, PoolRef, apply_cycle
from agent_memory.service.session_learning import SessionLearningPool
from tests.conftest import Api, User
from tests.support.in_memory import FixedClock

SEED_TIME = 1792486800000


@dataclass
class InlineLearning:
    """Consolidation run at once, in the caller's thread: evidence, model, apply."""

    pool: SessionLearningPool
    models: ModelCatalog
    store: Store
    runs: list[RunView] = field(default_factory=list)

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> Any:
        evidence = self.pool.load_evidence(pool, upto)
        run = RunView(f"run-{len(self.runs) + 1}", "skipped", None, None, reason, None)
        if evidence is None:
            self.runs.insert(0, run)
            return "started"
        model = self.models.resolve(evidence.model)
        assert model is not None
        ask = self.pool.task(evidence)
        try:
            reply = model.propose(ask.request(STEP_DEADLINE_S))
        except ModelFailure as failure:
            # As the workflow does: record the error; the read position stays.
            error = RunError(failure.kind, str(failure))
            self.runs.insert(0, replace(run, status="failed", error=error))
            return "started"
        changes = ask.parse(reply.text)
        outcome: Outcome = apply_cycle(self.store, self.pool, evidence, changes, lambda _: [])
        item_ids = [item.id for item in evidence.items]
        done = replace(run, status="succeeded", item_ids=item_ids, applied=list(outcome.applied))
        self.runs.insert(0, replace(done, rejected=list(outcome.rejected)))
        return "started"

    def executions(self, pool: PoolRef) -> list[RunView]:
        return list(self.runs)


def inline_services(settings: Any, adapters: Any) -> Any:
    """The real services on the embedded AWS, at the seed's time, learning inline."""
    fixed = replace(adapters, clock=FixedClock(SEED_TIME))
    built: Any = build_services(settings, fixed)  # the process's wiring, its `access` too
    inline = InlineLearning(
        SessionLearningPool(built.access, fixed.clock),
        model_catalog(settings),
        fixed.store,
    )
    built.sessions.learning = inline
    built.session_memory.learning = inline
    return built


@pytest.fixture
def services(settings: Any, adapters: Any) -> Any:
    return inline_services(settings, adapters)


@dataclass
class Client:
    """One person using the API."""

    api: Api
    user: User

    def post(self, url: str, body: Any) -> Any:
        return self.api.client.post(url, json=body, headers=self.user.headers)

    def get(self, url: str) -> Any:
        return self.api.client.get(url, headers=self.user.headers)

    def agent(self, name: str = "Trip planner", members: list[str] | None = None) -> str:
        answer = self.post("/v1/agents", {"name": name, "members": members or []})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["agent"]["id"])

    def session(self, agent: str | None = None, **body: Any) -> dict[str, Any]:
        answer = self.post("/v1/sessions", {"agentId": agent or self.agent(), **body})
        assert answer.status_code == 201, answer.text
        return dict(answer.json()["session"])

    def view(self, session_id: str) -> dict[str, Any]:
        answer = self.get(f"/v1/sessions/{session_id}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json()["session"])

    def turn(self, session_id: str, *texts: str, **body: Any) -> Any:
        items = [{"role": "user", "content": t} for t in texts]
        return self.post(f"/v1/sessions/{session_id}/turns", {"items": items, **body})

    def command(self, session_id: str, command: dict[str, Any], **override: Any) -> Any:
        view = self.view(session_id)
        body = {"expected": view["head"], "revision": view["revision"], "command": command}
        return self.post(f"/v1/sessions/{session_id}/memory", body | override)

    def memory(self, session_id: str) -> dict[str, Any]:
        answer = self.get(f"/v1/sessions/{session_id}/memory")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())


@pytest.fixture
def org(api: Api) -> str:
    return api.org()


@pytest.fixture
def ana(api: Api, org: str) -> Client:
    return Client(api, api.user(org, user_id="ana"))


def error(answer: Any) -> tuple[int, str, list[Any]]:
    body = answer.json()["error"]
    return answer.status_code, body["_tag"], body["path"]
