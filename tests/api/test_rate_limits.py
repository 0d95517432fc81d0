"""Per-token rate limit and per-organization model-call quota, as a client notices them.

The services run on the embedded AWS with a clock the test moves and small limits (the
defaults are 1200 requests and 600 model calls a minute; the rules are the same at any
size). Learning starts are recorded, not run: the quota is taken where learning starts.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.identity import hash_token
from agent_memory.domain.limits import MINUTE_MS, window_at
from agent_memory.persistence.limits import ProcessCounters, TableCounters
from agent_memory.service.limits import REQUESTS_SCOPE
from tests.conftest import User
from tests.support.rate_limits import T0, Serve, World, people, serve

__all__ = ["serve"]  # the fixture this module uses

# --- the per-token rate limit -------------------------------------------------------------


@pytest.mark.parametrize("counted_in", ["table", "process"])
def test_the_limit_passes_then_answers_429_with_retry_after(serve: Serve, counted_in: str) -> None:
    # AWS counts in the table; `make run`, one process, counts in memory.
    world = serve(rate=5, counters=ProcessCounters() if counted_in == "process" else None)
    ana, bob = people(world)
    world.at(15_000)
    assert [world.get(ana).status_code for _ in range(5)] == [200] * 5
    over = world.get(ana)
    assert over.status_code == 429
    assert over.headers["Retry-After"] == "45"
    assert over.json() == {
        "error": {
            "_tag": "Throttled",
            "message": "over 5 requests per minute for this token; retry after 45 s",
            "path": [],
        }
    }
    # A write is refused the same way, before its body is looked at.
    refused = world.http.post("/v1/agents", json={"name": "x"}, headers=ana.headers)
    assert refused.status_code == 429
    # Another token of the same organization is not affected.
    assert world.get(bob).status_code == 200
    # Later in the same minute, the wait is shorter; the next minute frees the token.
    world.at(59_400)
    assert world.get(ana).headers["Retry-After"] == "1"
    world.at(MINUTE_MS)
    assert [world.get(ana).status_code for _ in range(5)] == [200] * 5
    assert world.get(ana).status_code == 429


def test_a_service_key_counts_per_person_and_on_its_own(serve: Serve) -> None:
    """Each person a key acts for has the per-token limit; the key has its own in all."""
    world = serve(rate=3, key_rate=5)
    world.at(-MINUTE_MS)
    org = world.api.org()
    made = world.http.post(
        f"/v1/organizations/{org}/service-keys", json={"name": "web"}, headers=world.api.admin
    )
    key = {"Authorization": f"Bearer {made.json()['key']}"}
    for person in ("ana", "ben"):
        world.http.post(f"/v1/organizations/{org}/users", json={"id": person}, headers=key)
    world.at(0)

    def get(person: str) -> int:
        answer = world.http.get("/v1/agent_memories", headers=key | {"Act-As": person})
        return int(answer.status_code)

    assert [get("ana") for _ in range(3)] == [200, 200, 200]
    assert get("ana") == 429  # Ana's minute is full; Ben's is not
    assert [get("ben"), get("ben")] == [200, 200]
    # Five requests of the key went through (Ana's refused one is not counted against it):
    # its own limit (5) refuses everyone now.
    assert get("ben") == 429
    world.at(MINUTE_MS)
    assert get("ana") == 200


def test_every_route_that_takes_a_token_counts_and_health_does_not(serve: Serve) -> None:
    world = serve(rate=2)
    (ana,) = people(world, 1)
    assert world.get(ana).status_code == 200
    assert world.http.post("/v1/agents", json={}, headers=ana.headers).status_code == 400
    assert world.get(ana, "/v1/sessions/s_missing").status_code == 429
    # /healthz needs no token and is never limited.
    assert all(world.http.get("/healthz").status_code == 200 for _ in range(10))


def test_the_admin_token_counts_too(serve: Serve) -> None:
    world = serve(rate=2)
    admin = world.api.admin
    assert world.http.post("/v1/admin/organizations", json={"name": "A"}, headers=admin)
    assert world.http.post("/v1/admin/organizations", json={"name": "B"}, headers=admin)
    over = world.http.post("/v1/admin/organizations", json={"name": "C"}, headers=admin)
    assert (over.status_code, over.headers["Retry-After"]) == (429, "60")


def test_unknown_tokens_are_401_and_write_no_counter(serve: Serve) -> None:
    world = serve(rate=2)
    (ana,) = people(world, 1)
    counters = TableCounters(world.store)
    window = window_at(T0)
    for n in range(20):
        forged = f"amk_{n:012x}_" + "0" * 40
        answer = world.http.get("/v1/agent_memories", headers={"Authorization": f"Bearer {forged}"})
        assert answer.status_code == 401
        assert counters.count(REQUESTS_SCOPE, hash_token(forged)[:32], window) == 0
    assert world.http.get("/v1/agent_memories").status_code == 401
    # The flood did not spend the real token's minute.
    assert [world.get(ana).status_code for _ in range(3)] == [200, 200, 429]
    assert counters.count(REQUESTS_SCOPE, hash_token(ana.token)[:32], window) == 2


def test_zero_turns_the_limit_off(serve: Serve) -> None:
    world = serve(rate=0)
    (ana,) = people(world, 1)
    assert all(world.get(ana).status_code == 200 for _ in range(30))


# --- the per-organization model-call quota ------------------------------------------------


def turn(world: World, user: User, session_id: str, text: str) -> Any:
    body = {"items": [{"role": "user", "content": text}]}
    return world.http.post(f"/v1/sessions/{session_id}/turns", json=body, headers=user.headers)


def new_session(world: World, user: User) -> str:
    agent = world.http.post("/v1/agents", json={"name": "Trips"}, headers=user.headers)
    assert agent.status_code == 201, agent.text
    body = {"agentId": agent.json()["agent"]["id"]}
    answer = world.http.post("/v1/sessions", json=body, headers=user.headers)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["session"]["id"])


def test_a_turn_over_the_quota_answers_200_and_its_learning_says_why(serve: Serve) -> None:
    world = serve(calls=2)
    ana, bob = people(world)
    first, second = new_session(world, ana), new_session(world, bob)
    world.at(20_000)
    for session in (first, second):
        answered = turn(world, ana if session == first else bob, session, "My budget is 1 EUR.")
        assert (answered.status_code, answered.json()["turn"]["learning"]) == (200, "started")
    over = turn(world, ana, first, "My budget is 2 EUR.")
    assert over.status_code == 200, over.text
    assert over.json()["turn"]["learning"] == "skipped"
    assert over.json()["turn"]["itemIds"] == ["i-02"]
    assert len(world.orchestrator.started) == 2
    executions = world.get(ana, f"/v1/sessions/{first}/learning").json()["executions"]
    skipped = executions[0]
    assert (skipped["status"], skipped["reason"]) == ("skipped", "turn")
    assert skipped["note"] == (
        "the organization's model calls for this minute are spent"
        " (ORG_MODEL_CALLS_PER_MINUTE); they free up in 40 s; the next turn learns these items"
    )
    # A Refresh over the quota answers as usual and its execution says why.
    view = world.get(ana, f"/v1/sessions/{first}").json()["session"]
    refresh = {"expected": view["head"], "revision": view["revision"]}
    refresh["command"] = {"_tag": "Refresh"}
    answer = world.http.post(f"/v1/sessions/{first}/memory", json=refresh, headers=ana.headers)
    assert answer.status_code == 200, answer.text
    newest = world.get(ana, f"/v1/sessions/{first}/learning").json()["executions"][0]
    assert (newest["status"], newest["reason"]) == ("skipped", "refresh")
    assert "ask again" in newest["note"]
    # The next minute, the next turn starts learning again (and reads what was skipped).
    world.at(MINUTE_MS)
    again = turn(world, ana, first, "My budget is 3 EUR.")
    assert again.json()["turn"]["learning"] == "started"
    assert [p["upto"] for p in world.orchestrator.started.values()] == [1, 1, 3]


def test_another_organization_keeps_its_own_quota(serve: Serve) -> None:
    world = serve(calls=1)
    (ana,) = people(world, 1)
    (carl,) = people(world, 1)
    mine, theirs = new_session(world, ana), new_session(world, carl)
    assert turn(world, ana, mine, "a").json()["turn"]["learning"] == "started"
    assert turn(world, ana, mine, "b").json()["turn"]["learning"] == "skipped"
    assert turn(world, carl, theirs, "c").json()["turn"]["learning"] == "started"


def test_zero_turns_the_quota_off(serve: Serve) -> None:
    world = serve(calls=0)
    (ana,) = people(world, 1)
    session = new_session(world, ana)
    answers = [turn(world, ana, session, f"note {n}").json()["turn"]["learning"] for n in range(5)]
    assert answers == ["started"] * 5
