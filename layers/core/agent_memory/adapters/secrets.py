"""Model providers' API keys: the environment's value, or a Secrets Manager secret.

The secret is read at the first model call that needs it (a model reads its key at every
call) and kept `max_age_s` seconds, so a rotated key is picked up without a redeploy; a
failed read is that call's `ModelFailure`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_memory.ports.models import ModelFailure

# Secrets Manager errors that no retry fixes: the deployment names a wrong or forbidden secret.
_CONFIG_ERRORS = frozenset(
    {
        "ResourceNotFoundException",
        "AccessDeniedException",
        "DecryptionFailure",
        "InvalidRequestException",
        "InvalidParameterException",
        "ValidationException",
    }
)


class SecretReader:
    """Secret strings by ARN, each read at most once per `max_age_s`; the client is built lazily."""

    def __init__(
        self,
        client_factory: Callable[[], Any],
        *,
        max_age_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_factory = client_factory
        self._client: Any = None
        self._max_age_s = max_age_s
        self._clock = clock
        self._cache: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def __call__(self, secret_id: str) -> str:
        with self._lock:
            now = self._clock()
            cached = self._cache.get(secret_id)
            if cached is not None and now - cached[0] < self._max_age_s:
                return cached[1]
            value = self._read(secret_id)
            self._cache[secret_id] = (now, value)
            return value

    def _read(self, secret_id: str) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            if self._client is None:
                self._client = self._client_factory()
            answer = self._client.get_secret_value(SecretId=secret_id)
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in _CONFIG_ERRORS:
                raise ModelFailure(
                    "config", f"cannot read the API key secret {secret_id}: {code}", retryable=False
                ) from None
            raise ModelFailure(
                "unavailable", f"Secrets Manager answered {code or 'an error'}", retryable=True
            ) from None
        except BotoCoreError as error:
            raise ModelFailure(
                "unavailable",
                f"Secrets Manager could not be reached: {type(error).__name__}",
                retryable=True,
            ) from None
        value = str(answer.get("SecretString") or "").strip()
        if not value:
            raise ModelFailure(
                "config", f"the API key secret {secret_id} has no SecretString", retryable=False
            )
        return value


@dataclass(frozen=True)
class ApiKey:
    """One provider's key: `value` from the environment, else the secret `secret_arn`."""

    value: str = field(repr=False)
    secret_arn: str
    read: Callable[[str], str] = field(repr=False, compare=False)

    def __bool__(self) -> bool:
        """There is a key: in the environment, or a secret to read it from when asked."""
        return bool(self.value or self.secret_arn)

    def __call__(self) -> str:
        """The key; "" when there is none (a local server needs none)."""
        if self.value or not self.secret_arn:
            return self.value
        return self.read(self.secret_arn)
