"""Durable learning through the whole local workflow, with a zero-latency model:

turn (SessionService.turn: items stored, StartExecution) -> moto executes learning.asl.json ->
LoadEvidence -> CallModel -> ApplyLearning in this process (the session pool, DynamoDB and
KMS on the embedded AWS) -> memory learned.

- `turns_per_s`: learned turns per second, `SESSIONS` sessions learning at once, `ROUNDS`
  turns each (every round waits for its runs to end before the next turn of a session).
- `calls_per_turn`: AWS calls of the learning itself per learned turn (the StartExecution of
  the turn request and every call of the step handlers), counted with botocore event hooks
  on the clients' sessions (the Encryption SDK's KMS client included); `turn_request` is
  what storing the turn costs besides. Warm: one turn learns before the measurement starts.

Moto's executor dispatches each task through `infra.local.aws.add_invoke_hook`; the hook here
resolves the template's handler map once (the default dispatch parses template.yaml on every
task, ~0.1 s, which no deployed run pays).

    python -m bench.learning      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from bench.counting import Calls
from bench.rigs import learning_rig

SESSIONS = 8
ROUNDS = 4
DEADLINE_S = 60.0


@dataclass
class ZeroLatencyModel:
    """Answers at once: one `remember` per user item, citing it."""

    name: str = "bench/zero-latency"
    calls: int = 0

    def propose(self, request: Any) -> Any:
        from agent_memory.ports import ModelReply

        self.calls += 1
        changes = [
            {
                "op": "remember",
                "key": f"note-{item.id}",
                "content": item.content[:200],
                "kind": "fact",
                "sources": [item.id],
            }
            for item in request.input.items
            if item.role == "user"
        ]
        return ModelReply(text=json.dumps({"changes": changes}), model=self.name)


@dataclass
class OneModel:
    model: Any

    def resolve(self, name: str | None) -> Any:
        return self.model if name else None


def _wait(sfn: Any, machine_arn: str) -> list[str]:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        listed = sfn.list_executions(stateMachineArn=machine_arn)["executions"]
        if all(e["status"] != "RUNNING" for e in listed):
            return [str(e["status"]) for e in listed]
        time.sleep(0.05)
    raise RuntimeError(f"executions still running after {DEADLINE_S} s")


def _per_turn(calls: Calls, turns: int, services: tuple[str, ...]) -> dict[str, float]:
    return {s: round(calls.total(s) / turns, 2) for s in services}


def _turn(api: Any, ana: Any, session_id: str, n: int) -> str:
    from agent_memory.domain.sessions import NewItem

    text = f"Trip note {n}: the budget for day {n} is {100 * n} EUR."
    return str(api.sessions.turn(ana, session_id, [NewItem("user", text)]).learning)


def _rounds(rig: Any, ana: Any, measured: list[str], rounds: int) -> tuple[Calls, float]:
    """`rounds` turns in every measured session, each round's runs finished before the next:
    (the turn requests' own calls, the seconds it took)."""
    api_calls = rig.api_calls
    request_calls = Calls()
    started = time.perf_counter()
    for n in range(1, rounds + 1):
        for session_id in measured:
            before = dict(api_calls.counts)
            assert _turn(rig.api, ana, session_id, n) == "started"
            for key, value in api_calls.counts.items():
                if not key.startswith("sfn."):
                    delta = value - before.get(key, 0)
                    request_calls.counts[key] = request_calls.counts.get(key, 0) + delta
        rig.executions()
    return request_calls, time.perf_counter() - started


def run(sessions: int = SESSIONS, rounds: int = ROUNDS) -> dict[str, Any]:
    from agent_memory.domain.identity import Principal

    model = ZeroLatencyModel()
    with learning_rig(OneModel(model)) as rig:
        api = rig.api
        admin = Principal(None, None, "service-admin")
        api.identity.create_org(admin, "bench", "Bench")
        api.identity.create_user(admin, "bench", "ana", "Ana", "member")
        ana = Principal("ana", "bench", "member")
        agent = api.agents.create(ana, "Trip planner")
        ids = [api.sessions.create(ana, agent.id).id for _ in range(sessions + 1)]
        warm, measured = ids[0], ids[1:]
        assert _turn(api, ana, warm, 0) == "started"
        rig.executions()
        rig.reset()
        model.calls = 0
        request_calls, elapsed = _rounds(rig, ana, measured, rounds)
        learned = sum(
            1
            for session_id in measured
            for e in rig.steps.learning.executions(_pool(session_id))
            if e.status == "succeeded" and e.applied
        )
        workflow = Calls()
        workflow.counts = dict(rig.step_calls.counts)
        workflow.counts["sfn.StartExecution"] = rig.api_calls.counts.get("sfn.StartExecution", 0)
        tasks = rig.tasks[0]
    return {
        "benchmark": "learning",
        "sessions": sessions,
        "turns": sessions * rounds,
        "learned_turns": learned,
        "seconds": round(elapsed, 3),
        "turns_per_s": round(learned / elapsed, 1),
        "calls_per_turn": {
            "dynamodb": round(workflow.total("dynamodb") / learned, 2),
            "kms": round(workflow.total("kms") / learned, 2),
            "stepfunctions": round(workflow.total("sfn") / learned, 2),
            "model": round(model.calls / learned, 2),
        },
        "workflow_by_operation": {
            k: round(v / learned, 2) for k, v in sorted(workflow.counts.items())
        },
        "lambda_tasks_per_turn": round(tasks / learned, 2),
        "turn_request_per_turn": _per_turn(request_calls, sessions * rounds, ("dynamodb", "kms")),
    }


def _pool(session_id: str) -> Any:
    from agent_memory.service.learning_pools import PoolRef

    return PoolRef("session", "bench", session_id)


if __name__ == "__main__":
    import os

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    print(json.dumps(run(), indent=2))
