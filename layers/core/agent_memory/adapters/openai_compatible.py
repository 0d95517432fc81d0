"""`openai/<model>`: any OpenAI-compatible Chat Completions endpoint, over the standard library.

The answer is constrained by a strict `json_schema` response format; failures map as
adapters/http_json.py says.
"""

from __future__ import annotations

from typing import Any

from agent_memory.adapters.http_json import JsonEndpoint, usage_count
from agent_memory.ports.models import ModelReply, ModelRequest, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAICompatibleModel:
    """`ports.LearningModel` over Chat Completions; `timeout_s` caps every call's deadline."""

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str = "",
        timeout_s: float = 60,
    ) -> None:
        self.model = model
        self.name = f"openai/{model}"
        self._endpoint = JsonEndpoint(base_url.rstrip("/") + "/chat/completions", api_key)
        self._api_key = api_key
        self._timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel(model={self.model!r}, url={self._endpoint.url!r})"

    def propose(self, request: ModelRequest) -> ModelReply:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        deadline = min(request.deadline_s, self._timeout_s)
        data, latency_ms = self._endpoint.post(self.body(request), headers, deadline)
        text, usage = self._answer(data)
        return ModelReply(text=text, model=self.name, usage=usage, latency_ms=latency_ms)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The Chat Completions body for `request` (public for tests and tracing)."""
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": request.task, "strict": True, "schema": request.schema},
            },
        }

    def _answer(self, data: Any) -> tuple[str, Usage]:
        # Messages name the shape problem only: the body may hold conversation text.
        invalid = self._endpoint.invalid
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise invalid("the answer has no choices[0].message") from None
        if not isinstance(message, dict):
            raise invalid("choices[0].message is not an object")
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            refusal = message.get("refusal")
            reason = f"refused: {refusal}" if refusal else "no content in choices[0].message"
            raise invalid(reason)
        if choice.get("finish_reason") == "length":
            raise invalid("the answer was cut off (finish_reason=length)")
        usage = data.get("usage") if isinstance(data, dict) else None
        if not isinstance(usage, dict):
            return content, Usage()
        return content, Usage(
            input_tokens=usage_count(usage, "prompt_tokens"),
            output_tokens=usage_count(usage, "completion_tokens"),
        )
