"""`ports.Orchestrator` on one machine: a durable runner of an ASL state machine.

Executions are Store rows, so `run()` resumes each unfinished one after a restart; an attempt
a stopped process left under way fails with `Lambda.Unknown`, so the ASL's Retry decides.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

from agent_memory.adapters import asl
from agent_memory.adapters.local_workflow import (
    FAILED,
    NAME_TAKEN,
    RUNNING,
    SUCCEEDED,
    TIMED_OUT,
    StepThread,
    Task,
    WorkflowRun,
    cause,
    run_key,
    started,
)
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.persistence.keys import WORKFLOW_OPEN_PK
from agent_memory.ports import Execution, KeyRange, Store
from agent_memory.ports.store import partition_rows

log = logging.getLogger(__name__)

# Step Functions' rule for names: 1 to 80 characters, none of these.
_NAME = re.compile(r"[^\s<>{}\[\]?*\"#%\\^|~`$&,;:/]{1,80}")
# A row the runner could not advance (the store was busy) is tried again after this.
_BUSY_PAUSE_S = 1.0


class LocalOrchestrator:
    """Runs `definition` in `workers` threads; `tasks` maps each Task's `Resource` to its callable.

    A task's exception is its error, named by its class as Lambda names it."""

    def __init__(
        self,
        store: Store,
        definition: Mapping[str, Any],
        tasks: Mapping[str, Task],
        *,
        workers: int = 1,
        backlog: int = 1000,
        time_scale: float = 1.0,
    ) -> None:
        self._machine = asl.Machine.parse(definition)
        resources = {s.resource for s in self._machine.states.values() if s.resource}
        missing = sorted(resources - set(tasks))
        if missing:
            raise asl.DefinitionError(f"no task runs the resources {', '.join(missing)}")
        self._store = store
        self._tasks = dict(tasks)
        self._workers = max(1, workers)
        self._backlog = backlog
        self._scale = time_scale
        self._cond = threading.Condition()
        self._due: list[tuple[float, int, str]] = []  # (monotonic due time, order, name)
        self._queued: set[str] = set()
        self._order = itertools.count()
        self._open: set[str] = set()  # unfinished executions this process works on
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._local = threading.local()  # each worker's step thread

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution:
        if not _NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a valid execution name")
        with self._cond:
            if len(self._open) >= self._backlog or name in self._open:
                raise Unavailable("the local workflow runner is busy; retry shortly")
            self._open.add(name)  # reserved before the write, so a full backlog writes nothing
        try:
            self._store.write(started(name, payload, self._machine.start_at))
        except WriteConflict as conflict:
            self._release(name)
            if conflict.condition == NAME_TAKEN:
                return Execution(name=name, started=False)
            raise Unavailable("the workflow store is busy; retry shortly") from conflict
        except BaseException:
            self._release(name)
            raise
        self._schedule(name, 0.0)
        return Execution(name=name, started=True)

    def run(self) -> int:
        """Resume every unfinished execution and start the workers; returns how many resumed."""
        resumed = 0
        for record in partition_rows(self._store, WORKFLOW_OPEN_PK, KeyRange(prefix=""), page=500):
            name = str(record["name"])
            with self._cond:
                if name in self._open:
                    continue  # started by this process since it was built
                self._open.add(name)
            self._schedule(name, 0.0)
            resumed += 1
        with self._cond:
            self._stopping = False
            for number in range(self._workers - len(self._threads)):
                thread = threading.Thread(target=self._work, name=f"workflow-{number}", daemon=True)
                thread.start()
                self._threads.append(thread)
        return resumed

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop; a step not done within `timeout_s` is resumed by the next `run()` as cut short."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._threads = [t for t in self._threads if t.is_alive()]

    def idle(self, timeout_s: float) -> bool:
        """Wait until no execution is open in this process (tests, benchmarks)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._open:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    def _schedule(self, name: str, delay_s: float) -> None:
        with self._cond:
            if name in self._queued:
                return
            self._queued.add(name)
            heapq.heappush(self._due, (time.monotonic() + delay_s, next(self._order), name))
            self._cond.notify()

    def _release(self, name: str) -> None:
        with self._cond:
            self._open.discard(name)
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._stopping and (not self._due or self._due[0][0] > time.monotonic()):
                    self._cond.wait(None if not self._due else self._due[0][0] - time.monotonic())
                if self._stopping:
                    step = getattr(self._local, "step", None)
                    if step is not None:
                        step.stop()
                    return
                _due, _order, name = heapq.heappop(self._due)
                self._queued.discard(name)
            try:
                if self._advance(name):
                    self._release(name)
            except Unavailable:
                self._schedule(name, _BUSY_PAUSE_S)
            except Exception:
                log.exception("workflow execution %s could not advance; trying again", name)
                self._schedule(name, 5.0)

    def _advance(self, name: str) -> bool:
        """Run `name` until it ends (True) or waits for a retry (False)."""
        row = self._store.get(*run_key(name))
        if row is None or row["status"] != RUNNING:
            return True
        run = WorkflowRun.of(row)
        limit = self._seconds(self._machine.timeout_s)
        while True:
            if self._stopping:
                self._schedule(name, 0.0)  # a later run() of this process picks it up
                return False
            left = None if limit is None else limit - run.spent()
            if left is not None and left <= 0:
                return self._timed_out(run)
            wait = float(run.row.get("notBefore", 0)) / 1000 - time.time()
            if "inStep" not in run.row and wait > 0:
                self._schedule(name, wait)
                return False
            state = self._machine.states[str(run.row["state"])]
            if "inStep" in run.row:  # a process stopped while this attempt ran
                crashed = cause(asl.CRASHED, "the local runner stopped during this step")
                outcome: tuple[str, Any] = ("error", (asl.CRASHED, crashed))
            else:
                outcome = self._execute(run, state, left)
            if outcome[0] == "timed_out":
                return self._timed_out(run)
            if outcome[0] == "ok":
                ended = self._moved(run, state, outcome[1])
            else:
                ended = self._failed(run, state, *outcome[1])
            if ended is not None:
                return ended

    def _execute(self, run: WorkflowRun, state: asl.State, left: float | None) -> tuple[str, Any]:
        """One state's work: ("ok", output), ("error", (error, cause)) or ("timed_out", _)."""
        if state.type != "Task":
            return "ok", run.document
        event = run.document
        if state.parameters is not None:
            event = asl.parameters(state.parameters, run.document, run.context(state))
        run.save(self._store, {"inStep": run.retry_count})
        step_limit = self._seconds(state.timeout_s)
        limits = [t for t in (step_limit, left) if t is not None]
        step = getattr(self._local, "step", None) or StepThread()
        self._local.step = step
        kind, value = step.call(self._tasks[str(state.resource)], event, min(limits, default=None))
        if kind == "timed_out":
            step.stop()  # left to finish its attempt; the next attempt gets a new thread
            self._local.step = None
            if left is not None and (step_limit is None or left <= step_limit):
                return "timed_out", None
            return "error", (asl.TIMEOUT, "")
        if kind == "error":
            return kind, value
        try:
            value = json.loads(json.dumps(value))
        except (TypeError, ValueError) as error:
            return "error", (asl.RUNTIME, cause(asl.RUNTIME, f"the result is not JSON: {error}"))
        return "ok", asl.put(run.document, state.result_path, value)

    def _moved(self, run: WorkflowRun, state: asl.State, output: Any) -> bool | None:
        """Save a state's success: the execution's end (True) or the next state (None)."""
        if state.type == "Fail":
            run.end(self._store, FAILED, state.error or "States.Fail", state.cause or "")
            return True
        run.document = output
        following = state.next_of(output)
        if state.type == "Succeed" or following is None:
            run.end(self._store, SUCCEEDED)
            return True
        run.retries = {}
        run.save(self._store, {"state": following, "inStep": None, "notBefore": None})
        return None

    def _failed(self, run: WorkflowRun, state: asl.State, error: str, why: str) -> bool | None:
        """Follow the state's Retry and Catch: a retry wait (False), a catcher's next state
        (None) or the execution's end (True)."""
        handled = asl.on_error(state, error, why, run.document, run.retries)
        if isinstance(handled, asl.Retry):
            delay = self._seconds(handled.delay_s) or 0.0
            run.retries = handled.retries
            not_before = int((time.time() + delay) * 1000)
            spent = int((run.spent() + delay) * 1000)
            run.save(self._store, {"notBefore": not_before, "inStep": None, "spentMs": spent})
            self._schedule(run.name, delay)
            return False
        if isinstance(handled, asl.Caught):
            run.document = handled.document
            run.retries = {}
            run.save(self._store, {"state": handled.next, "inStep": None})
            return None
        run.end(self._store, FAILED, error, why)
        return True

    def _timed_out(self, run: WorkflowRun) -> bool:
        run.end(self._store, TIMED_OUT, asl.TIMEOUT, "the execution timed out")
        return True

    def _seconds(self, asl_seconds: float | None) -> float | None:
        return None if asl_seconds is None else asl_seconds * self._scale
