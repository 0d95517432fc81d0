"""Models over HTTP JSON, on the standard library: `anthropic/<model>` (the Messages API, one
forced tool named after the task with the task's schema) and `openai/<model>` (any
OpenAI-compatible Chat Completions endpoint, a strict `json_schema` response format).

One JSON POST, every failure mapped to a `ModelFailure` kind:

- no answer within the deadline, or 408 -> `timeout`, retryable;
- 429 -> `throttled`; 5xx (529 "overloaded" included) or a refused connection ->
  `unavailable`, retryable;
- 400/401/402/403/404/405/413/415/422 -> `config`, not retryable.

The API key is never logged and is blanked out of any error text.
"""

from __future__ import annotations

import http.client
import json
import math
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from agent_memory.adapters.deadline import late, within_deadline
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.ports.models import ModelFailure, ModelReply, Usage

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_API_VERSION = "2023-06-01"
OPENAI_BASE_URL = "https://api.openai.com/v1"
_CONFIG_STATUSES = frozenset({400, 401, 402, 403, 404, 405, 413, 415, 422})
_EXCERPT = 300


class JsonEndpoint:
    """POST JSON to `url`; `secret` is removed from every error message."""

    def __init__(self, url: str, secret: str = "") -> None:
        self.url = url
        self._secret = secret

    def post(
        self, body: Mapping[str, Any], headers: Mapping[str, str], deadline_s: float
    ) -> tuple[Any, float]:
        """The decoded JSON answer and the latency in ms; `ModelFailure` otherwise."""
        if not self.url.startswith(("http://", "https://")):
            raise ModelFailure("config", f"not an http(s) URL: {self.url}", retryable=False)
        sent = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        # The scheme was checked just above: only http(s) URLs are opened.
        request = urllib.request.Request(  # noqa: S310
            self.url, data=json.dumps(body).encode(), headers=sent, method="POST"
        )
        raw, latency_ms = within_deadline(
            lambda: self._send(request, deadline_s), deadline_s, self.url
        )
        try:
            return json.loads(raw), latency_ms
        except ValueError:
            raise self.invalid("the answer is not JSON") from None

    def _send(self, request: urllib.request.Request, deadline_s: float) -> bytes:
        try:
            # The scheme is checked in post(): only http(s) reaches this call.
            with urllib.request.urlopen(request, timeout=deadline_s) as response:  # noqa: S310
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as error:
            raise self._status_failure(error) from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, TimeoutError):
                raise late(self.url, deadline_s) from None
            raise ModelFailure(
                "unavailable", self.clean(f"cannot reach {self.url}: {reason}"), retryable=True
            ) from None
        except TimeoutError:
            raise late(self.url, deadline_s) from None
        except (http.client.HTTPException, ConnectionError, OSError) as error:
            raise ModelFailure(
                "unavailable",
                self.clean(f"connection to {self.url} failed: {error!r}"),
                retryable=True,
            ) from None

    def _status_failure(self, error: urllib.error.HTTPError) -> ModelFailure:
        message = self.clean(f"{self.url} answered {error.code}: {_error_detail(error)}")
        if error.code == 429:
            return ModelFailure("throttled", message, retryable=True)
        if error.code == 408:
            return ModelFailure("timeout", message, retryable=True)
        if error.code >= 500:
            return ModelFailure("unavailable", message, retryable=True)
        if error.code in _CONFIG_STATUSES:
            return ModelFailure("config", message, retryable=False)
        return ModelFailure("unavailable", message, retryable=True)

    def invalid(self, message: str) -> ModelFailure:
        """An answer that is not the provider's protocol (never retried as is)."""
        return ModelFailure("invalid_output", self.clean(message), retryable=False)

    def clean(self, message: str) -> str:
        """Bounded, and never the API key (some servers echo it back)."""
        if self._secret:
            message = message.replace(self._secret, "***")
        return message[: _EXCERPT * 2]


def _error_detail(error: urllib.error.HTTPError) -> str:
    try:
        body = error.read(8192)
        data = json.loads(body)
    except (OSError, http.client.HTTPException, ValueError):
        return error.reason if isinstance(error.reason, str) else ""
    detail = data.get("error") if isinstance(data, dict) else None
    if isinstance(detail, dict) and isinstance(detail.get("message"), str):
        return str(detail["message"])
    if isinstance(detail, str):
        return detail
    return error.reason if isinstance(error.reason, str) else ""


def usage_of(raw: Any, input_name: str, output_name: str) -> Usage:
    """The token counts of a usage object; 0 for a count absent or not a number."""
    counts = raw if isinstance(raw, dict) else {}

    def count(name: str) -> int:
        value = counts.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return Usage(input_tokens=count(input_name), output_tokens=count(output_name))


# An API key, or what reads it at each call (a rotated secret is picked up without a restart).
ApiKeySource = str | Callable[[], str]


def read_key(source: ApiKeySource) -> str:
    return source() if callable(source) else source


def bearer_headers(key: str) -> dict[str, str]:
    """An OpenAI-compatible endpoint's authorization; none without a key (local servers)."""
    return {"Authorization": f"Bearer {key}"} if key else {}


class JsonModel:
    """`ports.LearningModel` over one JSON endpoint of `provider`; a provider's `body`,
    `headers` and `answer` (the text and usage of a decoded answer) say its protocol.
    `timeout_s` caps every call's deadline."""

    provider = ""

    def __init__(
        self, model: str, url: str, api_key: ApiKeySource, timeout_s: float = math.inf
    ) -> None:
        self.model = model
        self.name = f"{self.provider}/{model}"
        self.url = url
        self._api_key = api_key
        self._timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, url={self.url!r})"

    def propose(self, request: ModelRequest) -> ModelReply:
        key = read_key(self._api_key)
        endpoint = JsonEndpoint(self.url, key)
        deadline = min(request.deadline_s, self._timeout_s)
        data, latency_ms = endpoint.post(self.body(request), self.headers(key), deadline)
        text, usage = self.answer(data, request.task, endpoint.invalid)
        return ModelReply(text=text, model=self.name, usage=usage, latency_ms=latency_ms)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The request body for `request` (public for tests and tracing)."""
        raise NotImplementedError

    def headers(self, key: str) -> dict[str, str]:
        raise NotImplementedError

    def answer(
        self, data: Any, task: str, invalid: Callable[[str], ModelFailure]
    ) -> tuple[str, Usage]:
        raise NotImplementedError


class AnthropicModel(JsonModel):
    """The Messages API. `model` is the part after `anthropic/`."""

    provider = "anthropic"

    def __init__(self, model: str, api_key: str, base_url: str = ANTHROPIC_BASE_URL) -> None:
        super().__init__(model, base_url.rstrip("/") + "/v1/messages", api_key)

    def headers(self, key: str) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_API_VERSION}
        if key:  # a proxy at ANTHROPIC_BASE_URL may hold the key itself
            headers["x-api-key"] = key
        return headers

    def body(self, request: ModelRequest) -> dict[str, Any]:
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

    def answer(
        self, data: Any, task: str, invalid: Callable[[str], ModelFailure]
    ) -> tuple[str, Usage]:
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
                and block.get("name") == task
            ):
                tool_input = block.get("input")
                if not isinstance(tool_input, dict):
                    raise invalid(f"the {task} call has no input object")
                usage = usage_of(data.get("usage"), "input_tokens", "output_tokens")
                return json.dumps(tool_input), usage
        raise invalid(f"the model answered without calling {task} (stop_reason={stop})")


class OpenAICompatibleModel(JsonModel):
    """Chat Completions. `model` is the part after `openai/`."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = OPENAI_BASE_URL,
        api_key: ApiKeySource = "",
        timeout_s: float = 60,
    ) -> None:
        super().__init__(model, base_url.rstrip("/") + "/chat/completions", api_key, timeout_s)

    def headers(self, key: str) -> dict[str, str]:
        return bearer_headers(key)

    def body(self, request: ModelRequest) -> dict[str, Any]:
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

    def answer(
        self, data: Any, task: str, invalid: Callable[[str], ModelFailure]
    ) -> tuple[str, Usage]:
        # Messages name the shape problem only: the body may hold conversation text.
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
        return content, usage_of(usage, "prompt_tokens", "completion_tokens")
