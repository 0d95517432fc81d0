"""The Cipher port: envelope encryption of content, bound to where it is stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol


class Cipher(Protocol):
    """`scope` (organization, pool, field) partitions the data-key cache, so keep it coarse;
    `row` is sealed inside the payload, so a ciphertext copied to another row fails to open."""

    def seal(self, plaintext: str, *, scope: Mapping[str, str], row: str) -> bytes: ...

    def open(self, blob: bytes, *, scope: Mapping[str, str], row: str) -> str: ...
