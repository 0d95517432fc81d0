"""Agent memory's scripted helper model: its name and the changes it answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent_memory.ports import LearningRequest

HELPER = "openai/helper"


def changes(*items: dict[str, Any]) -> str:
    return json.dumps({"changes": list(items)})


def remember(key: str, content: str, kind: str, *sources: str) -> dict[str, Any]:
    return {"op": "remember", "key": key, "content": content, "kind": kind, "sources": [*sources]}


def replying(*items: dict[str, Any]) -> Callable[[LearningRequest], str]:
    return lambda request: changes(*items)
