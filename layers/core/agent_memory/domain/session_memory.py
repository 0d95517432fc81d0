"""Session memory (seed 000, "Memory"): entries, the commands that change them, the switches.

An entry is one fact under a stable key; its server id derives from the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.bounds import MAX_ENTRY_CONTENT
from agent_memory.domain.entries import EntryMeta, ItemSource, Source, keyed_entry, keyed_id
from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.identity import configured
from agent_memory.domain.proposals import (
    KEY_PATTERN,
    MAX_KEY_LENGTH,
    MEMORY_KINDS,
)
from agent_memory.domain.secrets import key_secret

SWITCHES: tuple[str, ...] = ("use", "generate")
ENTRY_NAMESPACE = "session"


def entry_id(key: str) -> str:
    """The server id of the fact under `key` (stable: a Fork's copy keeps it)."""
    return keyed_id(ENTRY_NAMESPACE, key)


def fact(
    key: str,
    kind: str,
    content: str,
    sources: tuple[Source, ...],
    now_ms: int,
    rev: int,
    previous: EntryMeta | None = None,
) -> EntryMeta:
    """The metadata of an active fact written at revision `rev` (over `previous`, if any)."""
    return keyed_entry(
        ENTRY_NAMESPACE,
        key,
        kind,
        content,
        now_ms=now_ms,
        rev=rev,
        sources=sources,
        previous=previous,
    )


def item_sources(item_ids: tuple[str, ...] | list[str]) -> tuple[Source, ...]:
    return tuple(ItemSource(item) for item in item_ids)


@dataclass(frozen=True)
class Remember:
    """Add a fact, or replace the fact with this key; it becomes active."""

    key: str
    content: str
    kind: str


@dataclass(frozen=True)
class Forget:
    """Mark the fact retracted. An unknown key is a conflict."""

    key: str


@dataclass(frozen=True)
class Configure:
    """Set (True/False) or reset (None) the switches named in `changes`; others are kept."""

    changes: Mapping[str, bool | None]


@dataclass(frozen=True)
class Refresh:
    """Run consolidation now with the Session's model."""


Command = Remember | Forget | Configure | Refresh


def check_key(key: str, path: list[str | int]) -> str:
    """Keys are 1..100 characters of letters, digits, '.', '_' and '-' (as models write them)."""
    if not KEY_PATTERN.fullmatch(key.lower()):
        raise ValidationFailed(
            f"a key is 1..{MAX_KEY_LENGTH} characters of letters, digits, '.', '_' or '-'", path
        )
    # A key is plaintext metadata: it must name what a fact is about, never carry a secret.
    what = key_secret(key)
    if what is not None:
        raise ValidationFailed(f"a key is stored in plaintext and this one looks like {what}", path)
    return key


def check_command(command: Command) -> Command:
    """Errors name `["command", <field>]`."""
    match command:
        case Remember(key, content, kind):
            check_key(key, ["command", "key"])
            if kind not in MEMORY_KINDS:
                raise ValidationFailed(
                    f"kind must be one of {', '.join(MEMORY_KINDS)}", ["command", "kind"]
                )
            if not content.strip():
                raise ValidationFailed("content must not be empty", ["command", "content"])
            if len(content) > MAX_ENTRY_CONTENT:
                raise ValidationFailed(
                    f"content is at most {MAX_ENTRY_CONTENT} characters", ["command", "content"]
                )
        case Forget(key):
            check_key(key, ["command", "key"])
        case Configure(changes):
            for name, value in changes.items():
                if name not in SWITCHES:
                    raise ValidationFailed("unknown field", ["command", name])
                if value is not None and not isinstance(value, bool):
                    raise ValidationFailed("a switch is true, false or null", ["command", name])
        case Refresh():
            pass
    return command


def edit_note(command: Remember | Forget) -> str:
    """The text of the small Item that records a person's edit in the history."""
    if isinstance(command, Remember):
        return f'Remembered "{command.key}" ({command.kind}): {command.content}'
    return f'Forgot "{command.key}".'


def configure(overrides: Mapping[str, bool], changes: Mapping[str, bool | None]) -> dict[str, bool]:
    """Configure's rule: true/false sets the switch, null removes it, a missing one is kept."""
    result = configured(overrides, changes)
    return {name: result[name] for name in SWITCHES if name in result}


def effective_switches(
    org_memory: Mapping[str, Any], overrides: Mapping[str, bool]
) -> dict[str, bool]:
    """The switches in force: the Session's overrides over the organization's defaults."""
    return {name: bool(overrides.get(name, org_memory.get(name, True))) for name in SWITCHES}
