"""The single table's rows as SQLite keeps them: records as JSON text that keeps int apart
from float and bytes as bytes.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any

from agent_memory.ports.store import KeyRange, Record

# Bytes, and maps with a NUL-led key, are tagged with a key that starts with NUL.
_TAG = "\x00"
_BYTES = "\x00b"
_MAP = "\x00m"


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a stored number must be finite")
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {_BYTES: base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a stored map's keys must be strings")
        if any(k.startswith(_TAG) for k in value):
            return {_MAP: [[k, _encode(v)] for k, v in value.items()]}
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if isinstance(value, set | frozenset):
        return [_encode(v) for v in sorted(value)]  # as DynamoDB's sets read back
    raise TypeError(f"a store value cannot be a {type(value).__name__}")


def _decode_object(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        if _BYTES in obj:
            return base64.b64decode(obj[_BYTES])
        if _MAP in obj:
            return dict(obj[_MAP])
    return obj


def encode_record(record: Mapping[str, Any]) -> str:
    """The stored text of a record (attributes set to None are left out)."""
    # The record itself is never tagged, so the TTL index's expression finds its attribute.
    kept = {k: _encode(v) for k, v in record.items() if v is not None}
    return json.dumps(kept, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def decode_record(text: str) -> Record:
    record: Record = json.loads(text, object_hook=_decode_object)
    return record


def range_terms(key_range: KeyRange | None) -> list[tuple[str, str]]:
    """The sort key's bounds of a range: (comparison, bound) pairs."""
    if key_range is None:
        return []
    low, high, below = key_range.low, key_range.high, None
    if key_range.prefix is not None:
        low, high, below = key_range.prefix, None, _after_prefix(key_range.prefix)
    pairs = ((">=", low), ("<=", high), ("<", below))
    return [(term, bound) for term, bound in pairs if bound is not None]


def _after_prefix(prefix: str) -> str | None:
    """The least string above every string starting with `prefix` (code-point order)."""
    while prefix:
        last = ord(prefix[-1])
        if last < 0x10FFFF:
            following = last + 1 if last + 1 != 0xD800 else 0xE000  # no surrogates in UTF-8
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None
