"""The learning state machine of `make run`, as template.yaml deploys it.

The definition is the template's (`DefinitionUri`, its `DefinitionSubstitutions` filled in
with the functions' ARNs), read at start: retries, catches and timeouts come from the ASL
file, never from here. Each Task's ARN is run in this process by the Lambda handler the
template names for that function (`functions/learning_steps/handler.py`), with a Lambda
context whose remaining time is the function's `Timeout`, so a step runs exactly the code
that runs in AWS. The runner itself is `agent_memory.adapters.local_orchestrator`.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from agent_memory.observability import serving
from infra.local import aws

Task = Callable[[dict[str, Any]], Any]


def learning_workflow() -> tuple[str, dict[str, Any], dict[str, Task]]:
    """(name, definition, tasks by Resource) of the template's learning state machine."""
    name, text = aws.state_machine_definition()
    definition: dict[str, Any] = json.loads(text)
    handlers = aws.lambda_handlers()
    functions = aws.template()["Resources"]
    default_timeout = aws.template().get("Globals", {}).get("Function", {}).get("Timeout", 3)
    tasks: dict[str, Task] = {}
    for state in definition["States"].values():
        resource = state.get("Resource")
        if state.get("Type") != "Task" or resource in tasks:
            continue
        logical_id = str(resource).rsplit(":", 1)[-1]
        if logical_id not in handlers:
            raise RuntimeError(
                f"the state machine names {resource}, not a function of the template"
            )
        timeout = float(functions[logical_id]["Properties"].get("Timeout", default_timeout))
        tasks[str(resource)] = _in_process(logical_id, handlers[logical_id], timeout)
    return name, definition, tasks


def _in_process(logical_id: str, dotted: str, timeout_s: float) -> Task:
    module_name, _, attribute = dotted.rpartition(".")
    handler = getattr(importlib.import_module(module_name), attribute)

    def run(event: dict[str, Any]) -> Any:
        with serving(logical_id):
            return handler(event, aws.LambdaContext(logical_id, timeout_s))

    return run


# A schedule's `rate(<n> <unit>)` (EventBridge's form) in seconds.
_RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}


def scheduled_ticks() -> list[tuple[str, float, Task]]:
    """(logical id, period in seconds, task) of every function the template runs on a
    `Schedule` event (e.g. BudgetTickFunction), each run by its own handler in process."""
    handlers = aws.lambda_handlers()
    ticks: list[tuple[str, float, Task]] = []
    for logical_id, resource in aws.template()["Resources"].items():
        properties = resource.get("Properties", {})
        for event in (properties.get("Events") or {}).values():
            if event.get("Type") != "Schedule":
                continue
            count, unit = str(event["Properties"]["Schedule"]).removeprefix("rate(")[:-1].split()
            timeout = float(properties.get("Timeout", 3))
            task = _in_process(logical_id, handlers[logical_id], timeout)
            ticks.append((logical_id, float(count) * _RATE_UNITS[unit.rstrip("s")], task))
    return ticks


class Ticker:
    """The template's schedules in this process: each task runs at start (a restart after
    a period began wakes it at once), then every period; a failed tick waits for the next."""

    def __init__(self, ticks: list[tuple[str, float, Task]]) -> None:
        self._ticks = ticks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="schedules", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _loop(self) -> None:
        due = {logical_id: 0.0 for logical_id, _period, _task in self._ticks}
        while not self._stop.is_set():
            now = time.monotonic()
            for logical_id, period, task in self._ticks:
                if now >= due[logical_id]:
                    due[logical_id] = now + period
                    try:
                        task({"source": "aws.events", "detail-type": "Scheduled Event"})
                    except Exception:  # a tick that failed is retried by the next one
                        logging.getLogger(__name__).warning("%s: the tick failed", logical_id)
            self._stop.wait(min(due.values(), default=now + 60) - time.monotonic())
