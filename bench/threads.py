"""Threads (seed 003) on the embedded AWS, through the HTTP app:

- `aws_calls`: DynamoDB, KMS and decrypts for `thread.context` (POST context, working memory
  on, lastMessages 10) and `thread.messages` (POST two messages to a titled thread: the
  steady state), cold (fresh services: new clients, an empty data-key cache) and warm (the
  next call); `thread.messages.first_answer` (the first answer of an untitled thread, the
  workflow on: its title run is started, one StartExecution, and titled in the background).
  Every request includes the token lookup and its rate-limit write.
- `scaling.thread_context`: the context of one thread at 100, 1,000 and 10,000 messages.
  Target: items read stay near `lastMessages` (the latest N are one Query of N rows).

    python -m bench.threads      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench.support import (
    AwsCalls,
    CountingCipher,
    Env,
    cold_warm,
    embedded,
    scaling_row,
    timed,
)

SIZES = (100, 1_000, 10_000)
LAST_MESSAGES = 10
Request = tuple[str, str, Any]


def _seed(setup: Any, env: Env, thread_id: str, start: int, count: int) -> None:
    """Messages sealed as the service seals them, written with BatchWriteItem, then the
    thread's count moved past them."""
    from agent_memory.adapters.dynamodb.store import serialize
    from agent_memory.domain.threads import Message
    from agent_memory.persistence.threads import thread_pk

    repo = setup.threads.repo
    stored = repo.get(thread_id)
    assert stored is not None
    messages = [
        Message(f"msg_seed{n:06d}", "user" if n % 2 else "assistant", f"Message {n}.", n)
        for n in range(start, start + count)
    ]
    rows = repo.message_rows(stored.thread, start, messages)
    client = env.root.client("dynamodb")
    items = [{"PutRequest": {"Item": serialize(row)}} for row in rows]
    for first in range(0, len(items), 25):
        request: dict[str, Any] = {env.settings.table_name: items[first : first + 25]}
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
    client.update_item(
        TableName=env.settings.table_name,
        Key={"pk": {"S": thread_pk(thread_id)}, "sk": {"S": "META"}},
        UpdateExpression="SET #seq = :seq",
        ExpressionAttributeNames={"#seq": "seq"},
        ExpressionAttributeValues={":seq": {"N": str(start + count)}},
    )


def _settle(env: Env, limit_s: float = 60.0) -> None:
    """Wait until no execution of the learning state machine is running."""
    import time

    sfn = env.root.client("stepfunctions")
    arn = env.settings.state_machine_arn
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        running = sfn.list_executions(stateMachineArn=arn, statusFilter="RUNNING")
        if not running["executions"]:
            return
        time.sleep(0.05)


def run() -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    aws_calls: dict[str, Any] = {}
    scaling: list[dict[str, Any]] = []
    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        created = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        token = created.token.secret
        ana = Principal("ana", "bench", "member")
        agent = setup.agents.create(ana, "Bench")
        options = {"lastMessages": LAST_MESSAGES, "workingMemory": True}
        setup.agent_versions.edit_draft(ana, agent.id, {"options": options})
        setup.agent_versions.publish(ana, agent.id)
        setup.agent_versions.activate(ana, agent.id, 1)
        thread = setup.threads.create(ana, agent.id, None)
        setup.threads.save(ana, thread.id, [{"role": "user", "content": "Hello."}] * 20)
        setup.threads.put_working_memory(ana, thread.id, "# User\n- Name: Ana")
        # Titled (as the background title step does): a later save starts no run.
        setup.threads.repo.set_title(thread, "Bench", thread.created_at)
        base = f"/v1/threads/{thread.id}"
        turn = {"message": {"role": "user", "content": "And now?"}}
        pair = {
            "messages": [
                {"role": "user", "content": "What is next?"},
                {"role": "assistant", "content": "The report."},
            ]
        }
        operations: dict[str, Callable[[], Request]] = {
            "thread.context": lambda: ("POST", f"{base}/context", turn),
            "thread.messages": lambda: ("POST", f"{base}/messages", pair),
        }
        for name, prepare in operations.items():
            aws_calls[name] = cold_warm(env, token, prepare)

        def first_answer() -> Request:
            """A new untitled thread whose first answer is the request."""
            fresh = setup.threads.create(ana, agent.id, None)
            setup.threads.save(ana, fresh.id, [{"role": "user", "content": "Plan the report."}])
            answer = {"messages": [{"role": "assistant", "content": "Here is a plan."}]}
            return ("POST", f"/v1/threads/{fresh.id}/messages", answer)

        aws_calls["thread.messages.first_answer"] = cold_warm(
            env, token, first_answer, learning=True
        )
        # The title runs go on in moto's threads: let them end before timing anything else.
        _settle(env)

        # Context at scale: a new thread that grows to each size.
        big = setup.threads.create(ana, agent.id, None)
        calls = AwsCalls()
        ciphers: list[CountingCipher] = []

        def count(cipher: Any) -> CountingCipher:
            ciphers.append(CountingCipher(cipher))
            return ciphers[-1]

        services = env.services(calls, cipher=count, learning=False)
        headers = {"Authorization": f"Bearer {token}"}
        seeded = 0
        with TestClient(create_app(lambda: services)) as http:
            path = f"/v1/threads/{big.id}/context"
            for size in SIZES:
                _seed(setup, env, big.id, seeded, size - seeded)
                seeded = size
                http.post(path, json=turn, headers=headers)  # warm
                calls.reset()
                ciphers[0].opens = 0
                answer, spent = timed(lambda: http.post(path, json=turn, headers=headers))
                assert answer.status_code == 200, answer.text
                shot = calls.snapshot()
                scaling.append(
                    scaling_row(spent, shot, ciphers[0].opens, messages=size)
                    | {"returned": len(answer.json()["messages"])}
                )
    targets = {
        # The latest N, the thread row, the agent and version head, the notes, the token.
        "context_items_read_near_last_messages": all(
            r["items_read"] <= LAST_MESSAGES + 10 for r in scaling
        ),
        "context_items_read_flat_from_100_to_10000": scaling[-1]["items_read"]
        == scaling[0]["items_read"],
    }
    return {
        "aws_calls": aws_calls,
        "scaling": {"thread_context": scaling},
        "targets": targets,
        "note": "through HTTP (token lookup and rate-limit write included)",
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
