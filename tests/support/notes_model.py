"""An OpenAI-compatible Chat Completions server that learns "My X is Y." from each person's
item it is shown, for tests that run the real local service with a model over HTTP."""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from tests.support.http_fake import PostServer, Reply

# A change citing an item that is not in the evidence: the service must reject it.
MADE_UP = {
    "op": "remember",
    "key": "made-up",
    "content": "Something nobody said.",
    "kind": "fact",
    "sources": ["i-not-in-the-evidence"],
}


def people_items(prompt: str) -> list[dict[str, Any]]:
    """The person's items a learning request shows (one JSON object a line)."""
    shown = [json.loads(line) for line in prompt.splitlines() if line.startswith("{")]
    return [item for item in shown if "id" in item and item.get("role") == "user"]


def change_for(item: dict[str, Any]) -> dict[str, Any] | None:
    match = re.match(r"My (\w+) is (.+?)\.?$", item.get("content", ""))
    if match is None:
        return None
    topic, value = match.groups()
    return {
        "op": "remember",
        "key": topic.lower(),
        "content": f"The {topic} is {value}.",
        "kind": "fact",
        "sources": [item["id"]],
    }


class NotesModel(PostServer):
    """`url` is the OpenAI base URL. With `invent`, every answer also proposes MADE_UP; while
    `slow` is set, a request is held (until `release`) after `asked` is signalled."""

    def __init__(self, invent: bool = False) -> None:
        self.asked_about: list[list[str]] = []
        self.slow = False
        self.asked = threading.Event()
        self.release = threading.Event()
        self.invent = invent
        super().__init__(self._answer, "/v1")

    def _answer(self, path: str, headers: dict[str, str], body: bytes) -> Reply:
        items = people_items(json.loads(body)["messages"][-1]["content"])
        self.asked_about.append([item["id"] for item in items])
        if self.slow:
            self.asked.set()
            self.release.wait(60)
        changes = [c for c in map(change_for, items) if c is not None]
        changes += [MADE_UP] if self.invent else []
        message = {"role": "assistant", "content": json.dumps({"changes": changes})}
        usage = {"prompt_tokens": 10, "completion_tokens": 10}
        return Reply.json({"choices": [{"message": message}], "usage": usage})

    def close(self) -> None:
        self.release.set()
        super().close()
