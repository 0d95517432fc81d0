"""Session memory on the embedded AWS (in-process moto), through the HTTP app:

- DynamoDB requests (by operation) and KMS calls per GET memory, per command (Remember,
  Forget, Configure, Refresh) and per memory text, counted with botocore event hooks; the
  HTTP figures include the bearer token's lookup (one GetItem per request);
- decrypts of the memory text over a 10,000-entry session: no more than it renders + 1.

Targets: a read <= 3 DynamoDB requests in <= 2 round trips (`round_trips`: the operations
of each, timed with a 20 ms latency per call) and 0 KMS calls with a warm key cache; a command
<= 3 DynamoDB requests with one write (a TransactWriteItems; Configure, one action, is a
conditional UpdateItem), besides the request's rate-limit count (one UpdateItem).

    python -m bench.session_memory      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from bench.counting import Calls, CountingCipher, RoundTrips
from bench.rigs import load_entries

ENTRIES = 20
LARGE = 10_000
SEED = 7
ADMIN_TOKEN = "amk_admin_bench-token-0123456789"
# The rate-limit count of each request (service/limits.py: one UpdateItem in the table).
RATE_COUNT = 1


def _measure(calls: Calls, cipher: CountingCipher, action: Callable[[], Any]) -> dict[str, Any]:
    calls.reset()
    cipher.opens = 0
    started = time.perf_counter()
    answer = action()
    elapsed = (time.perf_counter() - started) * 1000
    assert answer.status_code < 300, answer.text
    dynamodb = calls.of("dynamodb")
    return {
        "status": answer.status_code,
        "dynamodb_requests": sum(dynamodb.values()),
        "by_operation": dynamodb,
        "kms_calls": sum(calls.of("kms").values()),
        "decrypts": cipher.opens,
        "ms": round(elapsed, 1),
        "answer": answer.json(),
    }


COMMANDS: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "Remember",
        {
            "_tag": "Remember",
            "key": "budget",
            "content": "The trip budget is 1500 EUR.",
            "kind": "fact",
        },
    ),
    ("Forget", {"_tag": "Forget", "key": "budget"}),
    ("Configure", {"_tag": "Configure", "generate": False}),
    ("Refresh", {"_tag": "Refresh"}),
)


@dataclass
class Rig:
    """The served app on the embedded AWS, its calls counted, as one user of one organization."""

    http: Any
    headers: dict[str, str]
    calls: Calls
    cipher: CountingCipher
    trips: RoundTrips
    services: Any
    session: Any
    table: str

    def post(self, url: str, body: Any) -> Any:
        return self.http.post(url, json=body, headers=self.headers)

    def get(self, url: str) -> Any:
        return self.http.get(url, headers=self.headers)

    def command(self, base: str, command: dict[str, Any]) -> Any:
        view = self.get(base).json()["session"]
        body = {"expected": view["head"], "revision": view["revision"], "command": command}
        return lambda: self.post(f"{base}/memory", body)


@contextmanager
def _rig() -> Iterator[Rig]:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters, build_services
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import SERVICE_ADMIN, hash_token
    from infra.local.aws import embedded_aws, provision

    with embedded_aws() as session:
        local = provision(session)
        settings = load_settings(
            {**local.environment(), "MEMORY_ADMIN_TOKEN_SHA256": hash_token(ADMIN_TOKEN)}
        )
        calls = Calls()
        calls.install(session._session)
        trips = RoundTrips(session._session)
        adapters = aws_adapters(settings, session)
        cipher = CountingCipher(adapters.cipher)
        services = build_services(settings, replace(adapters, cipher=cipher, orchestrator=None))
        # Learning is measured by bench/learning.py; here a Refresh only decides to start it.
        services.sessions.learning = None
        services.session_memory.learning = None
        services.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        user = services.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        headers = {"Authorization": f"Bearer {user.token.secret}"}
        with TestClient(create_app(lambda: services)) as http:
            yield Rig(http, headers, calls, cipher, trips, services, session, settings.table_name)


def _session_with_entries(rig: Rig) -> tuple[str, str]:
    """A session of ENTRIES remembered facts: (its agent, its path)."""
    agent = rig.post("/v1/agents", {"name": "Bench"}).json()["agent"]["id"]
    sid = rig.post("/v1/sessions", {"agentId": agent}).json()["session"]["id"]
    base = f"/v1/sessions/{sid}"
    rig.post(f"{base}/turns", {"items": [{"role": "user", "content": "Plan a trip."}]})
    for n in range(ENTRIES):
        fact = {"_tag": "Remember", "key": f"k{n}", "content": f"Fact {n}.", "kind": "fact"}
        rig.command(base, fact)()
    rig.get(f"{base}/memory")  # warms the key cache for this session's entries
    return agent, base


def _reads(rig: Rig, base: str) -> tuple[dict[str, Any], dict[str, Any]]:
    read = _measure(rig.calls, rig.cipher, lambda: rig.get(f"{base}/memory"))
    text = _measure(rig.calls, rig.cipher, lambda: rig.get(f"{base}/memory/text"))
    # Round trips of the same reads (a known token: its organization's row comes in the
    # token's batch, the rate-limit count beside it).
    read["round_trips"] = rig.trips.of(lambda: rig.get(f"{base}/memory"))[1]
    text["round_trips"] = rig.trips.of(lambda: rig.get(f"{base}/memory/text"))[1]
    return read, text


def _commands(rig: Rig, base: str) -> dict[str, Any]:
    commands: dict[str, Any] = {}
    for name, command in COMMANDS:
        commands[name] = _measure(rig.calls, rig.cipher, rig.command(base, command))
        commands[name].pop("answer")
    return commands


def _large_text(rig: Rig, agent: str) -> dict[str, Any]:
    big = rig.post("/v1/sessions", {"agentId": agent}).json()["session"]["id"]
    dynamodb = rig.session.client("dynamodb")
    load_entries(rig.services, dynamodb, rig.table, big, range(LARGE), seed=SEED)
    rig.get(f"/v1/sessions/{big}/memory/text")  # warm
    return _measure(rig.calls, rig.cipher, lambda: rig.get(f"/v1/sessions/{big}/memory/text"))


def _targets(
    read: dict[str, Any], text: dict[str, Any], commands: dict[str, Any], large: dict[str, Any]
) -> dict[str, bool]:
    # Every request also counts itself against its token's rate limit (one UpdateItem): not
    # the command's write.
    writes = {"TransactWriteItems", "UpdateItem", "PutItem"}
    commands_ok = all(
        c["dynamodb_requests"] - RATE_COUNT <= 3
        and sum(n for op, n in c["by_operation"].items() if op in writes) - RATE_COUNT <= 1
        for c in commands.values()
    )
    return {
        "read_at_most_3_requests_0_kms": read["dynamodb_requests"] <= 3 and read["kms_calls"] == 0,
        "read_and_text_at_most_2_round_trips": all(
            len(r["round_trips"]) <= 2 for r in (read, text)
        ),
        "command_at_most_3_requests_one_write": commands_ok,
        "remember_forget_one_transact_write_items": all(
            commands[name]["by_operation"].get("TransactWriteItems") == 1
            for name in ("Remember", "Forget")
        ),
        "text_decrypts_at_most_rendered_plus_one": large["decrypts"]
        <= len(large["answer"]["keys"]) + 1,
    }


def run() -> dict[str, Any]:
    with _rig() as rig:
        agent, base = _session_with_entries(rig)
        read, text = _reads(rig, base)
        commands = _commands(rig, base)
        large_text = _large_text(rig, agent)
    targets = _targets(read, text, commands, large_text)
    rendered = len(large_text["answer"]["keys"])
    for measured in (read, text, large_text):
        measured.pop("answer")
    return {
        "note": (
            "through HTTP: each request includes the token's read (with its organization's "
            "row, one BatchGetItem, once the token is known) and its rate-limit count"
        ),
        "entries": ENTRIES,
        "read_memory": read,
        "memory_text": text,
        "commands": commands,
        "memory_text_10000_entries": {**large_text, "entries": LARGE, "rendered": rendered},
        "targets": targets,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
