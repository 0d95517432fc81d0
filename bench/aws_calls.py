"""AWS calls per API operation, with a cold and a warm key cache, through the real app.

Every operation is one HTTP request to the FastAPI app (TestClient) on the embedded AWS
(in-process moto); its DynamoDB, KMS and Step Functions calls are counted with botocore
event hooks on the services' boto3 session (the Encryption SDK's KMS client included) and
its model calls with a counting model catalog. Each request includes the bearer token's
lookup (one GetItem), as every request to the deployed API does.

- cold: the first call on freshly built services (new clients, an empty data-key cache:
  a Lambda cold start);
- warm: the second call on the same services.

`learning.turn` is what the learning workflow does for one completed turn: every call of
the step handlers (moto runs learning.asl.json and dispatches its Lambda tasks in this
process), the model calls, Lambda invocations and state transitions. Its StartExecution is
made by the API and counted in `session.turn`. Cold: the first turn after the step
handlers' services were built; warm: the second.

    python -m bench.aws_calls      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.counting import AwsCalls, CountingCatalog
from bench.rigs import Env, embedded
from bench.timing import served, timed

ENTRIES = 20
MEMORIES = 30
PHASES = ("cold", "warm")
TURNS = {
    "cold": "My budget is 1500 EUR. I prefer window seats.",
    "warm": "My hotel is the Grand Central. I prefer quiet rooms.",
}

Request = tuple[str, str, Any]  # method, path, JSON body


@dataclass
class Operation:
    name: str
    # Called before each phase, outside the measurement: the request to send.
    prepare: Callable[[str], Request]
    learns: bool = False


@dataclass
class Fixture:
    env: Env
    setup: Any
    ana: Any
    token: str
    agent: str
    memory_session: str
    turn_session: str


def _fixture(env: Env) -> Fixture:
    """An organization, a user, an agent whose memory and one session hold ENTRIES entries
    (and two keys to forget), a session for turns, and MEMORIES agent memories; built on
    services that are not measured."""
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal
    from agent_memory.domain.memory_objects import NewMemory
    from agent_memory.domain.session_memory import Remember

    setup = env.services(learning=False)
    setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
    user = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
    ana = Principal("ana", "bench", "member")
    agent = setup.agents.create(ana, "Bench").id
    memory_session = setup.sessions.create(ana, agent).id
    turn_session = setup.sessions.create(ana, agent).id
    keys = [f"k{n}" for n in range(ENTRIES)] + [f"old-{phase}" for phase in PHASES]
    for key in keys:
        view = setup.sessions.get(ana, memory_session)
        command = Remember(key, f"Fact {key}: the traveller likes trains.", "fact")
        setup.session_memory.command(ana, memory_session, view.head, view.revision, command)
    if hasattr(setup, "agent_memory"):
        for key in keys:
            version = int(setup.agent_memory.read(ana, agent).version)
            command = Remember(key, f"Agent fact {key}: prefers trains.", "preference")
            setup.agent_memory.command(ana, agent, version, command)
    for n in range(MEMORIES):
        new = NewMemory(category="fact", content=f"Memory {n}.", importance=(n % 10) / 10)
        setup.memory_objects.create(ana, new)
    return Fixture(env, setup, ana, user.token.secret, agent, memory_session, turn_session)


def _session_command(f: Fixture, command: dict[str, Any]) -> Request:
    view = f.setup.sessions.get(f.ana, f.memory_session)
    body = {"expected": view.head, "revision": view.revision, "command": command}
    return "POST", f"/v1/sessions/{f.memory_session}/memory", body


def _agent_memory_command(f: Fixture, command: dict[str, Any]) -> Request:
    version = int(f.setup.agent_memory.read(f.ana, f.agent).version)
    return "POST", f"/v1/agents/{f.agent}/memory", {"expected": version, "command": command}


def operations(f: Fixture) -> list[Operation]:
    memory = f"/v1/sessions/{f.memory_session}/memory"
    agent_memory = f"/v1/agents/{f.agent}/memory"
    return [
        Operation("session_memory.read", lambda _p: ("GET", memory, None)),
        Operation("session_memory.text", lambda _p: ("GET", f"{memory}/text", None)),
        Operation(
            "session_memory.remember",
            lambda p: _session_command(
                f,
                {
                    "_tag": "Remember",
                    "key": f"new-{p}",
                    "content": "Trains, not planes.",
                    "kind": "fact",
                },
            ),
        ),
        Operation(
            "session_memory.forget",
            lambda p: _session_command(f, {"_tag": "Forget", "key": f"old-{p}"}),
        ),
        Operation(
            "session_memory.configure",
            lambda p: _session_command(
                f, {"_tag": "Configure", "use": True if p == "cold" else None}
            ),
        ),
        Operation(
            "session.turn",
            lambda p: (
                "POST",
                f"/v1/sessions/{f.turn_session}/turns",
                {"items": [{"role": "user", "content": TURNS[p]}]},
            ),
            learns=True,
        ),
        Operation("agent_memory.read", lambda _p: ("GET", agent_memory, None)),
        Operation(
            "agent_memory.remember",
            lambda p: _agent_memory_command(
                f,
                {
                    "_tag": "Remember",
                    "key": f"am-{p}",
                    "content": "Prefers trains.",
                    "kind": "preference",
                },
            ),
        ),
        Operation(
            "agent_memory.forget",
            lambda p: _agent_memory_command(f, {"_tag": "Forget", "key": f"old-{p}"}),
        ),
        Operation("agent_memories.list", lambda _p: ("GET", "/v1/agent_memories?limit=10", None)),
        Operation(
            "agent_memories.recall",
            lambda _p: ("POST", "/v1/agent_memories/recall", {"limit": 10}),
        ),
    ]


class Workflow:
    """The learning workflow's side: step handlers pinned to counted services."""

    def __init__(self, env: Env) -> None:
        from agent_memory.adapters.choice import model_catalog
        from bench.dispatch import dispatch_hook
        from infra.local import aws

        self.env = env
        self.calls = AwsCalls()
        self.models = CountingCatalog(model_catalog(env.settings))
        self.tasks = [0]
        self.task_ms: dict[str, float] = {}
        self.sfn = env.root.client("stepfunctions")
        dispatch = dispatch_hook(self.tasks)

        def hook(logical_id: str, event: dict[str, Any]) -> Any:
            result, spent = timed(lambda: dispatch(logical_id, event), this_thread=True)
            self.task_ms[logical_id] = self.task_ms.get(logical_id, 0.0) + spent.own_ms
            return result

        self._remove_hook = aws.add_invoke_hook(hook)

    def cold_start(self) -> None:
        from agent_memory.bootstrap import step_services

        step_services.use(self.env.services(self.calls, models=self.models))

    def reset(self) -> set[str]:
        self.calls.reset()
        self.models.reset()
        self.tasks[0] = 0
        self.task_ms = {}
        return self._executions()

    def _executions(self) -> set[str]:
        arn = self.env.local.state_machine_arn
        return {
            e["executionArn"] for e in self.sfn.list_executions(stateMachineArn=arn)["executions"]
        }

    def wait(self) -> None:
        from bench.learning import _wait

        _wait(self.sfn, self.env.local.state_machine_arn)

    def snapshot(self, before: set[str]) -> dict[str, Any]:
        started = sorted(self._executions() - before)
        transitions = sum(self._transitions(arn) for arn in started)
        return {
            **self.calls.snapshot(),
            "model": self.models.calls,
            "lambda_invocations": self.tasks[0],
            "state_transitions": transitions,
            "executions": len(started),
            "prompt_chars": self.models.prompt_chars,
            "reply_chars": self.models.reply_chars,
            # Each step's own time (outside moto), summed over this turn's tasks.
            "task_own_ms": {k: round(v, 1) for k, v in sorted(self.task_ms.items())},
        }

    def _transitions(self, arn: str) -> int:
        """States entered (what Step Functions Standard bills), from the history."""
        history = self.sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
        return sum(1 for e in history if str(e.get("type", "")).endswith("StateEntered"))

    def close(self) -> None:
        from agent_memory.bootstrap import step_services

        self._remove_hook()
        step_services.reset()


def _measure(
    env: Env, f: Fixture, op: Operation, workflow: Workflow
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Cold then warm: one request each on fresh services; the workflow's share when the
    operation starts learning."""
    from fastapi.testclient import TestClient

    from agent_memory.adapters.choice import model_catalog
    from agent_memory.api.app import create_app

    calls = AwsCalls()
    models = CountingCatalog(model_catalog(env.settings))
    services = env.services(calls, models=models)
    app = create_app(lambda: services)
    if op.learns:
        workflow.cold_start()
    report: dict[str, Any] = {}
    learning: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {f.token}"}
    with TestClient(served(app), raise_server_exceptions=False) as http:
        for phase in PHASES:
            method, path, body = op.prepare(phase)
            before = workflow.reset()
            calls.reset()
            models.reset()
            answer, spent = timed(
                lambda m=method, p=path, b=body: http.request(m, p, json=b, headers=headers)
            )
            report[phase] = {
                **calls.snapshot(),
                "model": models.calls,
                "status": answer.status_code,
                "ms": round(spent.ms, 1),
                # Outside moto; the workflow may start meanwhile, so this is a floor.
                "own_ms": round(max(0.0, spent.own_ms), 1),
            }
            if answer.status_code >= 300:
                report[phase]["error"] = answer.text[:300]
            if op.learns:
                workflow.wait()
                learning[phase] = workflow.snapshot(before)
    return report, (learning or None)


def run() -> dict[str, Any]:
    with embedded() as env:
        f = _fixture(env)
        workflow = Workflow(env)
        results: dict[str, Any] = {}
        try:
            for op in operations(f):
                report, learning = _measure(env, f, op, workflow)
                results[op.name] = report
                if learning is not None:
                    results["learning.turn"] = learning
        finally:
            workflow.close()
    missing = sorted(name for name, r in results.items() if "missing" in r)
    failed = sorted(
        name
        for name, r in results.items()
        if any(isinstance(v, dict) and v.get("status", 200) >= 300 for v in r.values())
    )
    return {
        **results,
        "note": (
            "per HTTP request through the app (token lookup included); cold = fresh services "
            "(new clients, empty data-key cache), warm = the second call; learning.turn = the "
            "workflow's calls for one completed turn (its StartExecution is in session.turn)"
        ),
        "entries_in_session": ENTRIES,
        "not_measured": missing,
        "failed": failed,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
