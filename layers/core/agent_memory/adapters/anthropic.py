"""`anthropic/<model>`: the Anthropic Messages API, over the standard library.

One forced tool named after the task, with the task's schema, makes the answer structured
JSON; failures map as adapters/http_json.py says (529 "overloaded" is `unavailable`).
"""

from __future__ import annotations

import json
from typing import Any

from agent_memory.adapters.http_json import JsonEndpoint, usage_count
from agent_memory.ports.models import ModelReply, ModelRequest, Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicModel:
    """`ports.LearningModel` over the Messages API. `model` is the part after `anthropic/`."""

    def __init__(self, model: str, api_key: str, base_url: str = DEFAULT_BASE_URL) -> None:
        self.model = model
        self.name = f"anthropic/{model}"
        self._endpoint = JsonEndpoint(base_url.rstrip("/") + "/v1/messages", api_key)
        self._api_key = api_key

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self.model!r}, url={self._endpoint.url!r})"

    def propose(self, request: ModelRequest) -> ModelReply:
        headers = {"anthropic-version": API_VERSION}
        if self._api_key:  # a proxy at ANTHROPIC_BASE_URL may hold the key itself
            headers["x-api-key"] = self._api_key
        data, latency_ms = self._endpoint.post(self.body(request), headers, request.deadline_s)
        text, usage = self._answer(data, request.task)
        return ModelReply(text=text, model=self.name, usage=usage, latency_ms=latency_ms)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages body for `request` (public for tests and tracing)."""
        return {
            "model": self.model,
            "max_tokens": request.max_output_tokens,
            "temperature": 0,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "tools": [
                {
                    "name": request.task,
                    "description": request.description,
                    "input_schema": request.schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": request.task},
        }

    def _answer(self, data: Any, tool: str) -> tuple[str, Usage]:
        invalid = self._endpoint.invalid
        if not isinstance(data, dict):
            raise invalid("the answer is not a JSON object")
        stop = data.get("stop_reason")
        if stop == "max_tokens":
            raise invalid("the answer was cut off (max_tokens)")
        if stop == "refusal":
            raise invalid("the model refused to answer")
        content = data.get("content")
        for block in content if isinstance(content, list) else []:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("name") == tool
            ):
                tool_input = block.get("input")
                if not isinstance(tool_input, dict):
                    raise invalid(f"the {tool} call has no input object")
                usage = data.get("usage")
                counts = usage if isinstance(usage, dict) else {}
                return json.dumps(tool_input), Usage(
                    input_tokens=usage_count(counts, "input_tokens"),
                    output_tokens=usage_count(counts, "output_tokens"),
                )
        raise invalid(f"the model answered without calling {tool} (stop_reason={stop})")
