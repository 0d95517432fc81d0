"""A generic AWS fault injector for the embedded AWS, on one boto3 session.

It works at the HTTP level, where botocore's retry loop runs, so a fault can hit every
attempt of a call (the failure reaches the service) or only its first attempt (the SDK's
retry absorbs it), and a "lost response" can be modelled (the request is applied, then the
client times out and retries).

- `before-call.<service>.<Operation>` numbers the logical calls (one per API call made by
  the code), and `before-send` numbers their attempts (one per HTTP request).
- moto answers every request from a `before-send` handler registered on each botocore
  session (`botocore.handlers.BUILTIN_HANDLERS`). `install` replaces that handler on THIS
  session by a wrapper that either answers with an injected fault or asks moto: a faulted
  attempt never reaches moto, so a failed write cannot be applied behind our back.
- DynamoDB answers a retried `TransactWriteItems` with the same `ClientRequestToken` as a
  success without applying it again (for 10 minutes). moto does not; the wrapper does it
  for the transactions whose response it dropped, so the model stays faithful.

Clients copy their session's event handlers when they are created: install the injector
before the adapters build their clients.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ReadTimeoutError

Attempts = Literal["every", "first"]


class _Body:
    """The raw body of an injected HTTP response (what `AWSResponse.content` reads)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


@dataclass(frozen=True)
class Fault:
    """One kind of failure. `code` None is a read timeout; `applied` lets the request reach
    the server before the timeout (a lost response)."""

    name: str
    services: tuple[str, ...]  # botocore service ids: "dynamodb", "kms", "sfn"
    code: str | None = None
    status: int = 400
    attempts: Attempts = "every"
    applied: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    operations: tuple[str, ...] = ()  # limited to these operations, when given

    def fits(self, call: str) -> bool:
        service, operation = call.split(".", 1)
        return service in self.services and (not self.operations or operation in self.operations)


def canceled(*codes: str) -> dict[str, Any]:
    """The modelled part of a TransactionCanceledException: one reason per action."""
    return {"CancellationReasons": [{"Code": code} for code in codes]}


DYNAMODB = ("dynamodb",)
KMS = ("kms",)
ANY = ("dynamodb", "kms", "sfn")
TRANSACT = ("TransactWriteItems",)

# Failures the SDK gives up on (all 4 attempts of standard mode): the service sees them.
DDB_THROTTLED = Fault("ddb-throttled", DYNAMODB, "ProvisionedThroughputExceededException")
TX_CONDITION = Fault(
    "tx-condition",
    DYNAMODB,
    "TransactionCanceledException",
    extra=canceled("ConditionalCheckFailed"),
    operations=TRANSACT,
    attempts="first",
)
TX_CONFLICT = Fault(
    "tx-conflict",
    DYNAMODB,
    "TransactionCanceledException",
    extra=canceled("TransactionConflict"),
    operations=TRANSACT,
    attempts="first",
)
TX_THROTTLED = Fault(
    "tx-throttled",
    DYNAMODB,
    "TransactionCanceledException",
    extra=canceled("ThrottlingError"),
    operations=TRANSACT,
    attempts="first",
)
KMS_THROTTLED = Fault("kms-throttled", KMS, "ThrottlingException")
KMS_INTERNAL = Fault("kms-internal", KMS, "KMSInternalException", status=500)
KMS_TIMEOUT = Fault("kms-dependency-timeout", KMS, "DependencyTimeoutException", status=503)
SFN_THROTTLED = Fault("sfn-throttled", ("sfn",), "ThrottlingException")
TIMEOUT = Fault("timeout", ANY)
# Failures the SDK's retry absorbs: the service must not notice them.
DDB_THROTTLED_ONCE = Fault(
    "ddb-throttled-once", DYNAMODB, "ProvisionedThroughputExceededException", attempts="first"
)
KMS_INTERNAL_ONCE = Fault(
    "kms-internal-once", KMS, "KMSInternalException", status=500, attempts="first"
)
LOST_RESPONSE = Fault("lost-response", ANY, attempts="first", applied=True)


@dataclass
class Armed:
    """Where a fault strikes: the logical call number `call` (0-based, counted over the
    session), or inside a learning step: its `step_call`-th call (0-based, counted per
    attempt of the step) in the step's first attempt, or in `every_attempt` of the step;
    `onward` extends it to every later call of the same operation in that attempt."""

    fault: Fault
    call: int | None = None
    step: str | None = None
    step_call: int = 0
    every_attempt: bool = False
    onward: bool = False
    operation: str = ""
    hits: int = 0

    def matches(self, current: _Current) -> bool:
        if self.step is None:
            return self.call is None or self.call == current.call
        if current.step != self.step or not (self.every_attempt or current.step_attempt == 1):
            return False
        if self.onward and self.hits:
            # Engaged: the operation is down for the rest of the step, in every attempt
            # (a retried attempt may make fewer calls before it: warm caches).
            return current.name == self.operation
        return current.step_call == self.step_call


class _Current(threading.local):
    call: int = -1
    name: str = ""
    attempt: int = 0
    # Inside a learning step (set by `enter_step` in the thread that runs the step).
    step: str | None = None
    step_attempt: int = 0
    step_call: int = -1


class FaultInjector:
    """Counts the AWS calls made through one session and fails the ones it is told to."""

    def __init__(self) -> None:
        self.calls: list[str] = []  # "dynamodb.GetItem", one per logical call
        # (step, attempt of the step, index in the attempt, call) of calls made in steps
        self.step_calls: list[tuple[str, int, int, str]] = []
        self._step_attempts: dict[str, int] = {}
        self.attempts: list[str] = []  # one per HTTP request
        self.armed: list[Armed] = []
        self.paused = False
        self._lock = threading.Lock()
        self._current = _Current()
        self._replayed_tokens: set[str] = set()
        self._moto: Callable[..., Any] | None = None

    # -- set up ------------------------------------------------------------------------------

    def install(self, botocore_session: Any) -> None:
        from moto.core.models import botocore_stubber

        self._moto = botocore_stubber
        botocore_session.unregister("before-send", botocore_stubber)
        botocore_session.register("before-call", self._before_call)
        botocore_session.register("before-send", self._before_send)

    def arm(self, fault: Fault, call: int | None = None, **where: Any) -> Armed:
        armed = Armed(fault, call, **where)
        with self._lock:
            self.armed.append(armed)
        return armed

    def enter_step(self, step: str | None) -> None:
        """The calling thread now runs (an attempt of) a learning step; None: it left it."""
        current = self._current
        current.step = step
        current.step_call = -1
        if step is not None:
            with self._lock:
                self._step_attempts[step] = self._step_attempts.get(step, 0) + 1
                current.step_attempt = self._step_attempts[step]

    def reset(self) -> None:
        """Forget the calls seen and disarm every fault."""
        with self._lock:
            self.calls.clear()
            self.attempts.clear()
            self.step_calls.clear()
            self._step_attempts.clear()
            self.armed.clear()
            self._replayed_tokens.clear()

    # -- hooks ---------------------------------------------------------------------------------

    def _before_call(self, event_name: str, **_: Any) -> None:
        _, service, operation = event_name.split(".", 2)
        with self._lock:
            if self.paused:
                self._current.call = -1
                return
            current = self._current
            current.call = len(self.calls)
            current.name = f"{service}.{operation}"
            current.attempt = 0
            self.calls.append(current.name)
            if current.step is not None:
                current.step_call += 1
                entry = (current.step, current.step_attempt, current.step_call, current.name)
                self.step_calls.append(entry)

    def _before_send(self, request: Any, **kwargs: Any) -> Any:
        current = self._current
        current.attempt += 1
        with self._lock:
            fault = None if current.call < 0 else self._fault_for(current)
            if current.call >= 0:
                self.attempts.append(current.name)
            token = _request_token(request) if current.name.endswith("TransactWriteItems") else None
            if token is not None and token in self._replayed_tokens:
                # DynamoDB's idempotent transactions: the same token is answered, not applied.
                return _response(request, 200, {})
        if fault is None:
            return self._ask_moto(request, **kwargs)
        if fault.applied:
            self._ask_moto(request, **kwargs)
            if token is not None:
                with self._lock:
                    self._replayed_tokens.add(token)
        if fault.code is None:
            raise ReadTimeoutError(endpoint_url=request.url)
        body = {
            "__type": f"com.amazonaws.injected#{fault.code}",
            "message": f"injected {fault.name}",
        }
        return _response(request, fault.status, body | fault.extra)

    def _fault_for(self, current: _Current) -> Fault | None:
        for armed in self.armed:
            fault = armed.fault
            if not armed.matches(current):
                continue
            if not fault.fits(current.name):
                continue
            if fault.attempts == "first" and current.attempt > 1:
                continue
            armed.hits += 1
            return fault
        return None

    def _ask_moto(self, request: Any, **kwargs: Any) -> Any:
        assert self._moto is not None
        return self._moto(request=request, **kwargs)


def _request_token(request: Any) -> str | None:
    try:
        token = json.loads(request.body or b"{}").get("ClientRequestToken")
    except ValueError:
        return None
    return str(token) if token else None


def _response(request: Any, status: int, body: dict[str, Any]) -> AWSResponse:
    headers = {"Content-Type": "application/x-amz-json-1.0"}
    return AWSResponse(request.url, status, headers, _Body(json.dumps(body).encode()))
