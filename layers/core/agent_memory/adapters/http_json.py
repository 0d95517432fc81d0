"""One JSON POST to a model provider, every failure mapped to a `ModelFailure` kind.

- no answer within the deadline, or 408 -> `timeout`, retryable;
- 429 -> `throttled`; 5xx (529 included) or a refused connection -> `unavailable`, retryable;
- 400/401/402/403/404/405/413/415/422 -> `config`, not retryable.

The API key is never logged and is blanked out of any error text.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from agent_memory.ports.models import ModelFailure

_CONFIG_STATUSES = frozenset({400, 401, 402, 403, 404, 405, 413, 415, 422})
_EXCERPT = 300


class JsonEndpoint:
    """POST JSON to `url`; `secret` is removed from every error message."""

    def __init__(self, url: str, secret: str = "") -> None:
        self.url = url
        self._secret = secret

    def __repr__(self) -> str:
        return f"JsonEndpoint(url={self.url!r})"

    def post(
        self, body: Mapping[str, Any], headers: Mapping[str, str], deadline_s: float
    ) -> tuple[Any, float]:
        """The decoded JSON answer and the latency in ms; `ModelFailure` otherwise."""
        if not self.url.startswith(("http://", "https://")):
            raise ModelFailure("config", f"not an http(s) URL: {self.url}", retryable=False)
        if deadline_s <= 0:
            raise self._timeout(deadline_s)
        sent = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        # The scheme was checked just above: only http(s) URLs are opened.
        request = urllib.request.Request(  # noqa: S310
            self.url, data=json.dumps(body).encode(), headers=sent, method="POST"
        )
        started = time.monotonic()
        raw = self._send(request, deadline_s)
        latency_s = time.monotonic() - started
        if latency_s > deadline_s:
            # The socket timeout bounds each read, not the whole call: a late answer is late.
            raise self._timeout(deadline_s)
        try:
            return json.loads(raw), latency_s * 1000
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
                raise self._timeout(deadline_s) from None
            raise ModelFailure(
                "unavailable", self.clean(f"cannot reach {self.url}: {reason}"), retryable=True
            ) from None
        except TimeoutError:
            raise self._timeout(deadline_s) from None
        except (http.client.HTTPException, ConnectionError, OSError) as error:
            raise ModelFailure(
                "unavailable",
                self.clean(f"connection to {self.url} failed: {error!r}"),
                retryable=True,
            ) from None

    def _timeout(self, deadline_s: float) -> ModelFailure:
        return ModelFailure(
            "timeout", f"no answer from {self.url} within {deadline_s:g} s", retryable=True
        )

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


def usage_count(raw: Mapping[str, Any], name: str) -> int:
    """A token count from a usage object; 0 when absent or not a number."""
    value = raw.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
