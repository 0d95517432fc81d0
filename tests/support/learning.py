"""A learning service on the in-memory store with a scripted model, driven step by step."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.ports import Put
from agent_memory.service.learning import (
    LearningService,
)
from agent_memory.service.learning_pools import (
    PoolRef,
)
from agent_memory.service.learning_start import wait_name
from tests.support.in_memory import (
    FakeCipher,
    FixedClock,
    InMemoryStore,
    RecordingOrchestrator,
    SequentialIds,
)
from tests.support.learning_doubles import (
    MODEL,
    Catalog,
    NotesPool,
    ScriptedModel,
    drive,
)
from tests.support.workflow import step_event

REF = PoolRef("session", "o-1", "s-1")
BUDGET = "Remember that my budget is 1500 EUR."


class Harness:
    def __init__(self, orchestrator: Any = None) -> None:
        self.store = InMemoryStore()
        self.cipher = FakeCipher()
        self.clock = FixedClock(step_ms=1)
        self.orchestrator = orchestrator or RecordingOrchestrator()
        self.model = ScriptedModel()
        self.pool = NotesPool(self.store)
        self.service = self.build()
        self.pool.create(REF)

    def build(self) -> LearningService:
        """The service over this harness's table, clock and orchestrator."""
        return LearningService(
            self.store,
            ExecutionRepository(self.store, self.cipher),
            self.clock,
            SequentialIds(),
            self.orchestrator,
            Catalog({MODEL: self.model}),
            [self.pool],
        )

    def turn(self, *texts: str) -> tuple[str, dict[str, Any]]:
        upto = self.pool.add_turn(REF, *texts)
        assert self.service.start(REF, upto=upto, reason="turn") == "started"
        name = list(self.orchestrator.started)[-1]
        return name, dict(self.orchestrator.started[name])

    event = staticmethod(step_event)

    def drive(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return drive(self.service, name, payload)


def copy_of(
    h: Harness, name: str, state: dict[str, Any], execution_id: str, attempt: int = 0
) -> dict[str, Any]:
    event = h.event(name, state, "CallModel", attempt)
    event["context"]["executionId"] = execution_id
    return event


EVENT = "turn:o-1:s-1:t-1"


def row_put(op: str, what: Any) -> bool:
    return op == "write" and put_sk(what).startswith("EXEC#")


class WaitHarness(Harness):
    """Harness (one session pool, the steps played by `drive`) over a SteppedStore."""

    def __init__(self, orchestrator: Any = None) -> None:
        super().__init__(orchestrator)
        self.store = SteppedStore()
        self.pool = NotesPool(self.store)
        self.service = self.build()
        self.pool.create(REF)
        self.upto = self.pool.add_turn(REF, BUDGET)
        self.driven: set[str] = set()

    def wait(self) -> str:
        return self.service.wait(REF, event=EVENT, reason="confide")

    def release(self) -> list[Any]:
        return self.service.release(EVENT, upto=self.upto)

    def run_started(self) -> None:
        """Play every execution the workflow was handed and has not run yet."""
        for name, payload in list(self.orchestrator.started.items()):
            if name not in self.driven:
                self.driven.add(name)
                self.drive(name, dict(payload))

    def assert_learned_once(self) -> None:
        self.run_started()
        assert list(self.orchestrator.started) == [wait_name(REF, EVENT)]
        [execution] = self.service.executions(REF)
        assert (execution.status, execution.item_ids) == ("succeeded", ["i-01"])
        assert execution.applied == [{"key": "budget", "op": "remember"}]
        assert len(self.model.calls) == 1
        assert self.pool.head(REF)["position"] == self.upto


def put_sk(actions: list[Any]) -> str:
    if len(actions) == 1 and isinstance(actions[0], Put):
        return str(actions[0].record["sk"])
    return ""


class SteppedStore(InMemoryStore):
    """The in-memory table, running each hook once just before the first call it matches
    (a hook may raise, as a crash or an outage does; it may call the store itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.hooks: list[tuple[Match, Callable[[], None]]] = []
        self.calls: list[tuple[str, Any]] = []

    def at(self, match: Match, hook: Callable[[], None]) -> None:
        self.hooks.append((match, hook))

    def _reached(self, op: str, what: Any) -> None:
        self.calls.append((op, what))
        for entry in list(self.hooks):
            if entry in self.hooks and entry[0](op, what):
                self.hooks.remove(entry)
                entry[1]()

    def write(self, actions: Any) -> None:
        self._reached("write", list(actions))
        super().write(actions)

    def get(self, pk: str, sk: str) -> Any:
        self._reached("get", (pk, sk))
        return super().get(pk, sk)

    def query(self, pk: str, *args: Any, **kwargs: Any) -> Any:
        self._reached("query", pk)
        return super().query(pk, *args, **kwargs)


Match = Callable[[str, Any], bool]


@pytest.fixture
def h() -> Harness:
    return Harness()
