"""The local runner's rows and step threads (adapters/local_orchestrator.py runs them).

- `WORKFLOW#<name>` / `RUN`: the execution's state; every change is conditional on its
  `version`, so a runner that lost track writes nothing.
- `WORKFLOW_OPEN` / `<startedAt>#<name>`: one per unfinished execution, removed in the
  write that ends it.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.adapters import asl
from agent_memory.persistence.keys import WORKFLOW_OPEN_PK, WORKFLOW_PREFIX
from agent_memory.ports import Absent, Action, Delete, Equals, Put, Store, Update
from agent_memory.ports.store import updated

log = logging.getLogger(__name__)

Task = Callable[[dict[str, Any]], Any]

NAME_TAKEN = "EXECUTION_NAME"
RUNNING, SUCCEEDED, FAILED, TIMED_OUT = "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT"
# Step Functions keeps a used name for 90 days; so does the run row.
RETENTION_S = 90 * 24 * 3600
_RUN_SK = "RUN"
_VERSION = "EXECUTION_VERSION"


def run_key(name: str) -> tuple[str, str]:
    return f"{WORKFLOW_PREFIX}{name}", _RUN_SK


def _open_sk(started_ms: int, name: str) -> str:
    return f"{started_ms:013d}#{name}"


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def started(name: str, payload: Mapping[str, Any], start_at: str) -> list[Action]:
    """The rows of a new execution; its name is taken when the first is refused."""
    now = time.time()
    started_ms = int(now * 1000)
    text = _json(dict(payload))
    pk, sk = run_key(name)
    row = {
        "pk": pk,
        "sk": sk,
        "name": name,
        "input": text,
        "document": text,
        "status": RUNNING,
        "state": start_at,
        "startedAt": started_ms,
        "spentMs": 0,
        "version": 0,
        "ttl": int(now) + RETENTION_S,
    }
    opened = {"pk": WORKFLOW_OPEN_PK, "sk": _open_sk(started_ms, name), "name": name}
    return [Put(row, Absent(name=NAME_TAKEN)), Put(opened)]


@dataclass
class WorkflowRun:
    """One execution as its row says, changed in memory and saved at each transition."""

    name: str
    row: dict[str, Any]
    document: Any
    retries: dict[int, int]
    # The time spent in earlier processes, and when this one took the execution up.
    spent_before: float = 0.0
    resumed_at: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, row: dict[str, Any]) -> WorkflowRun:
        retries = {int(k): int(v) for k, v in json.loads(row.get("retries") or "{}").items()}
        return cls(
            str(row["name"]),
            row,
            json.loads(row["document"]),
            retries,
            float(row.get("spentMs", 0)) / 1000,
        )

    @property
    def retry_count(self) -> int:
        return sum(self.retries.values())

    def spent(self) -> float:
        return self.spent_before + time.monotonic() - self.resumed_at

    def save(self, store: Store, changes: Mapping[str, Any], *also: Action) -> None:
        """Write `changes` with the state so far (and `also`), on condition that the row has
        not moved since this process read it."""
        saving = Update(
            *run_key(self.name),
            set={
                "document": _json(self.document),
                "retries": json.dumps({str(k): v for k, v in self.retries.items()}),
                "spentMs": int(self.spent() * 1000),
                **changes,
            },
            add={"version": 1},
            condition=Equals("version", int(self.row["version"]), name=_VERSION),
        )
        store.write([saving, *also])
        self.row = updated(self.row, Update(*run_key(self.name), set=changes, add={"version": 1}))

    def end(self, store: Store, status: str, error: str | None = None, cause: str = "") -> None:
        """Save the execution's end; its mark as unfinished goes in the same write."""
        changes: dict[str, Any] = {
            "status": status,
            "endedAt": int(time.time() * 1000),
            "inStep": None,
            "notBefore": None,
        }
        if status == SUCCEEDED:
            changes["output"] = _json(self.document)
        if error is not None:
            changes |= {"error": error, "cause": cause}
        opened = _open_sk(int(self.row["startedAt"]), self.name)
        self.save(store, changes, Delete(WORKFLOW_OPEN_PK, opened))
        log.info("workflow execution %s ended %s", self.name, status)

    def context(self, state: asl.State) -> dict[str, Any]:
        """The `$$` object: what the learning ASL reads from it, and a little more."""
        return {
            "Execution": {
                "Id": f"local:execution:local:{self.name}",
                "Name": self.name,
                "Input": json.loads(self.row["input"]),
                "StartTime": self.row["startedAt"],
            },
            "StateMachine": {"Name": "local"},
            "State": {"Name": state.name, "RetryCount": self.retry_count},
        }


class StepThread:
    """A worker's step thread: one over its time limit is left to finish on its own."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="workflow-step", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def call(self, task: Task, event: dict[str, Any], limit_s: float | None) -> tuple[str, Any]:
        """("ok", result), ("error", (error, cause)) or ("timed_out", None)."""
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
            return "error", (type(error).__name__, cause(type(error).__name__, str(error)))
        return "ok", box.get("result")

    def stop(self) -> None:
        """End the thread once its attempt under way (if any) returns."""
        self._jobs.put(None)


def cause(error_type: str, message: str) -> str:
    """A Cause as Lambda reports an unhandled error (describe_error reads it back)."""
    return json.dumps({"errorType": error_type, "errorMessage": message})
