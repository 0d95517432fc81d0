"""`ports.Orchestrator` over Step Functions (AWS, and moto's executor locally).

A Standard state machine refuses a second execution with a name it has seen in the last 90
days (finished or not): a repeated start of the same learning is therefore a no-op, which
`Execution.started == False` reports. An asynchronous Express machine does not refuse a used
name (AWS starts a second run), so before template.yaml switches to Express this adapter must
claim the name with a conditional row first (docs/decisions.md, "Waiting executions and the
workflow type"); moto refuses the name for both types, so its tests cannot tell.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agent_memory.domain.errors import Unavailable
from agent_memory.ports import Execution

_TRANSIENT = {
    "ThrottlingException",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "InternalServerError",
    "InternalFailure",
    "RequestTimeout",
    "RequestTimeoutException",
}


class StepFunctionsOrchestrator:
    """Starts executions of one state machine; the payload is the execution's input."""

    def __init__(self, client: Any, state_machine_arn: str) -> None:
        self._client = client
        self._arn = state_machine_arn

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution:
        try:
            self._client.start_execution(
                stateMachineArn=self._arn,
                name=name,
                input=json.dumps(dict(payload), separators=(",", ":")),
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == "ExecutionAlreadyExists":
                return Execution(name=name, started=False)
            if code in _TRANSIENT or code.endswith("LimitExceeded"):
                raise Unavailable("the workflow service is busy; retry shortly") from error
            raise
        except BotoCoreError as error:
            raise Unavailable("the workflow service could not be reached; retry shortly") from error
        return Execution(name=name, started=True)
