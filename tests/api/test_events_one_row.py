"""A learning run's apply tells two events (`memory.changed`, `execution.ended`) in ONE event
row, and `GET /v1/events` still answers each of them once, in order, with an id of its own,
a page of one event at a time walking through the row; a row of one event reads as it."""

from __future__ import annotations

from typing import Any

from agent_memory.domain.events import new_event
from agent_memory.persistence.events import event_row, partition
from agent_memory.ports import Put
from tests.conftest import Api
from tests.support.agents import org, remember, replying
from tests.support.events import everything, feed, helper, person, services
from tests.support.learning_doubles import ScriptedModel

# The fixtures of the events feed's tests (a learning helper, its organization, inline runs).
__all__ = ["helper", "org", "services"]


def event_rows(adapters: Any, org: str) -> list[dict[str, Any]]:
    return list(adapters.store.query(partition(org)).records)


def test_one_apply_writes_one_row_and_the_feed_answers_both_events_once_in_order(
    api: Api, org: str, helper: ScriptedModel, adapters: Any
) -> None:
    owner = person(api, org)
    agent = owner.agent()
    session = owner.session(agent)["id"]
    before = len(event_rows(adapters, org))
    helper.script = replying(remember("tests-first", "Run the tests first.", "procedure", "i-01"))
    turn = owner.turn(session, "Always run the tests before you report that work is done.")
    assert turn.status_code == 200, turn.text
    [run] = owner.get(f"/v1/agents/{agent}/learning").json()["executions"]
    assert run["status"] == "succeeded"

    # The agent's learning run: one row for its memory's change and its end.
    rows = event_rows(adapters, org)[before:]
    ours = [r for r in rows if r["object"].get("agentId") == agent and "more" in r]
    assert len(ours) == 1
    [row] = ours
    assert row["eventType"] == "memory.changed"
    assert [m["eventType"] for m in row["more"]] == ["execution.ended"]

    # The feed: both events, the memory's change first, each once, each with its own id.
    def learned(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [e for e in events if e["object"].get("agentId") == agent]

    whole = learned(everything(owner))
    assert [(e["type"], e["object"]) for e in whole] == [
        ("memory.changed", {"agentId": agent}),
        ("execution.ended", {"executionId": run["id"], "agentId": agent, "sessionId": session}),
    ]
    row_id = str(row["sk"]).removeprefix("EVT#")
    assert [e["id"] for e in whole] == [row_id, f"{row_id}.1"]
    # One event a page: the cursor stops inside the row and resumes at its next event.
    walked = everything(owner, limit=1)
    assert len(walked) == len({e["id"] for e in walked})
    assert learned(walked) == whole
    assert feed(owner, feed(owner, limit=len(walked))["next"])["events"] == []


def test_a_row_of_one_event_reads_as_that_event(api: Api, org: str, adapters: Any) -> None:
    owner = person(api, org)
    ids = {"threadId": "th_old", "agentId": "ag_old", "resourceId": owner.user.id}
    old = new_event("thread.created", 1_800_000_000_000, ids, "00000000ab")
    adapters.store.write([Put(event_row(org, old))])  # a transaction that tells one event
    shown = {"id": old.id, "type": "thread.created", "at": 1_800_000_000_000, "object": ids}
    answered = everything(owner, limit=1)
    assert answered == [shown]
    page = feed(owner)
    assert page["events"] == [shown]
    assert feed(owner, page["next"])["events"] == []
