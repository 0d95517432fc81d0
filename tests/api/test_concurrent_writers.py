"""Concurrent writers on one object: requests without a precondition all land,
requests with a stale one answer 409, and nothing answers 503 or 500.

Requests go through the app with blocking calls offloaded to worker threads, as `make run`
serves them (OFFLOAD_BLOCKING_CALLS), so they really overlap on the embedded AWS. Two
stores stand behind them: moto as the suite runs it, and the same store wrapped so that
overlapping transactions on a row cancel each other as DynamoDB's do (TransactionConflict),
which moto never does. The last tests drive the Store port itself on the embedded AWS as a
server, as `make run` runs it.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from agent_memory.domain.errors import WriteConflict
from agent_memory.domain.sessions import item_id
from agent_memory.ports import Absent, Action, Check, Delete, Equals, Put, Store, Update
from tests.conftest import Api, User

WRITERS = 20


@dataclass(frozen=True)
class Call:
    method: str
    url: str
    headers: dict[str, str]
    json: Any = None


Burst = Callable[[Sequence[Call]], list[httpx.Response]]


def _burst_over(services: Any) -> Burst:
    """Send every call at once to an app on `services`, as one server with worker threads."""
    from agent_memory.api.app import create_app

    # The same services, read through settings that offload blocking calls to threads.
    threaded = copy.copy(services)
    threaded.settings = services.settings.model_copy(update={"offload_blocking_calls": True})
    app = create_app(lambda: threaded)

    async def send(calls: Sequence[Call]) -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return list(
                await asyncio.gather(
                    *(
                        client.request(c.method, c.url, headers=c.headers, json=c.json)
                        for c in calls
                    )
                )
            )

    return lambda calls: asyncio.run(send(calls))


class DynamoLikeConflicts:
    """A Store whose transactions cancel each other when they overlap on a row, as
    DynamoDB's do (TransactionConflict: "another transaction on this item is in progress"),
    whatever their conditions; moto runs them one after the other instead."""

    def __init__(self, inner: Store, hold_s: float = 0.003) -> None:
        self._inner = inner
        self._hold_s = hold_s
        self._busy: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self.cancelled = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def write(self, actions: Sequence[Action]) -> None:
        rows = {_row(a) for a in actions}
        if len(actions) == 1 and not isinstance(actions[0], Check):
            self._inner.write(actions)  # a single-row write waits for the row, as on DynamoDB
            return
        with self._lock:
            if rows & self._busy:
                self.cancelled += 1
                raise WriteConflict("a concurrent change won", index=None)
            self._busy |= rows
        try:
            time.sleep(self._hold_s)  # a transaction's two phases take time on DynamoDB
            self._inner.write(actions)
        finally:
            with self._lock:
                self._busy -= rows


def _row(action: Action) -> tuple[str, str]:
    if isinstance(action, Put):
        return str(action.record["pk"]), str(action.record["sk"])
    assert isinstance(action, Update | Delete | Check)
    return action.pk, action.sk


@pytest.fixture(params=["moto", "dynamodb-conflicts"])
def world(request: pytest.FixtureRequest, settings: Any, adapters: Any) -> Iterator[World]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import build_services

    store = adapters.store
    conflicts = None
    if request.param == "dynamodb-conflicts":
        store = conflicts = DynamoLikeConflicts(adapters.store)
    services = build_services(settings, replace(adapters, store=store))
    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as client:
        api = Api(client)
        org = api.org()
        yield World(api, api.user(org), _burst_over(services), conflicts)


@dataclass
class World:
    api: Api
    ana: User
    burst: Burst
    conflicts: DynamoLikeConflicts | None

    def get(self, url: str) -> dict[str, Any]:
        answer = self.api.client.get(url, headers=self.ana.headers)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def post(self, url: str, body: Any, status: int = 200) -> dict[str, Any]:
        answer = self.api.client.post(url, json=body, headers=self.ana.headers)
        assert answer.status_code == status, answer.text
        return dict(answer.json())

    def session(self) -> dict[str, Any]:
        """A Session without a model: no learning writes beside the calls under test."""
        agent = self.post("/v1/agents", {"name": "helper"}, 201)["agent"]["id"]
        return dict(self.post("/v1/sessions", {"agentId": agent, "model": None}, 201)["session"])

    def call(self, method: str, url: str, body: Any = None) -> Call:
        return Call(method, url, self.ana.headers, body)


def _statuses(answers: Sequence[httpx.Response]) -> Counter[tuple[int, str | None]]:
    return Counter(
        (a.status_code, a.json()["error"]["_tag"] if a.status_code >= 400 else None)
        for a in answers
    )


def _turn(world: World, session_id: str, text: str, **guard: Any) -> Call:
    body = {"items": [{"role": "user", "content": text}], **guard}
    return world.call("POST", f"/v1/sessions/{session_id}/turns", body)


# --- Turns ------------------------------------------------------------------------------


def test_twenty_turns_without_a_precondition_all_land(world: World) -> None:
    session = world.session()
    answers = world.burst([_turn(world, session["id"], f"note {n}") for n in range(WRITERS)])

    assert _statuses(answers) == {(200, None): WRITERS}
    item_ids = [i for a in answers for i in a.json()["turn"]["itemIds"]]
    assert len(set(item_ids)) == WRITERS  # every Turn got its own place in the history
    after = world.get(f"/v1/sessions/{session['id']}")["session"]
    assert after["revision"] == WRITERS
    assert max(a.json()["session"]["revision"] for a in answers) == WRITERS
    # The history is contiguous: the next Turn lands right after the twentieth item.
    next_turn = world.post(
        f"/v1/sessions/{session['id']}/turns", {"items": [{"role": "user", "content": "more"}]}
    )
    assert next_turn["turn"]["itemIds"] == [item_id(WRITERS + 1)]
    assert sorted(item_ids) == [item_id(n) for n in range(1, WRITERS + 1)]
    if world.conflicts is not None:
        assert world.conflicts.cancelled > 0  # the races were real


def test_turns_with_one_stale_state_one_lands_the_rest_409(world: World) -> None:
    session = world.session()
    guard = {"expected": session["head"], "revision": session["revision"]}
    answers = world.burst([_turn(world, session["id"], f"n {n}", **guard) for n in range(10)])

    assert _statuses(answers) == {(200, None): 1, (409, "SessionConflict"): 9}
    assert world.get(f"/v1/sessions/{session['id']}")["session"]["revision"] == 1


# --- Chats and bot memory (seed 002) -----------------------------------------------------


def test_twenty_chat_turns_without_a_precondition_all_land(world: World) -> None:
    bot = world.post("/v1/bots", {"name": "helper"}, 201)["bot"]["id"]
    chat = world.post("/v1/chats", {"botId": bot}, 201)["chat"]["id"]
    url = f"/v1/chats/{chat}/turns"
    answers = world.burst([world.call("POST", url, {"input": f"note {n}"}) for n in range(WRITERS)])

    assert _statuses(answers) == {(201, None): WRITERS}
    items = world.get(f"/v1/chats/{chat}/items")["items"]
    assert sorted(i["content"] for i in items) == sorted(f"note {n}" for n in range(WRITERS))
    assert len({i["id"] for i in items}) == WRITERS


def test_twenty_bot_memory_remembers_all_land(world: World) -> None:
    bot = world.post("/v1/bots", {"name": "helper"}, 201)["bot"]["id"]
    url = f"/v1/bots/{bot}/memory"
    calls = [
        world.call("POST", url, {"command": {"_tag": "Remember", "content": f"note {n}"}})
        for n in range(WRITERS)
    ]
    answers = world.burst(calls)

    assert _statuses(answers) == {(200, None): WRITERS}
    after = world.get(url)
    assert sorted(e["content"] for e in after["entries"]) == sorted(
        f"note {n}" for n in range(WRITERS)
    )
    assert after["version"] == WRITERS


# --- Agent memories (seed 004) ----------------------------------------------------------


def _memory(world: World) -> dict[str, Any]:
    body = {"category": "fact", "content": "Orders 40 pallets.", "importance": 0.5}
    return world.post("/v1/agent_memories", body, 201)


def test_twenty_patches_of_one_memory_all_land(world: World) -> None:
    memory = _memory(world)
    url = f"/v1/agent_memories/{memory['id']}"
    sent = [round(0.01 * (n + 1), 2) for n in range(WRITERS)]
    answers = world.burst([world.call("PATCH", url, {"importance": v}) for v in sent])

    assert _statuses(answers) == {(200, None): WRITERS}
    assert world.get(url)["importance"] in sent


def test_twenty_settings_patches_without_a_precondition_all_land(world: World) -> None:
    url = f"/v1/organizations/{world.ana.org_id}/settings"
    bodies = [{"memory": {"use": n % 2 == 0}} for n in range(WRITERS)]
    answers = world.burst([Call("PATCH", url, world.api.admin, body) for body in bodies])

    assert _statuses(answers) == {(200, None): WRITERS}
    settings = world.api.client.get(url, headers=world.api.admin).json()
    assert settings["memory"]["use"] in {True, False}


def test_patches_of_different_fields_both_survive(world: World) -> None:
    memory = _memory(world)
    url = f"/v1/agent_memories/{memory['id']}"
    calls = [world.call("PATCH", url, {"content": f"Orders {n} pallets."}) for n in range(10)]
    calls += [world.call("PATCH", url, {"importance": 0.9}) for _ in range(10)]
    answers = world.burst(calls)

    assert _statuses(answers) == {(200, None): 20}
    stored = world.get(url)
    assert stored["importance"] == 0.9
    assert stored["content"] != memory["content"]
    assert stored["content"] in {f"Orders {n} pallets." for n in range(10)}


def test_a_delete_racing_patches_is_clean(world: World) -> None:
    memory = _memory(world)
    url = f"/v1/agent_memories/{memory['id']}"
    calls = [world.call("PATCH", url, {"importance": 0.1 * (n % 9)}) for n in range(WRITERS - 1)]
    calls.insert(WRITERS // 2, world.call("DELETE", url))
    answers = world.burst(calls)

    deleted = answers[WRITERS // 2]
    assert deleted.status_code == 200, deleted.text
    assert set(_statuses(answers)) <= {(200, None), (404, "NotFound")}
    assert world.api.client.get(url, headers=world.ana.headers).status_code == 404
    # No PATCH left an index row behind: lists and recall no longer show it.
    assert world.get("/v1/agent_memories?category=fact")["data"] == []
    assert world.post("/v1/agent_memories/recall", {"limit": 10})["data"] == []


def test_deletes_racing_each_other_one_200_the_rest_404(world: World) -> None:
    memory = _memory(world)
    url = f"/v1/agent_memories/{memory['id']}"
    answers = world.burst([world.call("DELETE", url) for _ in range(5)])

    assert _statuses(answers) == {(200, None): 1, (404, "NotFound"): 4}


# --- Forks ------------------------------------------------------------------------------


def test_concurrent_forks_of_one_session_all_succeed(world: World) -> None:
    session = world.session()
    world.post(f"/v1/sessions/{session['id']}/turns", {"items": [{"role": "user", "content": "a"}]})
    source = world.get(f"/v1/sessions/{session['id']}")["session"]
    url = f"/v1/sessions/{session['id']}/fork"
    answers = world.burst([world.call("POST", url, {}) for _ in range(WRITERS)])

    assert _statuses(answers) == {(201, None): WRITERS}
    forks = [a.json()["session"] for a in answers]
    assert len({f["id"] for f in forks}) == WRITERS
    assert {(f["head"], f["revision"]) for f in forks} == {(source["head"], source["revision"])}


def test_forks_racing_turns_on_their_source_all_land(world: World) -> None:
    session = world.session()
    calls = [world.call("POST", f"/v1/sessions/{session['id']}/fork", {}) for _ in range(8)]
    calls += [_turn(world, session["id"], f"t {n}") for n in range(8)]
    answers = world.burst(calls)

    assert _statuses(answers) == {(201, None): 8, (200, None): 8}
    # Each Fork is a consistent copy: its own next Turn lands right after what it copied.
    for fork in (a.json()["session"] for a in answers[:8]):
        turned = world.post(
            f"/v1/sessions/{fork['id']}/turns", {"items": [{"role": "user", "content": "x"}]}
        )
        assert turned["session"]["revision"] == fork["revision"] + 1


# --- The Store port under 20 writers, on the embedded AWS as `make run` serves it -----------


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(params=["embedded-aws-server", "sqlite"])
def served_store(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> Iterator[Store]:
    """The store `make run` writes to, holding 3,000 other rows: the embedded AWS as a
    server (DynamoStore over HTTP with the service's client settings, bootstrap.py: 5 s
    read timeout, standard retries), or the SQLite adapter where it exists."""
    if request.param == "sqlite":
        yield from _sqlite_store(tmp_path)
        return
    import boto3
    from botocore.config import Config
    from moto.server import ThreadedMotoServer

    from agent_memory.adapters.dynamodb.store import DynamoStore
    from infra.local import aws

    aws.prepare_moto()
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        session = boto3.session.Session(region_name=aws.REGION)
        table = aws.create_table(session, f"agent-memory-{uuid.uuid4().hex[:8]}")
        config = Config(
            retries={"mode": "standard", "max_attempts": 3},
            connect_timeout=2,
            read_timeout=5,
            max_pool_connections=50,
        )
        client = session.client("dynamodb", config=config)
        _fill(table, 3000)
        yield DynamoStore(client, table)
    finally:
        server.stop()


def _sqlite_store(tmp_path: Any) -> Iterator[Store]:
    sqlite = pytest.importorskip("agent_memory.adapters.sqlite_store")
    store = sqlite.SqliteStore(tmp_path / "table.sqlite3")
    rows = [Put(_other_row(n)) for n in range(3000)]
    for start in range(0, len(rows), 100):
        store.write(rows[start : start + 100])
    try:
        yield store
    finally:
        store.close()


def _other_row(n: int) -> dict[str, Any]:
    return {
        "pk": f"SESSION#other-{n % 50}",
        "sk": f"ITEM#{n:08d}",
        "type": "item",
        "seq": n,
        "role": "user",
        "turnId": f"t_{n}",
        "text": b"\x01" * 300,
        "createdAt": 1_700_000_000_000 + n,
        "tags": ["a", "b"],
    }


def _fill(table_name: str, rows: int) -> None:
    """Rows shaped like other Sessions' items, put straight into the emulator's table (the
    server runs in this process): setup, not what is measured."""
    from moto.dynamodb.models import dynamodb_backends

    from agent_memory.adapters.dynamodb.store import serialize
    from infra.local import aws

    table = dynamodb_backends[aws.ACCOUNT][aws.REGION].get_table(table_name)
    for n in range(rows):
        table.put_item(serialize(_other_row(n)))


def _append(store: Store, pk: str) -> int:
    """A Turn's write: move the head row's counter and add the next item, if nobody else
    did first (WriteConflict otherwise). Returns the item's number."""
    head = store.get(pk, "META")
    count = int(head["count"]) if head is not None else 0
    store.write(
        [
            Update(pk, "META", set={"count": count + 1}, condition=Equals("count", count)),
            Put({"pk": pk, "sk": f"ITEM#{count + 1:08d}"}, Absent()),
        ]
    )
    return count + 1


def test_twenty_writers_on_one_row_of_the_served_store_all_land(served_store: Store) -> None:
    """Each writer re-reads and retries until its write lands, as a Turn does. Before: every
    transaction deep-copied the whole table under the emulator's lock, the retries queued
    past the client's read timeout, and writers failed with Unavailable (a 503)."""
    from concurrent.futures import ThreadPoolExecutor

    from agent_memory.domain.errors import Conflict
    from agent_memory.persistence.retrying import until_it_lands

    pk = "SESSION#race"
    served_store.write([Put({"pk": pk, "sk": "META", "count": 0}, Absent())])

    def writer(_n: int) -> int:
        return until_it_lands(lambda: _append(served_store, pk), lambda: Conflict("gave up"))

    with ThreadPoolExecutor(WRITERS) as pool:
        numbers = list(pool.map(writer, range(WRITERS)))

    assert sorted(numbers) == list(range(1, WRITERS + 1))
    head = served_store.get(pk, "META")
    assert head is not None
    assert head["count"] == WRITERS


# --- Threads (seed 003) ------------------------------------------------------------------


def test_twenty_thread_saves_without_a_precondition_all_land(world: World) -> None:
    agent = world.post("/v1/agents", {"name": "helper"}, 201)["agent"]["id"]
    thread = world.post("/v1/threads", {"agentId": agent}, 201)["thread"]["id"]
    url = f"/v1/threads/{thread}/messages"
    body = [{"messages": [{"role": "user", "content": f"note {n}"}]} for n in range(WRITERS)]
    answers = world.burst([world.call("POST", url, b) for b in body])

    assert _statuses(answers) == {(200, None): WRITERS}
    saved = [m["content"] for m in world.get(f"{url}?limit=100")["messages"]]
    assert sorted(saved) == sorted(f"note {n}" for n in range(WRITERS))


def test_removals_of_the_latest_message_each_remove_one(world: World) -> None:
    agent = world.post("/v1/agents", {"name": "helper"}, 201)["agent"]["id"]
    thread = world.post("/v1/threads", {"agentId": agent}, 201)["thread"]["id"]
    url = f"/v1/threads/{thread}/messages"
    notes = [{"role": "user", "content": f"note {n}"} for n in range(WRITERS)]
    world.post(url, {"messages": notes})
    answers = world.burst([world.call("DELETE", f"{url}/last") for _ in range(10)])

    assert _statuses(answers) == {(200, None): 10}
    removed = {a.json()["message"]["content"] for a in answers}
    assert removed == {f"note {n}" for n in range(WRITERS - 10, WRITERS)}
    assert len(world.get(f"{url}?limit=100")["messages"]) == WRITERS - 10


def test_concurrent_publishes_of_one_agent_all_land(world: World) -> None:
    agent = world.post("/v1/agents", {"name": "helper"}, 201)["agent"]["id"]
    url = f"/v1/agents/{agent}/publish"
    answers = world.burst([world.call("POST", url, {}) for _ in range(10)])

    assert _statuses(answers) == {(201, None): 10}
    numbers = sorted(a.json()["version"]["number"] for a in answers)
    assert numbers == list(range(1, 11))
