"""`openai/<model>`: any OpenAI-compatible Chat Completions endpoint, over the standard library.

`POST {base_url}/chat/completions` with the system prompt, the evidence, temperature 0 and
`response_format` `json_schema` (strict) asking for API.md's answer. The answer text is
`choices[0].message.content`; the domain parses it. Failures become `ModelFailure`s whose
kind says what the workflow should do (retry or record). The API key is never logged and is
blanked out of any error text.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from typing import Any

from agent_memory.domain.learning_prompt import render_evidence
from agent_memory.domain.proposals import CHANGES_SCHEMA
from agent_memory.ports import LearningRequest, ModelFailure, ModelReply, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_CONFIG_STATUSES = frozenset({400, 401, 402, 403, 404, 405, 413, 415, 422})
_EXCERPT = 300


class OpenAICompatibleModel:
    """`ports.LearningModel` over Chat Completions. `model` is the part after `openai/`."""

    def __init__(
        self, model: str, base_url: str = DEFAULT_BASE_URL, api_key: str = "", timeout_s: float = 60
    ) -> None:
        self.model = model
        self.name = f"openai/{model}"
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"OpenAICompatibleModel(model={self.model!r}, url={self._url!r})"

    def propose(self, request: LearningRequest) -> ModelReply:
        """Ask the endpoint for changes; raise `ModelFailure` when it cannot answer."""
        if not self._url.startswith(("http://", "https://")):
            raise ModelFailure("config", f"not an http(s) URL: {self._url}", retryable=False)
        body = json.dumps(self._body(request)).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # The scheme was checked just above: only http(s) URLs are opened.
        http_request = urllib.request.Request(  # noqa: S310
            self._url, data=body, headers=headers, method="POST"
        )
        started = time.monotonic()
        raw = self._send(http_request)
        latency_ms = (time.monotonic() - started) * 1000
        text, usage = self._answer(raw)
        return ModelReply(text=text, model=self.name, usage=usage, latency_ms=latency_ms)

    def _body(self, request: LearningRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.instructions},
                {"role": "user", "content": render_evidence(request)},
            ],
            "temperature": 0,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "memory_changes", "strict": True, "schema": CHANGES_SCHEMA},
            },
        }

    def _send(self, http_request: urllib.request.Request) -> bytes:
        try:
            # The scheme is checked in propose(): only http(s) reaches this call.
            with urllib.request.urlopen(http_request, timeout=self._timeout_s) as response:  # noqa: S310
                data: bytes = response.read()
                return data
        except urllib.error.HTTPError as error:
            raise self._status_failure(error) from None
        except urllib.error.URLError as error:
            reason = error.reason
            if isinstance(reason, TimeoutError):
                raise self._timeout() from None
            raise ModelFailure(
                "unavailable", self._clean(f"cannot reach {self._url}: {reason}"), retryable=True
            ) from None
        except TimeoutError:
            raise self._timeout() from None
        except (http.client.HTTPException, ConnectionError, OSError) as error:
            raise ModelFailure(
                "unavailable",
                self._clean(f"connection to {self._url} failed: {error!r}"),
                retryable=True,
            ) from None

    def _timeout(self) -> ModelFailure:
        return ModelFailure(
            "timeout", f"no answer from {self._url} within {self._timeout_s} s", retryable=True
        )

    def _status_failure(self, error: urllib.error.HTTPError) -> ModelFailure:
        message = self._clean(f"{self._url} answered {error.code}: {_error_detail(error)}")
        if error.code == 429:
            return ModelFailure("throttled", message, retryable=True)
        if error.code == 408:
            return ModelFailure("timeout", message, retryable=True)
        if error.code >= 500:
            return ModelFailure("unavailable", message, retryable=True)
        if error.code in _CONFIG_STATUSES:
            return ModelFailure("config", message, retryable=False)
        return ModelFailure("unavailable", message, retryable=True)

    def _answer(self, raw: bytes) -> tuple[str, Usage]:
        # Messages name the shape problem only: the body may hold conversation text.
        try:
            data = json.loads(raw)
        except ValueError:
            raise self._invalid("the answer is not JSON") from None
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise self._invalid("the answer has no choices[0].message") from None
        if not isinstance(message, dict):
            raise self._invalid("choices[0].message is not an object")
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            refusal = message.get("refusal")
            reason = f"refused: {refusal}" if refusal else "no content in choices[0].message"
            raise self._invalid(reason)
        if choice.get("finish_reason") == "length":
            raise self._invalid("the answer was cut off (finish_reason=length)")
        usage = data.get("usage") if isinstance(data, dict) else None
        return content, _usage(usage)

    def _invalid(self, message: str) -> ModelFailure:
        return ModelFailure("invalid_output", self._clean(message), retryable=False)

    def _clean(self, message: str) -> str:
        """Bounded, and never the API key (some servers echo it back)."""
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return message[: _EXCERPT * 2]


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The provider's `error.message` when the body has one (it names the problem)."""
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


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    prompt = raw.get("prompt_tokens")
    completion = raw.get("completion_tokens")
    return Usage(
        input_tokens=prompt if isinstance(prompt, int) else 0,
        output_tokens=completion if isinstance(completion, int) else 0,
    )
