"""Agent memories (seed 004): what an agent saved for recall in future runs.

A memory belongs to one organization; a namespaced one (ADR 0082) also to the person who
made it, and no one else of the organization sees it. Every rule of the resource lives here:
the fields and their limits, RFC 3339 time, expiry, and the PATCH rule (only given fields
change).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, cast, get_args

from agent_memory.domain.bounds import (
    DEFAULT_IMPORTANCE,
    MAX_ENTITY_ID_CHARS,
    MAX_ENTITY_TEXT_CHARS,
    MAX_MEMORY_CONTENT_CHARS,
    MAX_MEMORY_PAGE,
)
from agent_memory.domain.entries import Entry, EntryMeta
from agent_memory.domain.errors import Forbidden, ValidationFailed
from agent_memory.domain.identity import Principal
from agent_memory.domain.memory_namespaces import (
    check_namespace_key,
    namespace_of_position,
    namespace_position,
)

Category = Literal["preference", "fact", "instruction"]
EntityType = Literal["account", "actor", "entity"]
CATEGORIES: tuple[str, ...] = get_args(Category)
ENTITY_TYPES: tuple[str, ...] = get_args(EntityType)

# Limits (ADR 0037): a memory is a short note an agent reads; the
# routes' bounds are in domain/bounds.py (a route's module reads them alone).
MAX_METADATA_BYTES = 16_384

_ID = re.compile(r"mem_[0-9a-z]{1,64}")
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)
_PATCHABLE = frozenset({"category", "content", "metadata", "entity", "importance", "expires_at"})
_NULLABLE = frozenset({"metadata", "entity", "expires_at"})


@dataclass(frozen=True)
class Entity:
    """The platform record a memory is about."""

    id: str
    type: EntityType
    name: str | None = None
    handle: str | None = None


@dataclass(frozen=True)
class MemoryObject:
    id: str
    org_id: str
    category: Category
    content: str
    metadata: Any
    entity: Entity | None
    importance: float
    expires_at_ms: int | None
    created_at_ms: int
    updated_at_ms: int
    # Bumped by every write: the condition that keeps a memory and its index rows in step.
    rev: int = 0
    # Where a key-value client (a LangGraph store, ADR 0082) keeps it: a path of labels and a
    # key unique within it; both or neither, and neither changes after creation.
    namespace: tuple[str, ...] | None = None
    key: str | None = None
    # The person (user id) a namespaced memory belongs to: everyone else's 404.
    owner: str | None = None

    def is_expired(self, now_ms: int) -> bool:
        """Past `expires_at` a memory is left out of lists and recall (still read by id)."""
        return self.expires_at_ms is not None and self.expires_at_ms <= now_ms


@dataclass(frozen=True)
class MemoryPage:
    """One page of a list or a recall, newest or most important first."""

    memories: list[MemoryObject]
    has_more: bool
    # Expired memories the read stepped over (not returned): for benchmarks and logs.
    skipped_expired: int = 0


def memory_org(principal: Principal) -> str:
    """The organization whose memories the caller uses. The service admin token belongs to
    no organization, so it has no memories to address."""
    if principal.org_id is None:
        raise Forbidden("agent memories belong to an organization: call with a user's token")
    return principal.org_id


def is_memory_id(value: str) -> bool:
    return _ID.fullmatch(value) is not None


# --- Time (RFC 3339 in this resource) ------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)
_MIN_MS = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _MS
_MAX_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - _EPOCH) // _MS


def parse_timestamp(text: str, path: list[str | int]) -> int:
    """Milliseconds since epoch of an RFC 3339 date-time with any offset; finer digits than
    milliseconds are dropped."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ValidationFailed("expected an RFC 3339 date-time such as 2026-05-01T12:00:00Z", path)
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    millis = int((match.group(7) or "0")[:3].ljust(3, "0"))
    offset = timedelta(0)
    if match.group(9):
        hours, minutes = int(match.group(10)), int(match.group(11))
        if hours > 23 or minutes > 59:
            raise ValidationFailed("the UTC offset is out of range", path)
        offset = timedelta(hours=hours, minutes=minutes) * (1 if match.group(9) == "+" else -1)
    try:
        local = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as error:
        raise ValidationFailed(f"not a valid date-time: {error}", path) from error
    ms = ((local - _EPOCH) - offset) // _MS + millis
    if not _MIN_MS <= ms <= _MAX_MS:
        raise ValidationFailed("the date-time is out of range in UTC", path)
    return ms


def format_timestamp(ms: int) -> str:
    """RFC 3339 in UTC with milliseconds, e.g. `2026-10-19T12:00:00.000Z`."""
    t = _EPOCH + ms * _MS
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
        f".{t.microsecond // 1000:03d}Z"
    )


# --- Field rules ----------------------------------------------------------------------------


def check_category(value: Any) -> Category:
    if value not in CATEGORIES:
        raise ValidationFailed(f"category must be one of {', '.join(CATEGORIES)}", ["category"])
    return cast(Category, value)


def check_content(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed("content is required and may not be blank", ["content"])
    if len(value) > MAX_MEMORY_CONTENT_CHARS:
        raise ValidationFailed(
            f"content may hold at most {MAX_MEMORY_CONTENT_CHARS} characters", ["content"]
        )
    return value


def check_importance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationFailed("importance must be a number from 0 to 1", ["importance"])
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise ValidationFailed("importance must be a number from 0 to 1", ["importance"])
    return number + 0.0  # -0.0 becomes 0.0, so it sorts with the zeros


def check_metadata(value: Any) -> Any:
    """Any JSON value; its JSON encoding may hold at most MAX_METADATA_BYTES."""
    try:
        encoded = encode_metadata(value)
    except (TypeError, ValueError) as error:
        raise ValidationFailed("metadata must be a JSON value", ["metadata"]) from error
    if len(encoded.encode()) > MAX_METADATA_BYTES:
        raise ValidationFailed(
            f"metadata may take at most {MAX_METADATA_BYTES} bytes as JSON", ["metadata"]
        )
    return value


def check_entity(value: Entity | None) -> Entity | None:
    if value is None:
        return None
    if not value.id or len(value.id) > MAX_ENTITY_ID_CHARS:
        raise ValidationFailed(
            f"entity.id must hold 1 to {MAX_ENTITY_ID_CHARS} characters", ["entity", "id"]
        )
    if value.type not in ENTITY_TYPES:
        raise ValidationFailed(
            f"entity.type must be one of {', '.join(ENTITY_TYPES)}", ["entity", "type"]
        )
    for name in ("name", "handle"):
        text = getattr(value, name)
        if text is not None and len(text) > MAX_ENTITY_TEXT_CHARS:
            raise ValidationFailed(
                f"entity.{name} may hold at most {MAX_ENTITY_TEXT_CHARS} characters",
                ["entity", name],
            )
    return value


def check_expires_at(value: str | None) -> int | None:
    return None if value is None else parse_timestamp(value, ["expires_at"])


def check_limit(value: int, path: list[str | int]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_MEMORY_PAGE:
        raise ValidationFailed(f"limit must be an integer from 1 to {MAX_MEMORY_PAGE}", path)
    return value


def encode_metadata(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# --- Use-case rules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NewMemory:
    """What a client sends to create a memory (times as RFC 3339 text)."""

    category: str
    content: str
    metadata: Any = None
    entity: Entity | None = None
    importance: float = DEFAULT_IMPORTANCE
    expires_at: str | None = None
    namespace: Any = None
    key: Any = None


def create_memory(
    memory_id: str, org_id: str, new: NewMemory, now_ms: int, owner: str | None = None
) -> MemoryObject:
    """A validated memory; an `expires_at` in the past is allowed (stored, hidden). A
    namespaced one needs its `owner`."""
    place = check_namespace_key(new.namespace, new.key)
    if place is not None and owner is None:
        raise Forbidden("a namespaced agent memory belongs to a person", ["namespace"])
    return MemoryObject(
        id=memory_id,
        org_id=org_id,
        category=check_category(new.category),
        content=check_content(new.content),
        metadata=check_metadata(new.metadata),
        entity=check_entity(new.entity),
        importance=check_importance(new.importance),
        expires_at_ms=check_expires_at(new.expires_at),
        created_at_ms=now_ms,
        updated_at_ms=now_ms,
        namespace=place[0] if place else None,
        key=place[1] if place else None,
        owner=owner if place else None,
    )


def parse_patch(patch: Mapping[str, Any]) -> dict[str, Any]:
    """The changes a PATCH asks for, checked: only the given fields change; `null` clears
    metadata, entity and expires_at and is refused for the others."""
    for name in patch:
        if name not in _PATCHABLE:
            raise ValidationFailed("unknown field", [name])
        if patch[name] is None and name not in _NULLABLE:
            raise ValidationFailed(f"{name} cannot be null", [name])
    checks: dict[str, Any] = {
        "category": check_category,
        "content": check_content,
        "metadata": check_metadata,
        "entity": check_entity,
        "importance": check_importance,
    }
    changes = {name: check(patch[name]) for name, check in checks.items() if name in patch}
    if "expires_at" in patch:
        changes["expires_at_ms"] = check_expires_at(patch["expires_at"])
    return changes


def apply_patch(memory: MemoryObject, changes: Mapping[str, Any], now_ms: int) -> MemoryObject:
    """`memory` with `changes` (from `parse_patch`). `updated_at` moves forward by at least
    1 ms even within one clock tick, so clients can tell versions apart; `created_at` stays."""
    updated = max(now_ms, memory.updated_at_ms + 1)
    return replace(memory, **changes, updated_at_ms=updated, rev=memory.rev + 1)


# --- As an entry of the one entry model ----------------------------------------------------

ENTITY_TAG = "entity:"
# `ns:<namespace position>`: a namespaced memory's labels (its key is the entry's key).
NAMESPACE_TAG = "ns:"
# `owner:<user id>`: the person a namespaced memory belongs to (an id, in the clear).
OWNER_TAG = "owner:"


def _tagged(meta: EntryMeta, prefix: str) -> str | None:
    return next((t.removeprefix(prefix) for t in meta.tags if t.startswith(prefix)), None)


def entity_of(meta: EntryMeta) -> tuple[str, str] | None:
    """(type, id) of the entity an entry is about, from its `entity:<type>:<id>` tag."""
    tag = _tagged(meta, ENTITY_TAG)
    if tag is None:
        return None
    kind, _, entity_id = tag.partition(":")
    return kind, entity_id


def memory_entry(memory: MemoryObject) -> tuple[EntryMeta, str, str | None]:
    """The memory as an entry: metadata in the clear, content and details (metadata, the
    entity's name and handle, as JSON) to be sealed."""
    entity = memory.entity
    tags: tuple[str, ...] = (f"{ENTITY_TAG}{entity.type}:{entity.id}",) if entity else ()
    if memory.namespace is not None:
        tags += (f"{NAMESPACE_TAG}{namespace_position(memory.namespace)}",)
    if memory.owner is not None:
        tags += (f"{OWNER_TAG}{memory.owner}",)
    meta = EntryMeta(
        id=memory.id,
        key=memory.key,
        kind=memory.category,
        tags=tags,
        importance=memory.importance,
        expires_at=memory.expires_at_ms,
        created_at=memory.created_at_ms,
        updated_at=memory.updated_at_ms,
        rev=memory.rev,
        length=len(memory.content),
    )
    extras: dict[str, Any] = {}
    if memory.metadata is not None:
        extras["metadata"] = memory.metadata
    if entity is not None and (entity.name is not None or entity.handle is not None):
        extras["entity"] = {"name": entity.name, "handle": entity.handle}
    details = json.dumps(extras, ensure_ascii=False, separators=(",", ":")) if extras else None
    return meta, memory.content, details


def namespace_tag(meta: EntryMeta) -> str | None:
    """The namespace position of a namespaced entry (its `ns:` tag)."""
    return _tagged(meta, NAMESPACE_TAG)


def owner_of(meta: EntryMeta) -> str | None:
    """The person a namespaced entry belongs to (its `owner:` tag)."""
    return _tagged(meta, OWNER_TAG)


def memory_of(org_id: str, entry: Entry) -> MemoryObject:
    """The memory an entry of an organization's pool holds."""
    meta = entry.meta
    extras: dict[str, Any] = json.loads(entry.details) if entry.details else {}
    about = entity_of(meta)
    entity = None
    if about is not None:
        text = extras.get("entity") or {}
        entity = Entity(
            id=about[1],
            type=cast(EntityType, about[0]),
            name=text.get("name"),
            handle=text.get("handle"),
        )
    position = namespace_tag(meta)
    return MemoryObject(
        id=meta.id,
        org_id=org_id,
        category=cast(Category, meta.kind),
        content=entry.content,
        metadata=extras.get("metadata"),
        entity=entity,
        importance=meta.importance if meta.importance is not None else DEFAULT_IMPORTANCE,
        expires_at_ms=meta.expires_at,
        created_at_ms=meta.created_at,
        updated_at_ms=meta.updated_at,
        rev=meta.rev,
        namespace=namespace_of_position(position) if position is not None else None,
        key=meta.key if position is not None else None,
        owner=owner_of(meta),
    )
