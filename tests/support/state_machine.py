"""Drive the real learning state machine on the embedded AWS (moto executes the ASL and
dispatches its Lambda tasks to functions/learning_steps in this process).

- The step handlers are pinned to the test's services (`step_services.use`), built with a
  `Catalog` of scripted models and the `NotesPool` test pool.
- Retry intervals are the checked-in ASL's (2 s, 4 s, 8 s); the executor's sleep is replaced
  by a recorder so a test sees the backoff without waiting for it.
- `Faults` injects AWS errors through botocore's `before-call` event, on clients built after
  it is registered (DynamoDB, KMS, Step Functions): nothing reaches moto for a faulted call.
"""

from __future__ import annotations

import functools
import importlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from agent_memory.api.contracts.base import execution_json
from agent_memory.bootstrap import aws_adapters, build_services, step_services
from agent_memory.service.learning_pools import PoolRef
from agent_memory.service.learning_runs import execution_name
from agent_memory.wiring import Adapters
from infra.local import aws as local_aws_module
from tests.support.learning_doubles import MODEL, Catalog, NotesPool, ScriptedModel

ORG = "o-1"
DEADLINE_S = 20.0


@dataclass
class Fault:
    event: str  # "dynamodb.TransactWriteItems", "kms.GenerateDataKey", "sfn.StartExecution"
    code: str
    times: int = 1
    status: int = 400
    extra: dict[str, Any] = field(default_factory=dict)
    when: Callable[[dict[str, Any]], bool] | None = None
    hits: int = 0


class Faults:
    """AWS errors on chosen calls, and a count of every call made (for the benchmark too)."""

    def __init__(self) -> None:
        self.rules: list[Fault] = []
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, event: str, code: str, **options: Any) -> Fault:
        fault = Fault(event, code, **options)
        self.rules.append(fault)
        return fault

    def install(self, botocore_session: Any) -> None:
        botocore_session.register("before-call", self._before_call)

    def _before_call(self, event_name: str, params: dict[str, Any], **_: Any) -> Any:
        _, service, operation = event_name.split(".", 2)
        name = f"{service}.{operation}"
        with self._lock:
            self.calls[name] = self.calls.get(name, 0) + 1
            for fault in self.rules:
                if fault.event != name or fault.hits >= fault.times:
                    continue
                if fault.when is not None and not fault.when(params):
                    continue
                fault.hits += 1
                body = {"Error": {"Code": fault.code, "Message": f"injected {fault.code}"}}
                response = AWSResponse("https://injected", fault.status, {}, None)
                return response, body | fault.extra
        return None


def canceled(*codes: str) -> dict[str, Any]:
    """The extra body of a TransactionCanceledException with these reasons."""
    return {"CancellationReasons": [{"Code": code} for code in codes]}


@dataclass
class Workflow:
    services: Any
    pool: NotesPool
    model: ScriptedModel
    sfn: Any
    machine_arn: str
    waits: list[float]
    faults: Faults
    adapters: Adapters

    @property
    def learning(self) -> Any:
        return self.services.learning

    def new_pool(self, pool_id: str = "s-1") -> PoolRef:
        ref = PoolRef("session", ORG, pool_id)
        self.pool.create(ref)
        return ref

    def turn(self, ref: PoolRef, *texts: str, start: bool = True) -> int:
        upto = self.pool.add_turn(ref, *texts)
        if start:
            assert self.learning.start(ref, upto=upto, reason="turn") == "started"
        return upto

    def arn(self, name: str) -> str:
        return self.machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"

    def wait(self, ref: PoolRef, upto: int) -> dict[str, Any]:
        """The finished Step Functions execution of a turn's learning."""
        return self.wait_arn(self.arn(execution_name(ref, upto)))

    def wait_arn(self, arn: str) -> dict[str, Any]:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            described: dict[str, Any] = self.sfn.describe_execution(executionArn=arn)
            if described["status"] != "RUNNING":
                return described
            time.sleep(0.02)
        raise AssertionError(f"{arn} still running after {DEADLINE_S} s")

    def wait_all(self) -> list[dict[str, Any]]:
        listed = self.sfn.list_executions(stateMachineArn=self.machine_arn)["executions"]
        return [self.wait_arn(e["executionArn"]) for e in listed]

    def history(self, arn: str) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.sfn.get_execution_history(executionArn=arn)["events"]
        return events

    def task_states(self, arn: str) -> list[str]:
        """The task states entered, in order (a retried task appears once per attempt)."""
        names = []
        for event in self.history(arn):
            if event["type"] == "LambdaFunctionScheduled":
                names.append(json.loads(event["lambdaFunctionScheduledEventDetails"]["input"]))
        return [n["context"]["state"] for n in names]

    def executions(self, ref: PoolRef) -> list[dict[str, Any]]:
        """The pool's runs as its learning route shows them."""
        return [execution_json(run) for run in self.learning.executions(ref)]


@contextmanager
def workflow(
    local_aws: Any, settings: Any, monkeypatch: Any, *, model: str = MODEL, notes: bool = True
) -> Iterator[Workflow]:
    """A Workflow over a fresh embedded AWS; waits for every execution before it ends.
    `notes` replaces the session pool with the test pool; `model` names the scripted model."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    session, local = local_aws
    waits: list[float] = []
    monkeypatch.setattr(retrier_decl, "time", SimpleNamespace(sleep=waits.append))
    faults = Faults()
    faults.install(session._session)
    scripted = ScriptedModel(name=model)
    adapters = replace(aws_adapters(settings, session), models=Catalog({model: scripted}))
    services = build_services(settings, adapters)
    pool = NotesPool(adapters.store)
    if notes:
        services.learning.register(pool)
    step_services.use(services)
    local_aws_module.add_invoke_hook(cached_dispatch(), first=False)
    flow = Workflow(
        services,
        pool,
        scripted,
        session.client("stepfunctions"),
        local.state_machine_arn,
        waits,
        faults,
        adapters,
    )
    try:
        yield flow
    finally:
        faults.rules.clear()
        try:
            flow.wait_all()
        finally:
            step_services.reset()
            local_aws_module.clear_invoke_hooks()


@pytest.fixture
def wf(local_aws: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workflow]:
    """The state machine over a fresh embedded AWS, with the test pool and model."""
    with workflow(local_aws, settings, monkeypatch) as flow:
        yield flow


@functools.cache
def _handlers() -> dict[str, Callable[[dict[str, Any], Any], Any]]:
    handlers = {}
    for logical_id, dotted in local_aws_module.lambda_handlers().items():
        module_name, _, attribute = dotted.rpartition(".")
        handlers[logical_id] = getattr(importlib.import_module(module_name), attribute)
    return handlers


def cached_dispatch() -> Callable[[str, dict[str, Any]], Any]:
    """An invoke hook doing what infra/local/aws.py's `_dispatch` does, with the template's
    handler map read once instead of on every task (it parses template.yaml: ~0.1 s)."""
    handlers = _handlers()

    def hook(logical_id: str, event: dict[str, Any]) -> Any:
        return handlers[logical_id](event, local_aws_module.LambdaContext(logical_id))

    return hook


class ServiceException(Exception):
    """Reported by the in-process Lambda as `Lambda.ServiceException` (a retried error)."""


ServiceException.__name__ = "Lambda.ServiceException"


def crash_after(function: str, times: int = 1) -> Callable[[str, dict[str, Any]], Any]:
    """An invoke hook: run `function`'s real handler, then fail as the Lambda service does
    when a response is lost (the step's work is done, the state machine retries it)."""
    from functions.learning_steps import handler

    real = {
        "LoadEvidenceFunction": handler.load_evidence,
        "CallModelFunction": handler.call_model,
        "ApplyLearningFunction": handler.apply_learning,
    }[function]
    crashed = [0]

    def hook(logical_id: str, event: dict[str, Any]) -> Any:
        if logical_id != function or crashed[0] >= times:
            return None
        crashed[0] += 1
        real(event, local_aws_module.LambdaContext(logical_id))
        raise ServiceException("the response was lost")

    return hook
