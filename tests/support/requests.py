"""Requests as one person over HTTP that assert their status, and builders of an agent and a
session."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, User


def post(api: Api, user: User, url: str, body: Any) -> Any:
    answer = api.client.post(url, json=body, headers=user.headers)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


def get(api: Api, user: User, url: str, status: int = 200) -> Any:
    answer = api.client.get(url, headers=user.headers)
    assert answer.status_code == status, answer.text
    return answer.json()


def agent(api: Api, user: User, name: str = "helper", members: tuple[str, ...] = ()) -> str:
    return str(
        post(api, user, "/v1/agents", {"name": name, "members": list(members)})["agent"]["id"]
    )


def session(api: Api, user: User, agent_id: str, **body: Any) -> str:
    body = {"agentId": agent_id, "model": None} | body
    return str(post(api, user, "/v1/sessions", body)["session"]["id"])
