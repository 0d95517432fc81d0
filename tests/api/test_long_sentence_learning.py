"""A single user sentence too long to keep as an entry (over 8000 characters) is skipped by
`local/rules`: the turn's learning succeeds, and later facts of the session are learned (a
change over the bound would fail every later run that reads the turn again)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.conftest import Api, User

RULES = "local/rules"
ENDED = {"succeeded", "failed", "skipped"}
LONG = "Always " + "check " * 2000


def _ended(read: Callable[[], list[dict[str, Any]]], count: int) -> list[dict[str, Any]]:
    """The executions once `count` of them have ended (the workflow runs in moto's threads)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        executions = read()
        if len([e for e in executions if e["status"] in ENDED]) >= count:
            return executions
        time.sleep(0.05)
    raise AssertionError(f"learning did not end: {read()}")


def _get(api: Api, user: User, path: str) -> Any:
    answer = api.client.get(path, headers=user.headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _post(api: Api, user: User, path: str, body: Any) -> Any:
    answer = api.client.post(path, json=body, headers=user.headers)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def test_a_sentence_too_long_to_keep_does_not_stop_later_learning(api: Api) -> None:
    ana = api.user(api.org(), user_id="ana")
    agent = _post(api, ana, "/v1/agents", {"name": "Helper"})["agent"]["id"]
    session = _post(api, ana, "/v1/sessions", {"agentId": agent, "model": RULES})["session"]["id"]

    def runs() -> list[dict[str, Any]]:
        return list(_get(api, ana, f"/v1/sessions/{session}/learning")["executions"])

    for count, text in enumerate((LONG, "My budget is 1500 EUR."), start=1):
        body = {"items": [{"role": "user", "content": text}]}
        assert _post(api, ana, f"/v1/sessions/{session}/turns", body)["turn"]["learning"] == (
            "started"
        )
        assert all(run["status"] == "succeeded" for run in _ended(runs, count)), runs()

    entries = _get(api, ana, f"/v1/sessions/{session}/memory")["entries"]
    assert {key: entry["content"] for key, entry in entries.items()} == {
        "budget": "The user's budget is 1500 EUR."
    }
    agent_runs = _get(api, ana, f"/v1/agents/{agent}/learning")["executions"]
    assert all(run["status"] != "failed" for run in agent_runs), agent_runs
