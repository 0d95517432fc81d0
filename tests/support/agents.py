"""Agent memory's scripted helper model: its name and the changes it answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agent_memory.domain.tasks.base import ModelRequest
from tests.conftest import Api

HELPER = "openai/helper"


def changes(*items: dict[str, Any]) -> str:
    return json.dumps({"changes": list(items)})


def remember(key: str, content: str, kind: str, *sources: str) -> dict[str, Any]:
    return {"op": "remember", "key": key, "content": content, "kind": kind, "sources": [*sources]}


def replying(*items: dict[str, Any]) -> Callable[[ModelRequest], str]:
    return lambda request: changes(*items)


# An organization whose agents learn with the scripted helper.
@pytest.fixture
def org(api: Api) -> str:
    org_id = api.org()
    answer = api.client.patch(
        f"/v1/organizations/{org_id}/settings", json={"helperModel": HELPER}, headers=api.admin
    )
    assert answer.status_code == 200, answer.text
    return org_id
