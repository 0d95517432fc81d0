"""Content encryption with the AWS Encryption SDK under one KMS key (adapters/envelope.py)."""

from __future__ import annotations

import threading
from typing import Any

from agent_memory.adapters import envelope
from agent_memory.domain.errors import IntegrityError, Unavailable


class KmsCipher(envelope.Sealing):
    """`ports.Cipher` over KMS; the SDK is imported on first use to keep cold starts light."""

    def __init__(
        self,
        key_id: str,
        *,
        botocore_session: Any = None,
        cache_seconds: float = 300.0,
        cache_messages: int = 100_000,
    ) -> None:
        self._key_id = key_id
        self._botocore_session = botocore_session
        self._cache_seconds = cache_seconds
        self._cache_messages = cache_messages
        self._lock = threading.Lock()
        self._ready: tuple[Any, Any, Any] | None = None
        # The SDK drops the KMS cause: this thread's last KMS error tells an outage apart.
        self._kms_error = threading.local()

    def _materials(self) -> tuple[Any, Any, Any]:
        if self._ready is None:
            with self._lock:
                if self._ready is None:
                    self._kms_error.code = None
                    try:
                        self._ready = self._build()
                    except Exception as error:
                        raise self._refused(error) from error
        # The SDK call that follows tells its own KMS error.
        self._kms_error.code = None
        return self._ready

    def _build(self) -> tuple[Any, Any, Any]:
        from aws_encryption_sdk.key_providers.kms import StrictAwsKmsMasterKeyProvider

        if self._botocore_session is None:
            import botocore.session

            self._botocore_session = botocore.session.get_session()
        marker = f"agent-memory-kms-{id(self)}"
        self._botocore_session.register(
            "after-call.kms", self._record_kms_answer, unique_id=f"{marker}-answer"
        )
        self._botocore_session.register(
            "after-call-error.kms", self._record_kms_exception, unique_id=f"{marker}-error"
        )
        key_arn = self._key_id
        if not key_arn.startswith("arn:") or ":alias/" in key_arn:
            # Strict providers decrypt only with key ARNs: resolve an alias once per cold start.
            import boto3

            kms = boto3.session.Session(botocore_session=self._botocore_session).client("kms")
            key_arn = kms.describe_key(KeyId=self._key_id)["KeyMetadata"]["Arn"]
        provider = StrictAwsKmsMasterKeyProvider(
            key_ids=[key_arn], botocore_session=self._botocore_session
        )
        return envelope.materials(
            provider,
            max_age=self._cache_seconds,
            max_messages=self._cache_messages,
        )

    def _record_kms_answer(self, parsed: Any = None, **_: Any) -> None:
        code = parsed.get("Error", {}).get("Code") if isinstance(parsed, dict) else None
        if code:
            self._kms_error.code = code

    def _record_kms_exception(self, exception: BaseException | None = None, **_: Any) -> None:
        if exception is not None:
            self._kms_error.code = "ConnectionError"

    def _refused(self, error: Exception) -> Exception:
        code = getattr(self._kms_error, "code", None)
        if code in _KMS_TRANSIENT or code == "ConnectionError":
            return Unavailable("the key service failed; retry shortly")
        return _unavailable(error)


_KMS_TRANSIENT = {
    "ThrottlingException",
    "LimitExceededException",
    "KMSInternalException",
    "DependencyTimeoutException",
    "ServiceUnavailableException",
    "KeyUnavailableException",
}


def _unavailable(error: BaseException) -> Exception:
    """A KMS outage is transient (503); anything else means the blob does not open here."""
    from botocore.exceptions import BotoCoreError, ClientError

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, BotoCoreError):
            return Unavailable("the key service could not be reached; retry shortly")
        if isinstance(seen, ClientError):
            if seen.response.get("Error", {}).get("Code") in _KMS_TRANSIENT:
                return Unavailable("the key service is busy; retry shortly")
            break
        seen = seen.__cause__ or seen.__context__
    return IntegrityError("stored content could not be decrypted")
