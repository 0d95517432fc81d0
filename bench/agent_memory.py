"""Agent memory on the embedded AWS (in-process moto), through the HTTP app, next to
bench/session_memory.py's figures:

- AWS calls per read (GET memory, memory/text, memory/log, learning) and per command
  (Remember, Forget), cold (fresh services: new clients, an empty data-key cache) and warm
  (the second call); every request includes the bearer token's lookup (one GetItem);
- what the agent-learning hook adds to a turn request: the same turn measured with and
  without the hook, when the turn teaches (a run is started) and when it teaches nothing
  (a review session: the skipped execution and the read position in one transaction);
- helper-model calls per turn through the real learning workflow (moto runs
  learning.asl.json and dispatches its tasks to the step handlers in this process): at most
  one per turn; and the step handlers' AWS calls per learned turn.

Targets: GET memory and memory/text <= 2 DynamoDB requests (token + one Query), log and
learning <= 3 (token + the agent's row + one Query), all with 0 KMS calls warm; a command
<= 3 DynamoDB requests with one TransactWriteItems and 0 KMS calls steady (a command answers
every entry, so its second call decrypts the entry the first one sealed under a new data
key); at most one helper call per turn.

    python -m bench.agent_memory      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.counting import AwsCalls
from bench.rigs import Env, embedded

ENTRIES = 20
SESSIONS = 3
ROUNDS = 3
HELPER = "openai/bench-helper"

Request = tuple[str, str, Any]


@dataclass
class Helper:
    """A zero-latency helper: one procedure per user item, citing it; counts its calls."""

    name: str = HELPER
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def propose(self, request: Any) -> Any:
        from agent_memory.ports import ModelReply

        with self._lock:
            self.calls += 1
        changes = [
            {
                "op": "remember",
                "key": f"way-{item.id}",
                "content": f"Work this way: {item.content[:100]}",
                "kind": "procedure",
                "sources": [item.id],
            }
            for item in request.input.items
            if item.role == "user"
        ]
        return ModelReply(text=json.dumps({"changes": changes}), model=self.name)


@dataclass
class Catalog:
    helper: Helper

    def resolve(self, name: str | None) -> Any:
        return self.helper if name == HELPER else None


def _snapshot(calls: AwsCalls, answer: Any) -> dict[str, Any]:
    shot = calls.snapshot()
    report = {k: shot[k] for k in ("dynamodb", "kms", "stepfunctions", "by_operation")}
    report["status"] = answer.status_code
    if answer.status_code >= 300:
        report["error"] = answer.text[:300]
    return report


def _cold_warm(
    env: Env, catalog: Catalog, token: str, prepare: Callable[[], Request], *, hook: bool = True
) -> dict[str, Any]:
    """One request on fresh services (cold), then the same request twice more (warm: the
    second call; steady: the third, once data keys sealed by the first call are cached)."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    calls = AwsCalls()
    services = env.services(calls, models=catalog)
    if not hook:
        services.sessions.agent_learning = None
    report: dict[str, Any] = {}
    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as http:
        for phase in ("cold", "warm", "steady"):
            method, path, body = prepare()
            calls.reset()
            answer = http.request(
                method, path, json=body, headers={"Authorization": f"Bearer {token}"}
            )
            report[phase] = _snapshot(calls, answer)
    return report


def _wait(env: Env) -> None:
    from bench.learning import _wait as wait_all

    wait_all(env.root.client("stepfunctions"), env.local.state_machine_arn)


@dataclass
class World:
    """One organization's agent with ENTRIES procedures, its owner's token, and the learning
    steps' services counted apart."""

    env: Env
    catalog: Catalog
    helper: Helper
    setup: Any
    ana: Any
    agent: str
    token: str
    step_calls: AwsCalls

    def measure(self, request: Callable[[], Request], hook: bool = True) -> dict[str, Any]:
        return _cold_warm(self.env, self.catalog, self.token, request, hook=hook)


@contextmanager
def _world() -> Iterator[World]:
    from agent_memory.bootstrap import step_services
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal
    from agent_memory.domain.session_memory import Remember
    from bench.dispatch import dispatch_hook
    from infra.local import aws

    helper = Helper()
    catalog = Catalog(helper)
    with embedded() as env:
        setup = env.services(models=catalog)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        token = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        setup.org_settings.patch(SERVICE_ADMIN, "bench", {"helperModel": HELPER})
        ana = Principal("ana", "bench", "member")
        agent = setup.agents.create(ana, "Bench").id
        for n in range(ENTRIES):
            command = Remember(f"k{n}", f"Procedure {n}: run the tests first.", "procedure")
            setup.agent_memory.command(ana, agent, n, command)
        remove_hook = aws.add_invoke_hook(dispatch_hook([0]))
        step_calls = AwsCalls()
        step_services.use(env.services(step_calls, models=catalog))
        try:
            yield World(env, catalog, helper, setup, ana, agent, token.token.secret, step_calls)
        finally:
            remove_hook()
            step_services.reset()


def _reads(w: World) -> dict[str, Any]:
    base = f"/v1/agents/{w.agent}"
    paths = {"read": "/memory", "text": "/memory/text", "log": "/memory/log"}
    paths["learning"] = "/learning"
    return {
        name: w.measure(lambda url=f"{base}{path}": ("GET", url, None))
        for name, path in paths.items()
    }


def _commands(w: World) -> dict[str, Any]:
    base = f"/v1/agents/{w.agent}"
    counter = iter(range(1_000))

    def version() -> int:
        return int(w.setup.agent_memory.read(w.ana, w.agent).version)

    def remember() -> Request:
        body = {
            "_tag": "Remember",
            "key": f"new-{next(counter)}",
            "content": "Prefer small commits.",
            "kind": "preference",
        }
        return "POST", f"{base}/memory", {"expected": version(), "command": body}

    def forget() -> Request:
        body = {"_tag": "Forget", "key": f"k{next(counter)}"}
        return "POST", f"{base}/memory", {"expected": version(), "command": body}

    return {"Remember": w.measure(remember), "Forget": w.measure(forget)}


def _turn_requests(w: World) -> dict[str, Any]:
    def turn_of(session_id: str) -> Callable[[], Request]:
        items = {"items": [{"role": "user", "content": "Always write a test first."}]}
        return lambda: ("POST", f"/v1/sessions/{session_id}/turns", items)

    chat = w.setup.sessions.create(w.ana, w.agent).id
    review = w.setup.sessions.create(w.ana, w.agent, kind="review").id
    turns = {
        "teaches": w.measure(turn_of(chat)),
        "teaches_without_hook": w.measure(turn_of(chat), hook=False),
        "skipped_review": w.measure(turn_of(review)),
        "skipped_without_hook": w.measure(turn_of(review), hook=False),
    }
    _wait(w.env)
    return turns


def _through_the_workflow(w: World) -> dict[str, Any]:
    """SESSIONS x ROUNDS turns learned through the workflow: calls per learned turn."""
    from agent_memory.domain.sessions import NewItem

    sessions = [w.setup.sessions.create(w.ana, w.agent).id for _ in range(SESSIONS)]
    w.helper.calls = 0
    w.step_calls.reset()
    started = 0
    for n in range(ROUNDS):
        for session_id in sessions:
            item = NewItem("user", f"Always check step {n}.")
            started += w.setup.sessions.turn(w.ana, session_id, [item]).agent_learning == "started"
        _wait(w.env)
    learned = SESSIONS * ROUNDS
    workflow = w.step_calls.snapshot()
    return {
        "helper_calls_per_turn": round(w.helper.calls / learned, 2),
        "workflow_calls_per_turn": {
            service: round(workflow[service] / learned, 2)
            for service in ("dynamodb", "kms", "stepfunctions")
        },
        "turns_through_the_workflow": learned,
        "turns_started": started,
    }


def _hook_adds(turns: dict[str, Any]) -> dict[str, Any]:
    def added(name: str, baseline: str) -> dict[str, int]:
        warm, base_warm = turns[name]["warm"], turns[baseline]["warm"]
        return {s: warm[s] - base_warm[s] for s in ("dynamodb", "kms", "stepfunctions")}

    return {
        "teaches": added("teaches", "teaches_without_hook"),
        "skipped": added("skipped_review", "skipped_without_hook"),
    }


def _targets(reads: dict[str, Any], commands: dict[str, Any], helper_calls: float) -> Any:
    most = {"read": 2, "text": 2, "log": 3, "learning": 3}
    return {
        "reads_one_query_0_kms_warm": all(
            r["warm"]["dynamodb"] <= most[name] and r["warm"]["kms"] == 0
            for name, r in reads.items()
        ),
        "command_at_most_3_requests_one_transact_write_items_0_kms_steady": all(
            c["steady"]["dynamodb"] <= 3
            and c["steady"]["kms"] == 0
            and c["steady"]["by_operation"].get("dynamodb.TransactWriteItems") == 1
            for c in commands.values()
        ),
        "at_most_one_helper_call_per_turn": helper_calls <= 1,
    }


def run() -> dict[str, Any]:
    with _world() as w:
        reads = _reads(w)
        commands = _commands(w)
        turns = _turn_requests(w)
        workflow = _through_the_workflow(w)
    return {
        "benchmark": "agent_memory",
        "note": (
            "through HTTP: each request includes the token lookup (one GetItem); cold = fresh "
            "services (new clients, empty data-key cache), warm = the second call"
        ),
        "entries": ENTRIES,
        "reads": reads,
        "commands": commands,
        "turn_requests": turns,
        "agent_hook_adds_per_turn": _hook_adds(turns),
        **workflow,
        "targets": _targets(reads, commands, workflow["helper_calls_per_turn"]),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
