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
import time
import uuid
from collections.abc import Callable
from typing import Any

from infra.local import aws

Task = Callable[[dict[str, Any]], Any]


class StepContext:
    """The Lambda context a handler reads (Powertools' logger reads its names)."""

    def __init__(self, function_name: str, timeout_s: float) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = aws.function_arn(function_name)
        self.memory_limit_in_mb = 1024
        self.aws_request_id = uuid.uuid4().hex
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


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
        return handler(event, StepContext(logical_id, timeout_s))

    return run
