"""A deployment move's recipient key: an RSA key pair whose public half seals an archive's
content and whose private half never leaves the target deployment unsealed.

The archive's content keeps the AWS Encryption SDK's message format (the envelope every
cipher here shares, adapters/envelope.py) with a raw RSA-OAEP wrapping key instead of the
deployment's key: the payload and encryption context are those of the source row, so the
target re-seals them under its own key and `Cipher.open` finds the row it belongs to.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from agent_memory.adapters import envelope

KEY_BITS = 3072
PROVIDER_ID = "agent-memory-move"
# How the public half is written on a command line: a prefix, then base64url of its DER.
PUBLIC_PREFIX = "amrk1_"


class RecipientRefused(Exception):
    """The text given is not a recipient's public key."""


def new_key_pair() -> tuple[bytes, str]:
    """(private key as PKCS#8 PEM, public key as `amrk1_...`)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem, PUBLIC_PREFIX + base64.urlsafe_b64encode(der).decode().rstrip("=")


def public_der(public: str) -> bytes:
    if not public.startswith(PUBLIC_PREFIX):
        raise RecipientRefused(f"a recipient's public key starts with {PUBLIC_PREFIX}")
    body = public.removeprefix(PUBLIC_PREFIX)
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except ValueError:
        raise RecipientRefused("the recipient's public key is not base64url") from None


def key_id(public: str) -> str:
    """A short name of the key pair, the same on both sides."""
    return hashlib.sha256(public_der(public)).hexdigest()[:32]


class RecipientCipher(envelope.RawKeySealing):
    """Seals payloads for the recipient (public half) or opens them (private half)."""

    UNREADABLE = "archived content could not be decrypted"

    def __init__(self, public: str, private_pem: bytes | None = None) -> None:
        from cryptography.hazmat.primitives import serialization

        self.key_id = key_id(public)
        kind: envelope.KeyKind
        if private_pem is None:
            try:
                loaded = serialization.load_der_public_key(public_der(public))
            except ValueError:
                raise RecipientRefused("the recipient's public key does not load") from None
            material = loaded.public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            kind = "PUBLIC"
        else:
            material, kind = private_pem, "PRIVATE"
        # Data keys are reused per encryption context, so the private half unwraps each once.
        super().__init__(
            PROVIDER_ID,
            self.key_id.encode(),
            material,
            wrapping="RSA_OAEP_SHA256_MGF1",
            kind=kind,
            max_age=3600.0,
            max_messages=1_000_000,
        )

    def __repr__(self) -> str:
        return f"RecipientCipher(key_id={self.key_id!r})"


def is_sealed(value: Any) -> bool:
    """Whether stored bytes are an Encryption SDK message (its format version 2 header
    with the committing suite this service seals with)."""
    return isinstance(value, bytes | bytearray) and bytes(value[:3]) == b"\x02\x04\x78"
