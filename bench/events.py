"""The events feed (API.md "Events") on the embedded AWS, through the HTTP app:

- `writes`: for each kind of change, the warm request's DynamoDB write requests and WRU
  (estimated as bench.counting counts them), and the part of it that is the event row
  (`event_wru`: one more Put in the change's own transaction).
- `feed`: two pages of `GET /v1/events` (limit 50): thread events (decided without a
  read) and session memory changes (one session read per page): requests, items, RRU.

Every request includes the token lookup and its rate-limit write.

    python -m bench.events      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agent_memory.persistence.keys import EVENTS_PREFIX
from bench.counting import AwsCalls
from bench.rigs import embedded
from bench.sizes import item_size

_WRITE_UNIT = 1024


def _event_wru(calls: AwsCalls) -> float:
    """WRU of the event rows among the recorded requests (transactional: twice)."""
    units = 0.0
    for operation, params in calls.params:
        if operation != "TransactWriteItems":
            continue
        for action in params.get("TransactItems", []):
            item = action.get("Put", {}).get("Item", {})
            if str(item.get("pk", {}).get("S", "")).startswith(EVENTS_PREFIX):
                units += 2 * max(1, -(-item_size(item) // _WRITE_UNIT))
    return units


@dataclass
class _Feed:
    """The served app as one person with an agent, a thread and a session; calls counted."""

    http: Any
    headers: dict[str, str]
    calls: AwsCalls
    setup: Any
    ana: Any
    agent: str
    thread: str
    session: str

    def request(self, method: str, path: str, body: Any) -> Any:
        return self.http.request(method, path, json=body, headers=self.headers)

    def remember(self, n: int) -> tuple[str, str, Any]:
        url = f"/v1/sessions/{self.session}"
        view = self.http.get(url, headers=self.headers).json()["session"]
        command = {"_tag": "Remember", "key": f"k{n}", "content": "x", "kind": "fact"}
        body = {"expected": view["head"], "revision": view["revision"], "command": command}
        return ("POST", f"{url}/memory", body)

    def agent_remember(self, n: int) -> tuple[str, str, Any]:
        url = f"/v1/agents/{self.agent}/memory"
        version = self.http.get(url, headers=self.headers).json()
        command = {"_tag": "Remember", "key": f"k{n}", "content": "x", "kind": "procedure"}
        return ("POST", url, {"expected": version["version"], "command": command})


@contextmanager
def _served_feed() -> Iterator[_Feed]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        token = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        ana = Principal("ana", "bench", "member")
        agent = setup.agents.create(ana, "Bench")
        setup.agent_versions.edit_draft(ana, agent.id, {"options": {"workingMemory": True}})
        setup.agent_versions.publish(ana, agent.id)
        setup.agent_versions.activate(ana, agent.id, 1)
        thread = setup.threads.create(ana, agent.id, None)
        session = setup.sessions.create(ana, agent.id)
        calls = AwsCalls()
        calls.record_params = True
        services = env.services(calls, learning=False)
        headers = {"Authorization": f"Bearer {token.token.secret}"}
        with TestClient(create_app(lambda: services)) as http:
            yield _Feed(http, headers, calls, setup, ana, agent.id, thread.id, session.id)


def _writes(f: _Feed) -> dict[str, Any]:
    """Each kind of change, warm: its write requests and its event row's write units."""
    operations = {
        "thread.created": lambda n: ("POST", "/v1/threads", {"agentId": f.agent}),
        "working_memory.updated": lambda n: (
            "PUT",
            f"/v1/threads/{f.thread}/working-memory",
            {"content": f"# User\n- Note {n}"},
        ),
        "memory.changed (session Remember)": f.remember,
        "memory.changed (agent Remember)": f.agent_remember,
        "memory.changed (agent_memories create)": lambda n: (
            "POST",
            "/v1/agent_memories",
            {"category": "fact", "content": f"Fact {n}."},
        ),
    }
    writes: dict[str, Any] = {}
    for name, prepare in operations.items():
        for n in range(2):  # the second is warm
            method, path, body = prepare(n)
            f.calls.reset()
            answer = f.request(method, path, body)
            assert answer.status_code in (200, 201), answer.text
        shot = f.calls.snapshot()
        written = {"PutItem", "UpdateItem", "TransactWriteItems"}
        writes[name] = {
            "write_requests": sum(
                v for k, v in shot["by_operation"].items() if k.split(".")[1] in written
            ),
            "wru_estimate": shot["wru_estimate"],
            "event_wru": _event_wru(f.calls),
        }
    return writes


def _pages(f: _Feed) -> dict[str, Any]:
    """Two pages of the feed after 50 new threads and 50 session memory changes."""
    for _ in range(50):
        f.setup.threads.create(f.ana, f.agent, None)
    for n in range(50):
        f.request(*f.remember(100 + n))
    # Page 1: the writes above and 40-odd new threads (no lookup for a thread: its resource
    # is in the event); page 2: the rest, then session memory changes (one read of the
    # session decides them all, once per page).
    feed: dict[str, Any] = {}
    f.calls.reset()
    page = f.http.get("/v1/events?limit=50", headers=f.headers)
    feed["page 1"] = _read(f.calls, page)
    f.calls.reset()
    after = page.json()["next"]
    page = f.http.get("/v1/events", params={"limit": 50, "after": after}, headers=f.headers)
    feed["page 2"] = _read(f.calls, page)
    return feed


def run() -> dict[str, Any]:
    with _served_feed() as f:
        writes = _writes(f)
        feed = _pages(f)
    targets = {
        # One event row (under 1 KB) per change: 2 WRU inside the change's transaction.
        "one_event_item_per_change": all(w["event_wru"] == 2 for w in writes.values()),
        "feed_page_is_one_query": all(
            page["by_operation"].get("dynamodb.Query") == 1 for page in feed.values()
        ),
    }
    return {
        "writes": writes,
        "feed": feed,
        "targets": targets,
        "note": "through HTTP (token lookup and rate-limit write included); WRU estimated",
    }


def _read(calls: AwsCalls, answer: Any) -> dict[str, Any]:
    shot = calls.snapshot()
    return {
        "events": len(answer.json()["events"]),
        "dynamodb_requests": shot["dynamodb"],
        "by_operation": shot["by_operation"],
        "items_read": shot["items_read"],
        "rru_estimate": shot["rru_estimate"],
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
