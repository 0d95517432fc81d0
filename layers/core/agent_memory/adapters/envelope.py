"""The Encryption SDK envelope every content cipher shares, whatever wraps its data keys.

Committing suite without ECDSA (the writer is also the reader); a caching materials manager
reuses data keys per scope, so the encryption context is that coarse scope and the row id is
sealed inside the payload and checked after decrypt.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any, Literal

from agent_memory.domain.errors import IntegrityError

SUITE_NAME = "AES_256_GCM_HKDF_SHA512_COMMIT_KEY"
# zlib streams start with "x", JSON with "{": a payload opens by its first byte.
COMPRESS_FROM = 512
_ZLIB_FIRST = b"x"


# Data keys the cache holds: one per scope in use.
CACHE_CAPACITY = 1000


def materials(provider: Any, *, max_age: float, max_messages: int) -> tuple[Any, Any, Any]:
    """(client, caching materials manager, algorithm suite) over a master key provider."""
    import aws_encryption_sdk
    from aws_encryption_sdk.identifiers import Algorithm, CommitmentPolicy

    cmm = aws_encryption_sdk.CachingCryptoMaterialsManager(
        master_key_provider=provider,
        cache=aws_encryption_sdk.LocalCryptoMaterialsCache(capacity=CACHE_CAPACITY),
        max_age=max_age,
        max_messages_encrypted=max_messages,
    )
    client = aws_encryption_sdk.EncryptionSDKClient(
        commitment_policy=CommitmentPolicy.REQUIRE_ENCRYPT_REQUIRE_DECRYPT
    )
    return client, cmm, getattr(Algorithm, SUITE_NAME)


class Sealing:
    """Seal and open through the SDK: `_materials` gives (client, materials manager, suite)
    and `_refused` what a call the SDK failed raises."""

    def _materials(self) -> tuple[Any, Any, Any]:
        raise NotImplementedError

    def _refused(self, error: Exception) -> Exception:
        raise NotImplementedError

    def seal(self, plaintext: str, *, scope: Mapping[str, str], row: str) -> bytes:
        return self.wrap(bind(plaintext, row), scope)

    def open(self, blob: bytes, *, scope: Mapping[str, str], row: str) -> str:
        payload, context = self.unwrap(blob)
        return unbind(payload, context, scope=scope, row=row)

    def wrap(self, payload: bytes, context: Mapping[str, str]) -> bytes:
        """`payload` sealed under this key with `context`, as `seal` seals a bound text."""
        client, cmm, suite = self._materials()
        try:
            ciphertext, _header = client.encrypt(
                source=payload,
                materials_manager=cmm,
                encryption_context=dict(context),
                algorithm=suite,
            )
        except Exception as error:
            raise self._refused(error) from error
        return bytes(ciphertext)

    def unwrap(self, blob: bytes) -> tuple[bytes, dict[str, str]]:
        """The sealed payload and its encryption context, unchecked: a move re-seals them
        as they are for another key (infra/move/recipient.py)."""
        client, cmm, _suite = self._materials()
        try:
            payload, header = client.decrypt(source=blob, materials_manager=cmm)
        except Exception as error:
            raise self._refused(error) from error
        return bytes(payload), dict(header.encryption_context)


# The SDK's `WrappingAlgorithm` and `EncryptionKeyType` members the raw-key ciphers use, by
# name: the SDK is imported at the first seal, not when this module loads.
Wrapping = Literal["AES_256_GCM_IV12_TAG16_NO_PADDING", "RSA_OAEP_SHA256_MGF1"]
KeyKind = Literal["SYMMETRIC", "PUBLIC", "PRIVATE"]


class RawKeySealing(Sealing):
    """Sealing under a raw wrapping key held in this process (the local key file, a move's
    recipient key). `wrapping` and `kind` name the SDK's `WrappingAlgorithm` and
    `EncryptionKeyType` of `key`."""

    # What a blob that does not open says (nothing here is transient: tampered with, or
    # sealed under another key).
    UNREADABLE = "stored content could not be decrypted"

    def __init__(
        self,
        provider_id: str,
        key_id: bytes,
        key: bytes,
        *,
        wrapping: Wrapping,
        kind: KeyKind,
        max_age: float,
        max_messages: int,
    ) -> None:
        from aws_encryption_sdk.identifiers import EncryptionKeyType, WrappingAlgorithm
        from aws_encryption_sdk.internal.crypto.wrapping_keys import WrappingKey
        from aws_encryption_sdk.key_providers.raw import RawMasterKey

        wrapping_key = WrappingKey(
            wrapping_algorithm=getattr(WrappingAlgorithm, wrapping),
            wrapping_key=key,
            wrapping_key_type=getattr(EncryptionKeyType, kind),
        )
        master_key = RawMasterKey(provider_id=provider_id, key_id=key_id, wrapping_key=wrapping_key)
        self._client, self._cmm, self._suite = materials(
            master_key, max_age=max_age, max_messages=max_messages
        )

    def _materials(self) -> tuple[Any, Any, Any]:
        return self._client, self._cmm, self._suite

    def _refused(self, error: Exception) -> Exception:
        return IntegrityError(self.UNREADABLE)


def bind(plaintext: str, row: str) -> bytes:
    """The text with the row it belongs to, compressed when that pays."""
    payload = json.dumps({"row": row, "text": plaintext}, ensure_ascii=False).encode()
    if len(payload) >= COMPRESS_FROM:
        packed = zlib.compress(payload, 6)
        if len(packed) < len(payload):
            return packed
    return payload


def unbind(
    payload: bytes, context: Mapping[str, str], *, scope: Mapping[str, str], row: str
) -> str:
    """The text of a decrypted payload, when it was sealed for this scope and row."""
    if any(context.get(k) != v for k, v in scope.items()):
        raise IntegrityError("stored content belongs to another organization or pool")
    if payload[:1] == _ZLIB_FIRST:
        try:
            payload = zlib.decompress(payload)
        except zlib.error:
            raise IntegrityError("stored content cannot be decompressed") from None
    sealed = json.loads(payload)
    if sealed.get("row") != row:
        raise IntegrityError("stored content belongs to another row")
    return str(sealed["text"])
