"""What Client and AsyncClient share: the retry rule, request encoding, answer decoding."""

from __future__ import annotations

import email.utils
import random
import time
from typing import Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from agent_memory_client.errors import AgentMemoryError, error_from_answer

# The service answers these when the request was not carried out: retrying is safe.
RETRY_STATUSES = frozenset({429, 503})
USER_AGENT = "agent-memory-client/0.1"


class _Unset:
    """A keyword argument left out (unlike `None`, which PATCH reads as "reset")."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


def given(**fields: Any) -> dict[str, Any]:
    """The keyword arguments that were passed (not UNSET), `None` included."""
    return {name: value for name, value in fields.items() if value is not UNSET}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (a number, or an HTTP date), or None when absent/unreadable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_delay(response: httpx.Response, attempt: int, backoff: float, max_wait: float) -> float:
    """How long to wait before retry number `attempt` (0-based): the service's `Retry-After`
    when it sent one, else exponential backoff with jitter; never more than `max_wait`."""
    told = retry_after_seconds(response)
    if told is not None:
        return min(told, max_wait)
    # Jitter spreads clients that were throttled together.
    delay = backoff * float(2**attempt) * (0.5 + random.random() / 2)  # noqa: S311
    return min(delay, max_wait)


def fill_path(template: str, values: dict[str, str | int]) -> str:
    """The route's path with each `{name}` replaced by its value, escaped as one segment."""
    return template.format(**{k: quote(str(v), safe="") for k, v in values.items()})


def encode(body: BaseModel | None) -> Any:
    """A body as the service reads it: JSON names, fields left unset omitted (so PATCH
    keeps them) but explicit `None` sent (so PATCH resets them)."""
    if body is None:
        return None
    return body.model_dump(mode="json", by_alias=True, exclude_unset=True)


def raise_for_answer(response: httpx.Response) -> None:
    """Raise the typed error of an error answer."""
    if response.status_code < 400:
        return
    try:
        payload: Any = response.json()
    except ValueError:
        payload = response.text
    raise error_from_answer(
        response.status_code, payload, retry_after=retry_after_seconds(response)
    )


def query(**params: Any) -> dict[str, Any]:
    """Query parameters without the ones left out or None."""
    return {k: v for k, v in params.items() if v is not None and v is not UNSET}


__all__ = [
    "RETRY_STATUSES",
    "UNSET",
    "USER_AGENT",
    "AgentMemoryError",
    "encode",
    "fill_path",
    "given",
    "query",
    "raise_for_answer",
    "retry_delay",
]
