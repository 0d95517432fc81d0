"""Text that can be stored: a string is kept only if it can be encoded as UTF-8.

JSON lets a client write a lone UTF-16 surrogate (`"\\ud800"`), and a byte that is not UTF-8
decodes (with `surrogateescape`) to one too. Such a string cannot be sealed, written to
DynamoDB or sent back, so it is refused where it enters, with the path of the field that
holds it, before anything is read or stored (ADR 0049).
"""

from __future__ import annotations

import re
from typing import Any

UNENCODABLE = "text that cannot be encoded as UTF-8 (a lone surrogate or a byte that is not UTF-8)"

# Every code point UTF-8 cannot encode: the surrogates (a valid pair is one code point in str).
_SURROGATE = re.compile("[\ud800-\udfff]")

Path = list[str | int]


def encodable(text: str) -> bool:
    return text.isascii() or _SURROGATE.search(text) is None


def shown(text: str) -> str:
    """`text` as an error may show it: each unencodable code point as its `\\uXXXX` escape."""
    return text if encodable(text) else text.encode("utf-8", "backslashreplace").decode()


def first_unencodable(value: Any) -> Path | None:
    """The path of the first string (an object's key or a value), in document order, that
    cannot be encoded; None when every string can. A bad key is named by its escape."""
    # Iterative, so the deepest document the JSON parser accepts cannot exhaust the stack.
    pending: list[tuple[Path, Any]] = [([], value)]
    while pending:
        path, node = pending.pop()
        if isinstance(node, str):
            if not encodable(node):
                return path
        elif isinstance(node, dict):
            children: list[tuple[Path, Any]] = []
            for key, child in node.items():
                if not encodable(key):
                    # The key itself is checked before its value and the later members.
                    children.append(([*path, shown(key)], key))
                    break
                children.append(([*path, key], child))
            pending.extend(reversed(children))
        elif isinstance(node, list):
            pending.extend(reversed([([*path, index], item) for index, item in enumerate(node)]))
    return None
