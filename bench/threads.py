"""Threads (seed 003) on the embedded AWS, through the HTTP app:

- `aws_calls`: DynamoDB, KMS and decrypts for `thread.context` (POST context, working memory
  on, lastMessages 10) and `thread.messages` (POST two messages to a titled thread: the
  steady state), cold (fresh services: new clients, an empty data-key cache) and warm (the
  next call); `thread.messages.first_answer` (the first answer of an untitled thread, the
  workflow on: its title run is started, one StartExecution, and titled in the background).
  Every request includes the token lookup and its rate-limit write.
- `turn`: a whole thread turn (context, two messages saved, the observer run each save
  starts with `bufferOnIdle`, which indexes for semantic recall once a batch of
  `lastMessages` is reached), per component, and `idle_flush` (the schedule's flush of the
  conversation's unindexed tail once it goes idle, shared by its turns): what
  bench/cost_model.py prices as `cost.per_million_turns_usd.by_turn.thread`.
- `scaling.thread_context`: the context of one thread at 100, 1,000 and 10,000 messages.
  Target: items read stay near `lastMessages` (the latest N are one Query of N rows).

    python -m bench.threads      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench.counting import CountingEmbedder, CountingVectors
from bench.rigs import Env, at_sizes, cold_warm, embedded, learning_rig
from bench.timing import served, timed

SIZES = (100, 1_000, 10_000)
LAST_MESSAGES = 10
# The thread turn the cost model prices (bench/cost_model.py, by_turn.thread): a
# conversation of this many turns and the warm-up's, 22 messages, as a LoCoMo session (5,882
# messages in 272 sessions: 21.6), then idle (the flush indexes what no batch did).
THREAD_TURNS = 10
TURN_OPTIONS: dict[str, Any] = {
    "lastMessages": LAST_MESSAGES,
    "workingMemory": True,
    "semanticRecall": True,
    "observationalMemory": {"observation": {"bufferOnIdle": True}},
}
Request = tuple[str, str, Any]

TURN = {"message": {"role": "user", "content": "And now?"}}


def _seed(setup: Any, env: Env, thread_id: str, start: int, count: int) -> None:
    """Messages sealed as the service seals them, written with BatchWriteItem, then the
    thread's count moved past them."""
    from agent_memory.adapters.dynamodb.store import serialize
    from agent_memory.domain.threads import Message
    from agent_memory.persistence.keys import thread_pk

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


@dataclass
class _Turns:
    """A served thread of one person with the turn options, and its calls counted apart."""

    rig: Any
    http: Any
    headers: dict[str, str]
    base: str
    embedder: CountingEmbedder
    vectors: CountingVectors

    def phase(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One request and the runs it starts, counted apart: the request's calls (with the
        model, embedder and index calls made while it runs) and the runs'."""
        rig, embedder, vectors = self.rig, self.embedder, self.vectors
        before = rig.reset()
        rig.models.reset()
        embedder.reset()
        vectors.reset()
        answer, spent = timed(lambda: self.http.post(path, json=body, headers=self.headers))
        assert answer.status_code in (200, 201), answer.text
        request = rig.api_calls.snapshot()
        request_side = (rig.models.calls, embedder.calls, vectors.queries)
        runs = [e for e in rig.executions() if e["executionArn"] not in before]
        return {
            "request": _recall_counts(request, embedder, vectors)
            | _model_counts(rig.models)
            | {"own_ms": round(max(0.0, spent.own_ms), 1), "requests": 1},
            "runs": runs,
            "request_side": request_side,
        }

    def background(self, runs: list[dict[str, Any]]) -> dict[str, Any]:
        rig = self.rig
        return (
            _recall_counts(rig.step_calls.snapshot(), self.embedder, self.vectors)
            | _model_counts(rig.models)
            | {
                "lambda_invocations": rig.tasks[0],
                "task_own_ms": round(rig.task_ms[0], 1),
                "executions": len(runs),
                "succeeded": sum(1 for e in runs if e["status"] == "SUCCEEDED"),
                "state_transitions": sum(rig.transitions(e["executionArn"]) for e in runs),
            }
        )

    def turn(self, n: int, shots: dict[str, list[dict[str, Any]]]) -> None:
        said = f"Turn {n}: what should I pack for the trip to Lisbon on day {n}?"
        asked = self.phase(f"{self.base}/context", {"message": {"role": "user", "content": said}})
        # The context runs nothing in the background: all it calls is the request's.
        assert not asked["runs"], asked["runs"]
        shots["context"].append(asked["request"])
        pair = [
            {"role": "user", "content": said},
            {"role": "assistant", "content": f"For day {n}: a light jacket and shoes."},
        ]
        saved = self.phase(f"{self.base}/messages", {"messages": pair})
        # A save calls no model, embedder or index itself: those calls are the runs'.
        assert saved["request_side"] == (0, 0, 0) or saved["runs"], saved
        request = saved["request"]
        for name in (*_MODEL_FIELDS, *_RECALL_FIELDS):
            request[name] = 0
        shots["messages"].append(request)
        shots["background"].append(self.background(saved["runs"]))


@contextmanager
def _served_thread() -> Iterator[_Turns]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    embedder, vectors = CountingEmbedder(), CountingVectors()
    with learning_rig(embedder=embedder, vectors=vectors) as rig:
        api = rig.api
        api.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        created = api.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        headers = {"Authorization": f"Bearer {created.token.secret}"}
        ana = Principal("ana", "bench", "member")
        agent = api.agents.create(ana, "Bench")
        api.agent_versions.edit_draft(ana, agent.id, {"options": TURN_OPTIONS})
        api.agent_versions.publish(ana, agent.id)
        api.agent_versions.activate(ana, agent.id, 1)
        thread = api.threads.create(ana, agent.id, None)
        api.threads.repo.set_title(thread, "Bench", thread.created_at)
        with TestClient(served(create_app(lambda: api)), raise_server_exceptions=False) as http:
            yield _Turns(rig, http, headers, f"/v1/threads/{thread.id}", embedder, vectors)


def thread_turns(turns: int = THREAD_TURNS) -> dict[str, Any]:
    """`turns` whole thread turns (seed 003) as an agent drives one, the workflow on: POST
    context (working memory, semantic recall: one embedding and one query), POST the two
    messages of the turn (user and assistant: saved, then embedded by the recall step), and
    the observer with `bufferOnIdle` (one run when the turn ends). Every request and the
    background runs are counted apart, per turn; warm (one turn before the measurement)."""
    names = ("context", "messages", "background")
    with _served_thread() as t:
        t.turn(-1, {name: [] for name in names})  # the first turn is not measured
        shots: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for n in range(turns):
            t.turn(n, shots)
        flush = _idle_flush(t.rig, t.embedder, t.vectors, t.background)
        dimension = t.embedder.dimension
    return _thread_turns_report(turns, shots, flush, dimension)


def _thread_turns_report(
    turns: int, shots: dict[str, list[dict[str, Any]]], flush: dict[str, Any], dimension: int
) -> dict[str, Any]:
    components = {name: _mean(rows) for name, rows in shots.items()}
    # Once per conversation: shared by its turns.
    components["idle_flush"] = {
        k: round(v / turns, 3) if isinstance(v, int | float) else v for k, v in flush.items()
    }
    indexed = sum(row["vectors_written"] for row in shots["background"])
    puts = sum(row["vector_puts"] for row in shots["background"]) + flush["vector_puts"]
    messages = 2 * (turns + 1)  # the warm-up turn's too
    batch = _recall_batch(dimension)
    return {
        "turns": turns,
        "options": TURN_OPTIONS,
        "per_component": components,
        "targets": {
            # The observer's run indexes for recall too (its step's `riders`).
            "one_execution_per_save": components["background"]["executions"] == 1.0,
            # The warm-up turn's, the measured turns' and the tail the flush indexed.
            "every_message_embedded": indexed + flush["vectors_written"] == messages,
            # One PutVectors per batch reached, and one for the tail.
            "one_put_per_batch": puts == messages // batch + (1 if messages % batch else 0),
        },
        "recall_batch": batch,
        "note": (
            "background = the run the save starts (the observer with bufferOnIdle, which "
            "first indexes for semantic recall when the save closes a batch: with the "
            "observer on, what fills one PutVectors' billed 128 KB, recall_batch messages; "
            "one PutVectors a batch), every step's calls; idle_flush = the schedule's flush "
            "of the conversation's tail (its tick's calls and the recall run it starts, the "
            "idle wait skipped), divided by the turns; the embedder is a counting hash "
            "embedder (calls and characters counted, priced as Titan v2 by bench/cost_model)"
        ),
    }


def _recall_batch(dimension: int) -> int:
    """The batch semantic recall indexes the measured thread in."""
    from agent_memory.domain.memory_options import effective_options
    from agent_memory.domain.recall_batches import indexing_batch

    return indexing_batch(effective_options(TURN_OPTIONS), dimension)


def _idle_flush(rig: Any, embedder: Any, vectors: Any, background: Any) -> dict[str, Any]:
    """The schedule's ticks once the conversation is idle (the wait skipped): their calls
    on the tick function (no invocation of its own: the tick runs every 15 minutes anyway),
    the recall run the first starts for the tail, and the next, which deletes the thread's
    pending row (its shard Queries, shared by every thread of a tick, counted here whole)."""
    from agent_memory.domain import recall_batches

    before = rig.reset()
    rig.models.reset()
    embedder.reset()
    vectors.reset()
    idle_ms = recall_batches.IDLE_MS
    recall_batches.IDLE_MS = 0
    try:
        # The tick runs in this thread: its CPU time outside moto, as the steps' are.
        started, spent = timed(rig.steps.threads.background.flush_idle, this_thread=True)
        runs = [e for e in rig.executions() if e["executionArn"] not in before]
        again, next_spent = timed(rig.steps.threads.background.flush_idle, this_thread=True)
    finally:
        recall_batches.IDLE_MS = idle_ms
    assert (started, again) == (1, 0), (started, again)
    flush: dict[str, Any] = background(runs)
    own = max(0.0, spent.own_ms) + max(0.0, next_spent.own_ms)
    flush["task_own_ms"] = round(flush["task_own_ms"] + own, 1)
    return flush


_MODEL_FIELDS = ("model", "prompt_chars", "reply_chars")
_RECALL_FIELDS = (
    "embed_calls",
    "embedded_texts",
    "embedded_chars",
    "vector_puts",
    "vectors_written",
    "vector_queries",
)


def _model_counts(models: Any) -> dict[str, Any]:
    return dict(
        zip(_MODEL_FIELDS, (models.calls, models.prompt_chars, models.reply_chars), strict=True)
    )


def _recall_counts(shot: dict[str, Any], embedder: Any, vectors: Any) -> dict[str, Any]:
    return {
        k: shot[k]
        for k in (
            "dynamodb",
            "kms",
            "stepfunctions",
            "by_operation",
            "rru_estimate",
            "wru_estimate",
        )
    } | {
        "embed_calls": embedder.calls,
        "embedded_texts": embedder.texts,
        "embedded_chars": embedder.chars,
        "vector_puts": vectors.puts,
        "vectors_written": vectors.vectors,
        "vector_queries": vectors.queries,
    }


def _mean(rows: list[dict[str, Any]]) -> dict[str, Any]:
    numbers = [k for k, v in rows[0].items() if isinstance(v, int | float)]
    mean = {k: round(sum(float(r[k]) for r in rows) / len(rows), 2) for k in numbers}
    return mean | {k: v for k, v in rows[-1].items() if k not in numbers}


def _thread_aws_calls(env: Env, setup: Any, ana: Any, token: str, agent: str) -> Any:
    """A turn's context and save, cold and warm, on a titled thread of 20 messages; and a new
    thread's first answer (its title run starts)."""
    thread = setup.threads.create(ana, agent, None)
    setup.threads.save(ana, thread.id, [{"role": "user", "content": "Hello."}] * 20)
    setup.threads.put_working_memory(ana, thread.id, "# User\n- Name: Ana")
    # Titled (as the background title step does): a later save starts no run.
    setup.threads.repo.set_title(thread, "Bench", thread.created_at)
    base = f"/v1/threads/{thread.id}"
    pair = {
        "messages": [
            {"role": "user", "content": "What is next?"},
            {"role": "assistant", "content": "The report."},
        ]
    }
    operations: dict[str, Callable[[], Request]] = {
        "thread.context": lambda: ("POST", f"{base}/context", TURN),
        "thread.messages": lambda: ("POST", f"{base}/messages", pair),
    }
    aws_calls = {name: cold_warm(env, token, prepare) for name, prepare in operations.items()}

    def first_answer() -> Request:
        """A new untitled thread whose first answer is the request."""
        fresh = setup.threads.create(ana, agent, None)
        setup.threads.save(ana, fresh.id, [{"role": "user", "content": "Plan the report."}])
        answer = {"messages": [{"role": "assistant", "content": "Here is a plan."}]}
        return ("POST", f"/v1/threads/{fresh.id}/messages", answer)

    aws_calls["thread.messages.first_answer"] = cold_warm(env, token, first_answer, learning=True)
    # The title runs go on in moto's threads: let them end before timing anything else.
    _settle(env)
    return aws_calls


def _thread_context_at_scale(env: Env, setup: Any, ana: Any, token: str, agent: str) -> Any:
    """The context of a new thread that grows to each of SIZES."""
    big = setup.threads.create(ana, agent, None)

    def grow(have: int, want: int) -> None:
        _seed(setup, env, big.id, have, want - have)

    return at_sizes(
        env,
        token,
        f"/v1/threads/{big.id}/context",
        TURN,
        SIZES,
        grow,
        "messages",
        lambda answer: {"returned": len(answer.json()["messages"])},
    )


def run() -> dict[str, Any]:
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        created = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        token = created.token.secret
        ana = Principal("ana", "bench", "member")
        agent = setup.agents.create(ana, "Bench").id
        options = {"lastMessages": LAST_MESSAGES, "workingMemory": True}
        setup.agent_versions.edit_draft(ana, agent, {"options": options})
        setup.agent_versions.publish(ana, agent)
        setup.agent_versions.activate(ana, agent, 1)
        aws_calls = _thread_aws_calls(env, setup, ana, token, agent)
        scaling = _thread_context_at_scale(env, setup, ana, token, agent)
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
        "turn": thread_turns(),
        "scaling": {"thread_context": scaling},
        "targets": targets,
        "note": "through HTTP (token lookup and rate-limit write included)",
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
