"""Where a key-value client keeps an agent memory (ADR 0082): its namespace of labels and
its key, their place among the person's memories, and whose such a memory is."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.domain.bounds import (
    MAX_NAMESPACE_DEPTH,
    MAX_NAMESPACE_KEY_BYTES,
    MAX_NAMESPACE_KEY_CHARS,
    MAX_NAMESPACE_LABEL_CHARS,
)
from agent_memory.domain.errors import Forbidden, ValidationFailed
from agent_memory.domain.identity import Principal

if TYPE_CHECKING:
    from agent_memory.domain.memory_objects import MemoryObject


def namespace_owner(principal: Principal) -> str:
    """The person a namespaced memory of the caller belongs to: a user's own, or the person a
    service key acts for. Without a person (a bare key) there is no one to keep it for."""
    if principal.user_id is None:
        raise Forbidden(
            "a namespaced agent memory belongs to a person: call with a user's token "
            "or a service key acting for a person",
            ["namespace"],
        )
    return principal.user_id


def visible_to(memory: MemoryObject, user_id: str | None) -> bool:
    """A plain memory is the organization's; a namespaced one its owner's alone."""
    return memory.owner is None or memory.owner == user_id


def check_namespace(value: Any, path: list[str | int]) -> tuple[str, ...]:
    """1 to MAX_NAMESPACE_DEPTH labels, each 1 to MAX_NAMESPACE_LABEL_CHARS characters."""
    if not isinstance(value, list | tuple) or not 1 <= len(value) <= MAX_NAMESPACE_DEPTH:
        raise ValidationFailed(
            f"namespace must be a list of 1 to {MAX_NAMESPACE_DEPTH} labels", path
        )
    for index, label in enumerate(value):
        if not isinstance(label, str) or not 1 <= len(label) <= MAX_NAMESPACE_LABEL_CHARS:
            raise ValidationFailed(
                f"a namespace label holds 1 to {MAX_NAMESPACE_LABEL_CHARS} characters",
                [*path, index],
            )
    return tuple(value)


def check_namespace_key(namespace: Any, key: Any) -> tuple[tuple[str, ...], str] | None:
    """A memory's (namespace, key): both or neither."""
    if namespace is None and key is None:
        return None
    if namespace is None:
        raise ValidationFailed("a key needs a namespace", ["namespace"])
    labels = check_namespace(namespace, ["namespace"])
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_NAMESPACE_KEY_CHARS:
        raise ValidationFailed(
            f"key must hold 1 to {MAX_NAMESPACE_KEY_CHARS} characters (with a namespace)", ["key"]
        )
    if len(namespace_key_position(labels, key).encode()) > MAX_NAMESPACE_KEY_BYTES:
        raise ValidationFailed(
            f"namespace and key together may take at most {MAX_NAMESPACE_KEY_BYTES} bytes",
            ["key"],
        )
    return labels, key


def position_part(text: str) -> str:
    """A label or key as a part of a position: `/` and `#` cannot split it."""
    return text.replace("%", "%25").replace("/", "%2F").replace("#", "%23")


def _unlabel(text: str) -> str:
    return text.replace("%2F", "/").replace("%23", "#").replace("%25", "%")


def namespace_position(labels: tuple[str, ...]) -> str:
    """`a/b/` for ("a", "b"): a prefix of this position is a prefix of labels, never of a
    label's characters, so ("a",) matches ("a", "b") and not ("ab",)."""
    return "".join(f"{position_part(label)}/" for label in labels)


def namespace_key_position(labels: tuple[str, ...], key: str) -> str:
    """`a/b/#<key>`: one item's place among its organization's namespaced memories."""
    return f"{namespace_position(labels)}#{position_part(key)}"


def namespace_of_position(position: str) -> tuple[str, ...]:
    return tuple(_unlabel(label) for label in position.split("/")[:-1])


def in_namespace(memory: MemoryObject, prefix: tuple[str, ...]) -> bool:
    return memory.namespace is not None and memory.namespace[: len(prefix)] == prefix
