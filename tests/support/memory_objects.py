"""Agent memories (seed 004) over HTTP: create and recall as one person."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, User

URL = "/v1/agent_memories"


def create(api: Api, user: User, **fields: Any) -> dict[str, Any]:
    body = {"category": "fact", "content": "Ships express."} | fields
    answer = api.client.post(URL, json=body, headers=user.headers)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def recall(api: Api, user: User, **body: Any) -> dict[str, Any]:
    answer = api.client.post(f"{URL}/recall", json=body, headers=user.headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())
