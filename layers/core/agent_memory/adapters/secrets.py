"""Model providers' API keys: the environment's value, or a Secrets Manager secret.

The secret is read at the first model call that needs it and kept `max_age_s` seconds, so a
rotated key is picked up without a redeploy; a failed read is that call's `ModelFailure`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.ports import (
    LearningModel,
    ModelCatalog,
    ModelFailure,
    ModelReply,
)
from agent_memory.ports.models import ModelRequest

DEFAULT_MAX_AGE_S = 300.0
# Stands for a secret's key while deciding whether a name resolves; never sent anywhere.
_UNREAD = "unread-secret"
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
        max_age_s: float = DEFAULT_MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client_factory = client_factory
        self._client: Any = None
        self._max_age_s = max_age_s
        self._clock = clock
        self._cache: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SecretReader(max_age_s={self._max_age_s})"

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

    value: str = field(default="", repr=False)
    secret_arn: str = ""
    read: Callable[[str], str] | None = field(default=None, repr=False, compare=False)

    @property
    def from_secret(self) -> bool:
        """The key must be read from Secrets Manager (no value in the environment)."""
        return not self.value and bool(self.secret_arn) and self.read is not None

    def __call__(self) -> str:
        if self.from_secret:
            assert self.read is not None  # from_secret checked it
            return self.read(self.secret_arn)
        return self.value


class KeyedCatalog:
    """`ports.ModelCatalog` that reads providers' keys at their first model call.

    `build(keys)` makes the real catalog; a secret-keyed provider's model reads its key when
    asked and is rebuilt when the key changes."""

    def __init__(
        self, build: Callable[[Mapping[str, str]], ModelCatalog], keys: Mapping[str, ApiKey]
    ) -> None:
        self._build = build
        self._keys = dict(keys)
        self._known = {p: k.value for p, k in keys.items() if not k.from_secret and k.value}
        self._plain = build(self._known)
        self._probe = build({**self._known, **{p: _UNREAD for p in keys if p not in self._known}})
        self._deferred: dict[str, LearningModel] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"KeyedCatalog(providers={sorted(self._keys)})"

    def providers(self) -> tuple[str, ...]:
        """As the real catalog, a provider keyed by a secret counted as set (none is read)."""
        plain = self._plain.providers()
        secret = {p for p, key in self._keys.items() if key.from_secret}
        return tuple(p for p in self._probe.providers() if p in plain or p in secret)

    def resolve(self, name: str | None) -> LearningModel | None:
        """As the real catalog; a secret-keyed provider's model reads its key when asked."""
        if not name:
            return None
        provider = name.partition("/")[0]
        key = self._keys.get(provider)
        if key is None or not key.from_secret:
            return self._plain.resolve(name)
        if self._probe.resolve(name) is None:
            return None
        with self._lock:
            if name not in self._deferred:
                self._deferred[name] = _KeyedOnFirstCall(name, key, self._with_key(provider, name))
            return self._deferred[name]

    def _with_key(self, provider: str, name: str) -> Callable[[str], LearningModel | None]:
        def build(key: str) -> LearningModel | None:
            return self._build({**self._known, provider: key}).resolve(name)

        return build


class _KeyedOnFirstCall:
    """A `LearningModel` built when first asked, once its key has been read."""

    def __init__(self, name: str, key: ApiKey, build: Callable[[str], LearningModel | None]):
        self.name = name
        self._key = key
        self._build = build
        self._model: LearningModel | None = None
        self._built_with: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"_KeyedOnFirstCall(name={self.name!r})"

    def propose(self, request: ModelRequest) -> ModelReply:
        key = self._key()
        with self._lock:
            if self._built_with != key:
                self._model = self._build(key)
                self._built_with = key
            model = self._model
        if model is None:
            raise ModelFailure("config", f"{self.name} is not available here", retryable=False)
        return model.propose(request)
