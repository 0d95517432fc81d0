"""`ports.Orchestrator` over Step Functions (AWS, and moto's executor locally).

An Express machine does not refuse a used name, so the adapter claims it with a conditional
row first: a repeated start reports `Execution.started == False` on either machine type.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.persistence.keys import EXECUTION_NAME_PREFIX, EXECUTION_NAME_SK
from agent_memory.ports import AbsentOrLessThan, Clock, Delete, Execution, Put, Store

# A name is kept as long as Standard remembers names.
NAME_KEPT_S = 90 * 24 * 3600

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

    def __init__(
        self,
        client: Any,
        state_machine_arn: str,
        *,
        claims: Store,
        clock: Clock,
    ) -> None:
        self._client = client
        self._arn = state_machine_arn
        self._claims = claims
        self._clock = clock

    def start(self, name: str, payload: Mapping[str, Any]) -> Execution:
        if not self._claim(name):
            return Execution(name=name, started=False)
        return self._start(name, payload)

    def _claim(self, name: str) -> bool:
        """Whether this start may go: the name is new, or its refused start gave it back."""
        now = self._clock.now_ms() // 1000
        # The table's TTL removes the row in time; until then, a lapsed one is taken over.
        row = {"pk": claim_pk(name), "sk": EXECUTION_NAME_SK, "ttl": now + NAME_KEPT_S}
        try:
            self._claims.write([Put(row, AbsentOrLessThan("ttl", now, name="name-claim"))])
        except WriteConflict as conflict:
            if conflict.condition == "name-claim":
                return False
            raise Unavailable("the workflow name could not be claimed; retry shortly") from None
        return True

    def _start(self, name: str, payload: Mapping[str, Any]) -> Execution:
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
            self._release(name)
            if code in _TRANSIENT or code.endswith("LimitExceeded"):
                raise Unavailable("the workflow service is busy; retry shortly") from error
            raise
        except BotoCoreError as error:
            self._release(name)
            raise Unavailable("the workflow service could not be reached; retry shortly") from error
        return Execution(name=name, started=True)

    def _release(self, name: str) -> None:
        """Step Functions refused the start: the name is free again."""
        with contextlib.suppress(Unavailable, WriteConflict):
            self._claims.write([Delete(claim_pk(name), EXECUTION_NAME_SK)])


def claim_pk(name: str) -> str:
    return f"{EXECUTION_NAME_PREFIX}{name}"
