"""The memory Bot's enrichment as a test sees it: what it was shown, what it rewrote, a Remember."""

from __future__ import annotations

import json
from typing import Any

from agent_memory.domain.tasks.base import ModelRequest
from tests.conftest import User
from tests.support.bots import (
    Script,
    World,
)


def enrichment_calls(script: Script) -> list[ModelRequest]:
    return [call for call in script.calls if call.task == "enrichment"]


def remember(world: World, user: User, content: str) -> str:
    answer = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/memory",
        json={"command": {"_tag": "Remember", "content": content, "tags": ["commute"]}},
        headers=user.headers,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["entry"]["id"])


def rewrite_with_all(request: ModelRequest) -> str:
    """Rewrite the input with every entry the request shows."""
    used = [entry["id"] for entry in shown_entries(request)]
    return json.dumps({"input": REWRITTEN, "used": used})


def shown_entries(request: ModelRequest) -> list[dict[str, Any]]:
    return [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]


REWRITTEN = "Book my usual 8:10 train to Berlin for Friday."
