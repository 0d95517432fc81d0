"""After a scenario through every content path, the table holds no plaintext content."""

from __future__ import annotations

import time
from typing import Any

from tests.conftest import Api
from tests.support.plaintext import all_text

MARKERS = {
    "turn": "Zanzibar-7781",
    "remember": "Quetzal-4410",
    "learned": "Oxbow-2295",
    "agent_memory": "Kestrel-9034",
    "metadata": "Lumen-5512",
    "entity": "Tamarind-3307",
}


def _wait_for_learning(api: Api, headers: dict[str, str], session_id: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        runs = api.client.get(f"/v1/sessions/{session_id}/learning", headers=headers).json()
        if runs["executions"] and all(r["status"] != "running" for r in runs["executions"]):
            return
        time.sleep(0.05)
    raise AssertionError("learning did not finish")


def test_no_plaintext_content_at_rest(api: Api, local_aws) -> None:
    session, local = local_aws
    org = api.org()
    ana = api.user(org, role="admin")
    headers = ana.headers
    client = api.client

    agent = client.post("/v1/agents", json={"name": "Planner"}, headers=headers).json()
    session_id = client.post(
        "/v1/sessions", json={"agentId": agent["agent"]["id"]}, headers=headers
    ).json()["session"]["id"]
    turned = client.post(
        f"/v1/sessions/{session_id}/turns",
        json={
            "items": [
                {"role": "user", "content": f"We fly to {MARKERS['turn']} tomorrow."},
                {"role": "user", "content": f"Remember that my hotel is {MARKERS['learned']}."},
            ]
        },
        headers=headers,
    )
    assert turned.status_code == 200, turned.text
    _wait_for_learning(api, headers, session_id)
    memory = client.get(f"/v1/sessions/{session_id}/memory", headers=headers).json()
    assert any(MARKERS["learned"] in e["content"] for e in memory["entries"].values()), memory

    view = client.get(f"/v1/sessions/{session_id}", headers=headers).json()["session"]
    remembered = client.post(
        f"/v1/sessions/{session_id}/memory",
        json={
            "expected": view["head"],
            "revision": view["revision"],
            "command": {
                "_tag": "Remember",
                "key": "code-name",
                "content": f"The code name is {MARKERS['remember']}.",
                "kind": "fact",
            },
        },
        headers=headers,
    )
    assert remembered.status_code == 200, remembered.text
    forked = client.post(f"/v1/sessions/{session_id}/fork", json={}, headers=headers)
    assert forked.status_code == 201, forked.text

    created = client.post(
        "/v1/agent_memories",
        json={
            "category": "fact",
            "content": f"Orders ship via {MARKERS['agent_memory']}.",
            "metadata": {"note": MARKERS["metadata"]},
            "entity": {"id": "acct_1", "type": "account", "name": MARKERS["entity"]},
            "importance": 0.8,
        },
        headers=headers,
    )
    assert created.status_code == 201, created.text

    items = []
    scan: dict[str, Any] = {"TableName": local.table_name}
    dynamodb = session.client("dynamodb")
    while True:
        page = dynamodb.scan(**scan)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            break
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    dump = all_text(items)
    assert len(items) > 10
    for where, marker in MARKERS.items():
        assert marker not in dump, f"{where} content is stored in plaintext"
