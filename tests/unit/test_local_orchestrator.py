"""The local workflow runner executes the checked-in learning ASL as Step Functions does:
order of the steps, what each step receives, Retry intervals and attempts, Catch into
RecordFailure, step and execution timeouts, a used name, a full backlog, and resuming
every unfinished execution after the process stopped in the middle of a step."""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.local_orchestrator import LocalOrchestrator
from agent_memory.adapters.local_workflow import run_key
from agent_memory.domain.errors import Unavailable
from agent_memory.ports import Action, KeyRange, Page, Record
from tests.support.in_memory import InMemoryStore

ROOT = Path(__file__).resolve().parents[2]
LEARNING = json.loads((ROOT / "infra/statemachines/learning.asl.json").read_text())
STEPS = ("LoadEvidence", "CallModel", "ApplyLearning", "RecordFailure")
RESOURCE = {step: f"${{{step}FunctionArn}}" for step in STEPS}
# One ASL second is 10 ms here: the checked-in 2/4/8 s backoff takes 140 ms.
SCALE = 0.01
PAYLOAD = {"pool": {"kind": "session", "orgId": "o", "poolId": "s"}, "upto": 2}


class Retryable(Exception):  # the ASL retries errors by this class name
    pass


class Steps:
    """The four learning steps, scripted: each call is recorded with its event and the
    monotonic time it began."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.began: list[float] = []
        self.behaviour: dict[str, Callable[[dict[str, Any]], Any]] = {}
        self._lock = threading.Lock()

    def tasks(self) -> dict[str, Callable[[dict[str, Any]], Any]]:
        return {RESOURCE[step]: self._task(step) for step in STEPS}

    def _task(self, step: str) -> Callable[[dict[str, Any]], Any]:
        def run(event: dict[str, Any]) -> Any:
            with self._lock:
                self.calls.append(event)
                self.began.append(time.monotonic())
            behaviour = self.behaviour.get(step)
            if behaviour is not None:
                return behaviour(event)
            return {"status": "ok", "step": step}

        return run

    def states(self) -> list[tuple[str, int]]:
        return [(c["context"]["state"], c["context"]["attempt"]) for c in self.calls]

    def gaps(self, state: str) -> list[float]:
        """Seconds between the starts of `state`'s consecutive attempts."""
        began = [t for c, t in zip(self.calls, self.began) if c["context"]["state"] == state]
        return [later - earlier for earlier, later in itertools.pairwise(began)]


class Severable(InMemoryStore):
    """A store that a test can cut off, as a killed process loses its connection."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = False
        self.outages = 0

    def _check(self) -> None:
        if self.cut:
            raise RuntimeError("the process is gone")

    def get(self, pk: str, sk: str) -> Record | None:
        self._check()
        return super().get(pk, sk)

    def query(self, pk: str, key_range: KeyRange | None = None, **kwargs: Any) -> Page:
        self._check()
        return super().query(pk, key_range, **kwargs)

    def write(self, actions: Sequence[Action]) -> None:
        self._check()
        if self.outages > 0:
            self.outages -= 1
            raise Unavailable("injected")
        super().write(actions)


class Runner(LocalOrchestrator):
    """The runner, with the store it writes to and the retry waits it schedules, in ASL
    seconds."""

    def __init__(self, store: Severable, *args: Any, **kwargs: Any) -> None:
        super().__init__(store, *args, **kwargs)
        self.store = store
        self.waits: list[float] = []

    def _schedule(self, name: str, delay_s: float) -> None:
        # A start waits 0 s, and a worker woken a millisecond before an execution's
        # `notBefore` waits out that millisecond: neither is an ASL retry interval.
        if delay_s >= SCALE / 2:
            self.waits.append(round(delay_s / SCALE, 6))
        super()._schedule(name, delay_s)


@pytest.fixture
def steps() -> Steps:
    return Steps()


@pytest.fixture
def store() -> Severable:
    return Severable()


@pytest.fixture
def runner(store: Severable, steps: Steps) -> Iterator[Runner]:
    orchestrator = Runner(store, LEARNING, steps.tasks(), time_scale=SCALE)
    orchestrator.run()
    yield orchestrator
    orchestrator.close()


def _settled(runner: Runner, name: str, timeout: float = 10) -> Record:
    """The execution's row once the runner is idle: its status, and its output or error."""
    assert runner.idle(timeout), f"{name} is still open"
    row = runner.store.get(*run_key(name))
    assert row is not None
    return row


def _assert_waited(gaps: list[float], waits: list[float]) -> None:
    """Each attempt after a failure began no sooner than its wait allowed (less the
    millisecond that the row's whole-millisecond `notBefore` may round away)."""
    for gap, wait in zip(gaps, waits, strict=True):
        assert gap >= wait * SCALE - 0.001


def test_the_steps_run_in_order_each_with_the_state_so_far(runner: Runner, steps: Steps) -> None:
    assert runner.start("run-1", PAYLOAD).started
    row = _settled(runner, "run-1")

    assert row["status"] == "SUCCEEDED"
    assert steps.states() == [("LoadEvidence", 0), ("CallModel", 0), ("ApplyLearning", 0)]
    load, call, apply = steps.calls
    assert load["input"] == PAYLOAD
    assert load["context"]["executionName"] == "run-1"
    assert call["input"]["evidence"] == {"status": "ok", "step": "LoadEvidence"}
    assert apply["input"]["model"] == {"status": "ok", "step": "CallModel"}
    assert json.loads(row["output"])["result"] == {"status": "ok", "step": "ApplyLearning"}


def test_retryable_is_retried_with_the_asl_backoff_then_recorded(
    runner: Runner, steps: Steps
) -> None:
    def throttled(event: dict[str, Any]) -> Any:
        raise Retryable("ModelThrottled: slow down")

    steps.behaviour["CallModel"] = throttled
    runner.start("run-1", PAYLOAD)
    row = _settled(runner, "run-1")

    assert row["status"] == "FAILED"
    assert steps.states() == [
        ("LoadEvidence", 0),
        ("CallModel", 0),
        ("CallModel", 1),
        ("CallModel", 2),
        ("CallModel", 3),
        ("RecordFailure", 0),
    ]
    assert runner.waits == [2, 4, 8]
    _assert_waited(steps.gaps("CallModel"), runner.waits)
    error = steps.calls[-1]["input"]["error"]
    assert error["Error"] == "Retryable"
    assert json.loads(error["Cause"])["errorMessage"] == "ModelThrottled: slow down"
    assert "model" not in steps.calls[-1]["input"]  # ApplyLearning never ran


def test_the_intervals_come_from_the_definition(store: Severable, steps: Steps) -> None:
    definition = copy.deepcopy(LEARNING)
    definition["States"]["LoadEvidence"]["Retry"][0] |= {"IntervalSeconds": 3, "MaxAttempts": 2}
    calls = iter([Retryable("x"), Retryable("x"), None])

    def flaky(event: dict[str, Any]) -> Any:
        error = next(calls)
        if error is not None:
            raise error
        return {"status": "running"}

    steps.behaviour["LoadEvidence"] = flaky
    runner = Runner(store, definition, steps.tasks(), time_scale=SCALE)
    runner.run()
    try:
        runner.start("run-1", PAYLOAD)
        row = _settled(runner, "run-1")
    finally:
        runner.close()
    assert runner.waits == [3, 6]
    _assert_waited(steps.gaps("LoadEvidence"), runner.waits)
    assert row["status"] == "SUCCEEDED"


def test_a_model_call_over_its_time_is_recorded_not_retried(runner: Runner, steps: Steps) -> None:
    release = threading.Event()
    # 120 ASL seconds are 1.2 s here; the step would take far longer.
    steps.behaviour["CallModel"] = lambda event: release.wait(30)
    try:
        runner.start("run-1", PAYLOAD)
        row = _settled(runner, "run-1")
    finally:
        release.set()
    assert row["status"] == "FAILED"
    assert steps.states() == [("LoadEvidence", 0), ("CallModel", 0), ("RecordFailure", 0)]
    assert steps.calls[-1]["input"]["error"] == {"Error": "States.Timeout", "Cause": ""}


def test_a_load_over_its_time_is_tried_once_more(runner: Runner, steps: Steps) -> None:
    release = threading.Event()
    slow = iter([True, False])

    def load(event: dict[str, Any]) -> Any:
        if next(slow):
            release.wait(30)
        return {"status": "running"}

    steps.behaviour["LoadEvidence"] = load
    try:
        runner.start("run-1", PAYLOAD)
        row = _settled(runner, "run-1")
    finally:
        release.set()
    assert row["status"] == "SUCCEEDED"
    assert steps.states()[:2] == [("LoadEvidence", 0), ("LoadEvidence", 1)]


def test_an_execution_over_its_time_ends_timed_out_without_a_catch(
    store: Severable, steps: Steps
) -> None:
    definition = copy.deepcopy(LEARNING)
    definition["TimeoutSeconds"] = 1  # 10 ms here: less than a step takes
    release = threading.Event()
    steps.behaviour["LoadEvidence"] = lambda event: release.wait(30)
    runner = Runner(store, definition, steps.tasks(), time_scale=SCALE)
    runner.run()
    try:
        runner.start("run-1", PAYLOAD)
        row = _settled(runner, "run-1")
    finally:
        release.set()
        runner.close()
    assert (row["status"], row["error"]) == ("TIMED_OUT", "States.Timeout")
    assert steps.states() == [("LoadEvidence", 0)]


def test_a_used_name_runs_nothing(runner: Runner, steps: Steps) -> None:
    assert runner.start("run-1", PAYLOAD).started
    _settled(runner, "run-1")
    assert not runner.start("run-1", PAYLOAD).started
    assert not runner.start("run-1", {**PAYLOAD, "upto": 9}).started
    assert runner.idle(5)
    assert [state for state, _ in steps.states()].count("LoadEvidence") == 1


def test_a_full_backlog_is_unavailable_and_writes_nothing(store: Severable, steps: Steps) -> None:
    runner = Runner(store, LEARNING, steps.tasks(), backlog=2, time_scale=SCALE)
    assert runner.start("a", PAYLOAD).started
    assert runner.start("b", PAYLOAD).started
    with pytest.raises(Unavailable):
        runner.start("c", PAYLOAD)
    assert store.get(*run_key("c")) is None
    runner.run()
    try:
        assert runner.idle(10)
        assert runner.start("c", PAYLOAD).started
        assert _settled(runner, "c")["status"] == "SUCCEEDED"
    finally:
        runner.close()


def test_an_unavailable_store_starts_nothing(runner: Runner, store: Severable) -> None:
    store.outages = 1
    with pytest.raises(Unavailable):
        runner.start("run-1", PAYLOAD)
    assert store.get(*run_key("run-1")) is None
    assert runner.start("run-1", PAYLOAD).started


def test_a_restart_resumes_from_the_last_completed_step(store: Severable, steps: Steps) -> None:
    entered = threading.Event()
    stuck = threading.Event()

    def hangs(event: dict[str, Any]) -> Any:
        if event["context"]["executionName"] == "run-1" and event["context"]["attempt"] == 0:
            entered.set()
            stuck.wait(30)
        return {"status": "answered"}

    steps.behaviour["CallModel"] = hangs
    first = Runner(store, LEARNING, steps.tasks(), time_scale=SCALE)
    first.run()
    first.start("run-1", PAYLOAD)
    first.start("run-2", PAYLOAD)
    assert entered.wait(10)
    store.cut = True  # the process dies: it writes nothing more
    first.close(timeout_s=0.1)

    store.cut = False
    second = Runner(store, LEARNING, steps.tasks(), time_scale=SCALE)
    try:
        assert second.run() == 2
        one, two = _settled(second, "run-1"), _settled(second, "run-2")
    finally:
        stuck.set()
        second.close()
    assert (one["status"], two["status"]) == ("SUCCEEDED", "SUCCEEDED")
    loads = [c for c in steps.calls if c["context"]["state"] == "LoadEvidence"]
    applies = [c for c in steps.calls if c["context"]["state"] == "ApplyLearning"]
    assert sorted(c["context"]["executionName"] for c in loads) == ["run-1", "run-2"]
    assert sorted(c["context"]["executionName"] for c in applies) == ["run-1", "run-2"]
    # The step cut short counts as a crashed attempt: the ASL retries it (attempt 1) after
    # its first interval, and only it.
    assert steps.states().count(("CallModel", 1)) == 1
    assert second.waits == [2]


def test_an_unfinished_execution_survives_and_nothing_finished_runs_again(
    store: Severable, steps: Steps
) -> None:
    first = Runner(store, LEARNING, steps.tasks(), time_scale=SCALE)
    first.run()
    first.start("done", PAYLOAD)
    assert first.idle(10)
    first.start("waiting", PAYLOAD)  # started, never worked on: the process stops now
    first.close()
    runs_before = len(steps.calls)
    first.close()

    second = Runner(store, LEARNING, steps.tasks(), time_scale=SCALE)
    try:
        resumed = second.run()
        assert _settled(second, "waiting")["status"] == "SUCCEEDED"
    finally:
        second.close()
    names = {c["context"]["executionName"] for c in steps.calls[runs_before:]}
    assert (resumed, names) == (1, {"waiting"})


def test_work_that_asks_no_model_goes_straight_to_apply_learning(
    runner: Runner, steps: Steps
) -> None:
    steps.behaviour["LoadEvidence"] = lambda event: {"status": "running", "modelFree": True}
    runner.start("run-1", PAYLOAD)

    assert _settled(runner, "run-1")["status"] == "SUCCEEDED"
    assert steps.states() == [("LoadEvidence", 0), ("ApplyLearning", 0)]


def test_a_result_that_is_not_json_fails_the_execution_uncaught(
    runner: Runner, steps: Steps
) -> None:
    steps.behaviour["ApplyLearning"] = lambda event: {"when": time}
    runner.start("run-1", PAYLOAD)
    row = _settled(runner, "run-1")
    # As in Step Functions, States.ALL does not catch States.Runtime.
    assert (row["status"], row["error"]) == ("FAILED", "States.Runtime")
    assert steps.states()[-1] == ("ApplyLearning", 0)


def test_a_busy_store_while_running_is_tried_again(
    runner: Runner, store: Severable, steps: Steps
) -> None:
    gate = threading.Event()

    def load(event: dict[str, Any]) -> Any:
        if not gate.is_set():
            store.outages = 1  # the write that saves this step's result fails once
            gate.set()
        return {"status": "running"}

    steps.behaviour["LoadEvidence"] = load
    runner.start("run-1", PAYLOAD)
    assert gate.wait(5)
    assert _settled(runner, "run-1")["status"] == "SUCCEEDED"
    # The attempt whose result was not saved counts as cut short, then runs again.
    assert [s for s, _ in steps.states()][:2] == ["LoadEvidence", "LoadEvidence"]
