"""`ports.Orchestrator` on one machine: a durable runner of an ASL state machine.

Executions are rows in the Store (the same one the service writes), so they survive a
restart or a `kill -9`:

- `WORKFLOW#<name>` / `RUN`: the input, the current state and the state input so far, the
  retries made in it, whether an attempt of a Task is under way (`inStep`), when the next
  attempt may run (`notBefore`), the time spent, a short event history, the end. Every
  change is conditional on the row's `version`, so a runner that lost track writes nothing.
- `WORKFLOW_OPEN` / `<startedAt>#<name>`: one row per unfinished execution, removed in the
  write that ends it: `run()` resumes each of them from its last completed state.

`start` claims the name with a conditional Put: a used name is `started=False`, as Step
Functions refuses a name it has seen (the run rows expire after 90 days, as its names do).
A Task attempt that a stopped process left under way counts as failed with
`Lambda.Unknown`, the error of a crashed Lambda runtime, so the ASL's Retry decides (the
learning steps are idempotent: a saved model answer is reused, ApplyLearning is
conditional on the read position). A Task longer than its `TimeoutSeconds` fails with
`States.Timeout` (the attempt's thread is left to finish on its own and its answer is
dropped, as a Lambda outlives its task's timeout); an execution longer than the machine's
`TimeoutSeconds` ends `TIMED_OUT` with no catcher, as in Step Functions. Time spent while
the process was down does not count against it. A bounded number of executions may be
open at once; past it `start` is `Unavailable` (nothing written), like a throttled
StartExecution. Decisions: docs/decisions.md, "make run keeps its data".
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import queue
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.adapters import asl
from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.ports import Absent, Delete, Equals, Execution, KeyRange, Put, Store, Update

log = logging.getLogger(__name__)

Task = Callable[[dict[str, Any]], Any]

RUN_SK = "RUN"
OPEN_PK = "WORKFLOW_OPEN"
NAME_TAKEN = "EXECUTION_NAME"
VERSION = "EXECUTION_VERSION"
RUNNING, SUCCEEDED, FAILED, TIMED_OUT = "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT"
# Step Functions keeps a used name for 90 days; so does the run row.
RETENTION_S = 90 * 24 * 3600
# Step Functions' rule for names: 1 to 80 characters, none of these.
_NAME = re.compile(r"[^\s<>{}\[\]?*\"#%\\^|~`$&,;:/]{1,80}")
# A row the runner could not advance (the store was busy) is tried again after this.
_BUSY_PAUSE_S = 1.0
# At most this many events are kept on a row (a retried step adds two per attempt).
_MAX_EVENTS = 64


@dataclass
class _Run:
    """One execution as its row says, changed in memory and saved at each transition."""

    name: str
    row: dict[str, Any]
    document: Any = None
    retries: dict[int, int] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, row: dict[str, Any]) -> _Run:
        retries = {int(k): int(v) for k, v in json.loads(row.get("retries") or "{}").items()}
        return cls(
            str(row["name"]),
            row,
            json.loads(row["document"]),
            retries,
            json.loads(row.get("events") or "[]"),
        )

    @property
    def state(self) -> str:
        return str(self.row["state"])

    @property
    def retry_count(self) -> int:
        return sum(self.retries.values())


class LocalOrchestrator:
    """Runs `definition` for every started execution, in `workers` threads of this process.

    `tasks` maps each Task state's `Resource` to the callable that runs it (it gets the
    state's `Parameters` filled in and returns its result; an exception is the task's
    error, named by its class as Lambda names it). `time_scale` multiplies every duration
    of the definition (tests run the checked-in intervals faster); `backlog` bounds the
    open executions. Call `run()` to resume unfinished executions and start working, and
    `close()` to stop.
    """

    def __init__(
        self,
        store: Store,
        definition: Mapping[str, Any],
        tasks: Mapping[str, Task],
        *,
        workers: int = 1,
        backlog: int = 1000,
        time_scale: float = 1.0,
        machine_name: str = "local",
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._machine = asl.Machine.parse(definition)
        missing = sorted(self._machine.tasks() - set(tasks))
        if missing:
            raise asl.DefinitionError(f"no task runs the resources {', '.join(missing)}")
        self._store = store
        self._tasks = dict(tasks)
        self._workers = max(1, workers)
        self._backlog = backlog
        self._scale = time_scale
        self._machine_name = machine_name
        self._wall = wall
        self._cond = threading.Condition()
        self._due: list[tuple[float, int, str]] = []  # (monotonic due time, order, name)
        self._queued: set[str] = set()
        self._order = itertools.count()
        self._open: set[str] = set()  # unfinished executions this process works on
        self._stopping = False
        self._threads: list[threading.Thread] = []
        self._local = threading.local()  # each worker's step thread

    # -- the port --------------------------------------------------------------------------

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution:
        if not _NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a valid execution name")
        text = json.dumps(dict(payload), separators=(",", ":"))
        with self._cond:
            if len(self._open) >= self._backlog or name in self._open:
                raise Unavailable("the local workflow runner is busy; retry shortly")
            self._open.add(name)  # reserved before the write, so a full backlog writes nothing
        now = self._wall()
        started_ms = int(now * 1000)
        try:
            self._store.write(
                [
                    Put(
                        {
                            "pk": _pk(name),
                            "sk": RUN_SK,
                            "name": name,
                            "input": text,
                            "document": text,
                            "status": RUNNING,
                            "state": self._machine.start_at,
                            "startedAt": started_ms,
                            "spentMs": 0,
                            "version": 0,
                            "ttl": int(now) + RETENTION_S,
                        },
                        Absent(name=NAME_TAKEN),
                    ),
                    Put({"pk": OPEN_PK, "sk": _open_sk(started_ms, name), "name": name}),
                ]
            )
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

    # -- running -----------------------------------------------------------------------------

    def run(self) -> int:
        """Resume every unfinished execution and start the workers; returns how many
        executions were resumed."""
        resumed = 0
        after: str | None = None
        while True:
            page = self._store.query(OPEN_PK, KeyRange(prefix=""), limit=500, after=after)
            for record in page.records:
                name = str(record["name"])
                with self._cond:
                    if name in self._open:
                        continue  # started by this process since it was built
                    self._open.add(name)
                self._schedule(name, 0.0)
                resumed += 1
            if page.next is None:
                break
            after = page.next
        with self._cond:
            self._stopping = False
            for number in range(self._workers - len(self._threads)):
                thread = threading.Thread(target=self._work, name=f"workflow-{number}", daemon=True)
                thread.start()
                self._threads.append(thread)
        return resumed

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop taking work; a step under way is left to the next `run()` if it does not
        end within `timeout_s` (it is resumed as a step cut short)."""
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

    def describe(self, name: str) -> dict[str, Any] | None:
        """An execution as Step Functions' DescribeExecution would tell it, with its events."""
        row = self._store.get(_pk(name), RUN_SK)
        if row is None:
            return None
        described = {
            "name": name,
            "status": row["status"],
            "state": row["state"],
            "input": json.loads(row["input"]),
            "startedAt": row["startedAt"],
            "endedAt": row.get("endedAt"),
            "events": json.loads(row.get("events") or "[]"),
        }
        if "output" in row:
            described["output"] = json.loads(row["output"])
        if "error" in row:
            described["error"] = row["error"]
            described["cause"] = row.get("cause", "")
        return described

    # -- the workers -------------------------------------------------------------------------

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
        row = self._store.get(_pk(name), RUN_SK)
        if row is None or row["status"] != RUNNING:
            return True
        run = _Run.of(row)
        resumed_at = time.monotonic()
        spent_before = float(row.get("spentMs", 0)) / 1000

        def spent() -> float:
            return spent_before + time.monotonic() - resumed_at

        limit = self._seconds(self._machine.timeout_s)
        while True:
            if self._stopping:
                self._schedule(name, 0.0)  # a later run() of this process picks it up
                return False
            left = None if limit is None else limit - spent()
            if left is not None and left <= 0:
                self._end(run, spent(), TIMED_OUT, asl.TIMEOUT, "the execution timed out")
                return True
            state = self._machine.states[run.state]
            if "inStep" in run.row:  # a process stopped while this attempt ran
                cause = _cause(asl.CRASHED, "the local runner stopped during this step")
                outcome: tuple[str, Any] = ("error", (asl.CRASHED, cause))
            else:
                wait = float(run.row.get("notBefore", 0)) / 1000 - self._wall()
                if wait > 0:
                    self._schedule(name, wait)
                    return False
                outcome = self._execute(run, state, left, spent)
            if outcome[0] == "timed_out":
                self._end(run, spent(), TIMED_OUT, asl.TIMEOUT, "the execution timed out")
                return True
            if outcome[0] == "ok":
                if self._moved(run, state, outcome[1], spent()):
                    return True
                continue
            error, cause = outcome[1]
            decision = asl.after_error(state, error, cause, run.document, run.retries)
            if decision.retrier is not None:
                delay = self._seconds(decision.delay_s) or 0.0
                run.retries[decision.retrier] = run.retries.get(decision.retrier, 0) + 1
                self._event(run, "retry", error=error, delayS=decision.delay_s)
                changes = {"notBefore": int((self._wall() + delay) * 1000), "inStep": None}
                self._save(run, spent() + delay, changes)
                self._schedule(name, delay)
                return False
            if decision.next is not None:
                self._event(run, "caught", error=error, next=decision.next)
                run.document, run.retries = decision.document, {}
                self._save(run, spent(), {"state": decision.next, "inStep": None})
                continue
            self._end(run, spent(), FAILED, error, cause)
            return True

    def _execute(
        self, run: _Run, state: asl.State, left: float | None, spent: Callable[[], float]
    ) -> tuple[str, Any]:
        """One state's work: ("ok", output), ("error", (error, cause)) or ("timed_out", _)."""
        context = self._context(run, state)
        if state.type == "Pass":
            value = run.document
            if state.parameters is not None:
                value = asl.parameters(state.parameters, run.document, context)
            if state.result is not None:
                value = state.result
            return "ok", asl.put(run.document, state.result_path, value)
        if state.type in ("Succeed", "Fail"):
            return "ok", run.document
        event = (
            run.document
            if state.parameters is None
            else asl.parameters(state.parameters, run.document, context)
        )
        self._event(run, "started", state=state.name, attempt=run.retry_count)
        self._save(run, spent(), {"inStep": run.retry_count})
        step_limit = self._seconds(state.timeout_s)
        limits = [t for t in (step_limit, left) if t is not None]
        step = getattr(self._local, "step", None) or _StepThread()
        self._local.step = step
        result = step.call(self._tasks[str(state.resource)], event, min(limits) if limits else None)
        if result[0] == "timed_out":
            step.stop()  # left to finish its attempt; the next attempt gets a new thread
            self._local.step = None
            if left is not None and (step_limit is None or left <= step_limit):
                return "timed_out", None
            return "error", (asl.TIMEOUT, "")
        if result[0] == "error":
            return result
        try:
            value = json.loads(json.dumps(result[1]))
        except (TypeError, ValueError) as error:
            return "error", (asl.RUNTIME, _cause(asl.RUNTIME, f"the result is not JSON: {error}"))
        return "ok", asl.put(run.document, state.result_path, value)

    def _moved(self, run: _Run, state: asl.State, output: Any, spent: float) -> bool:
        """Save a state's success: the next state, or the execution's end (True)."""
        if state.type == "Fail":
            self._end(run, spent, FAILED, state.error or "States.Fail", state.cause or "")
            return True
        if state.type == "Succeed" or state.next is None:
            run.document = output
            self._end(run, spent, SUCCEEDED)
            return True
        if state.type == "Task":
            self._event(run, "succeeded", state=state.name)
        run.document, run.retries = output, {}
        self._save(run, spent, {"state": state.next, "inStep": None, "notBefore": None})
        return False

    # -- rows --------------------------------------------------------------------------------

    def _save(self, run: _Run, spent: float, changes: Mapping[str, Any]) -> None:
        self._store.write([self._update(run, spent, changes)])
        self._saved(run, changes)

    def _end(
        self, run: _Run, spent: float, status: str, error: str | None = None, cause: str = ""
    ) -> None:
        self._event(run, "ended", status=status, **({"error": error} if error else {}))
        changes: dict[str, Any] = {
            "status": status,
            "endedAt": int(self._wall() * 1000),
            "inStep": None,
            "notBefore": None,
        }
        if status == SUCCEEDED:
            changes["output"] = json.dumps(run.document, separators=(",", ":"))
        if error is not None:
            changes |= {"error": error, "cause": cause}
        opened = _open_sk(int(run.row["startedAt"]), run.name)
        self._store.write([self._update(run, spent, changes), Delete(OPEN_PK, opened)])
        self._saved(run, changes)
        log.info("workflow execution %s ended %s", run.name, status)

    def _update(self, run: _Run, spent: float, changes: Mapping[str, Any]) -> Update:
        version = int(run.row["version"])
        return Update(
            _pk(run.name),
            RUN_SK,
            set={
                "document": json.dumps(run.document, separators=(",", ":")),
                "retries": json.dumps({str(k): v for k, v in run.retries.items()}),
                "events": json.dumps(run.events[-_MAX_EVENTS:], separators=(",", ":")),
                "spentMs": int(spent * 1000),
                **changes,
            },
            add={"version": 1},
            condition=Equals("version", version, name=VERSION),
        )

    @staticmethod
    def _saved(run: _Run, changes: Mapping[str, Any]) -> None:
        run.row["version"] = int(run.row["version"]) + 1
        for key, value in changes.items():
            if value is None:
                run.row.pop(key, None)
            else:
                run.row[key] = value

    def _event(self, run: _Run, kind: str, **details: Any) -> None:
        run.events.append({"at": int(self._wall() * 1000), "type": kind, **details})

    def _context(self, run: _Run, state: asl.State) -> dict[str, Any]:
        """The `$$` object: what the learning ASL reads from it, and a little more."""
        return {
            "Execution": {
                "Id": f"local:execution:{self._machine_name}:{run.name}",
                "Name": run.name,
                "Input": json.loads(run.row["input"]),
                "StartTime": run.row["startedAt"],
            },
            "StateMachine": {"Name": self._machine_name},
            "State": {"Name": state.name, "RetryCount": run.retry_count},
        }

    def _seconds(self, asl_seconds: float | None) -> float | None:
        return None if asl_seconds is None else asl_seconds * self._scale


class _StepThread:
    """The thread a worker runs its step attempts in, so that one over its time limit can
    be left to finish on its own (the worker then takes a new one). It is kept between
    attempts: its store connection and caches stay warm."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="workflow-step", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def call(self, task: Task, event: dict[str, Any], limit_s: float | None) -> tuple[str, Any]:
        box: dict[str, Any] = {}
        done = threading.Event()

        def attempt() -> None:
            try:
                box["result"] = task(event)
            except BaseException as error:  # a step's SystemExit is its failure, not ours
                box["error"] = error
            finally:
                done.set()

        self._jobs.put(attempt)
        if not done.wait(limit_s):
            return "timed_out", None
        if "error" in box:
            error = box["error"]
            return "error", (type(error).__name__, _cause(type(error).__name__, str(error)))
        return "ok", box.get("result")

    def stop(self) -> None:
        """End the thread once its attempt under way (if any) returns."""
        self._jobs.put(None)


def _cause(error_type: str, message: str) -> str:
    """A Cause as Lambda reports an unhandled error (describe_error reads it back)."""
    return json.dumps({"errorType": error_type, "errorMessage": message})


def _pk(name: str) -> str:
    return f"WORKFLOW#{name}"


def _open_sk(started_ms: int, name: str) -> str:
    return f"{started_ms:013d}#{name}"
