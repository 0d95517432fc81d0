"""A learning model's answer, parsed into typed proposed changes (API.md, "What a learning
model returns").

The parser is strict: an answer that is not exactly the protocol raises `InvalidModelOutput`
(a model failure, recorded on the execution and retried with the next turn). Checking each
change against the seed's rules (unprocessed sources, one change per key, retracted stays
retracted, no secrets) is the consolidation rules' job, so a well-formed but unacceptable
change is rejected one by one there, with its reason, instead of failing the whole answer.

Keys: a key is kept exactly as the model wrote it (surrounding blanks removed) and must be
1..100 characters of `[a-z0-9._-]` once lowercased, so `Trip-Budget` stays `Trip-Budget`
and still reuses an existing key written that way. A key the pool already holds is accepted
verbatim even outside that alphabet (a person may have chosen it with Remember).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from agent_memory.domain.bounds import MAX_ENTRY_CONTENT
from agent_memory.domain.tasks.answers import (
    Closed,
    InvalidModelOutput,
    decode_changes,
    strict_schema,
    validated,
)

# The seed's kinds (000 "Read memory"); agent memory keeps only the lasting ones.
MEMORY_KINDS: tuple[str, ...] = ("fact", "decision", "preference", "procedure", "hypothesis")
LASTING_KINDS: tuple[str, ...] = ("procedure", "preference", "decision")
MemoryKind = Literal["fact", "decision", "preference", "procedure", "hypothesis"]

KEY_PATTERN = re.compile(r"[a-z0-9._-]{1,100}")
MAX_KEY_LENGTH = 100
MAX_SOURCES = 50

_SOURCES = "Ids of the new items that support this change (at least one)."


class RememberAnswer(Closed):
    op: Literal["remember"]
    key: str
    content: str
    kind: MemoryKind
    sources: list[str] = Field(description=_SOURCES)


class ForgetAnswer(Closed):
    op: Literal["forget"]
    key: str
    sources: list[str] = Field(description=_SOURCES)


class MemoryChangesAnswer(Closed):
    """API.md's "What a learning model returns": the schema source and the parser's shape."""

    changes: list[Annotated[RememberAnswer | ForgetAnswer, Field(discriminator="op")]]


# The schema of the answer, generated from `MemoryChangesAnswer` (strict: every property
# required, no additional properties): OpenAI's json_schema, the Bedrock and Anthropic tool.
CHANGES_SCHEMA: dict[str, Any] = strict_schema(MemoryChangesAnswer)


@dataclass(frozen=True)
class ProposedRemember:
    """Add the fact under `key`, or replace the one there."""

    key: str
    content: str
    kind: str
    sources: tuple[str, ...]


@dataclass(frozen=True)
class ProposedForget:
    key: str
    sources: tuple[str, ...]


ProposedChange = ProposedRemember | ProposedForget


def parse_changes(text: str, *, known_keys: Collection[str] = ()) -> tuple[ProposedChange, ...]:
    """The answer's changes in order, from the JSON object alone or in one Markdown code
    fence (`InvalidModelOutput` otherwise). `known_keys`, the pool's, pass outside the key
    alphabet."""
    data = decode_changes(text)
    changes = data.get("changes") if isinstance(data, dict) else None
    for index, raw in enumerate(changes if isinstance(changes, list) else []):
        if not isinstance(raw, dict):
            raise InvalidModelOutput("a change is not a JSON object", ["changes", index])
    answer = validated(MemoryChangesAnswer, data)
    known = frozenset(known_keys)
    return tuple(
        _change(change, ["changes", index], known) for index, change in enumerate(answer.changes)
    )


def _change(
    change: RememberAnswer | ForgetAnswer, path: list[str | int], known: frozenset[str]
) -> ProposedChange:
    key = _key(change.key, [*path, "key"], known)
    sources = _sources(change.sources, [*path, "sources"])
    if isinstance(change, ForgetAnswer):
        return ProposedForget(key=key, sources=sources)
    content = change.content.strip()
    if not content:
        raise InvalidModelOutput("'content' must be non-empty text", [*path, "content"])
    if len(change.content) > MAX_ENTRY_CONTENT:
        raise InvalidModelOutput(
            f"'content' is longer than {MAX_ENTRY_CONTENT} characters", [*path, "content"]
        )
    return ProposedRemember(key=key, content=content, kind=change.kind, sources=sources)


def _key(raw: str, path: Sequence[str | int], known: frozenset[str]) -> str:
    key = raw.strip()
    if key in known:
        return key
    if not KEY_PATTERN.fullmatch(key.lower()):
        raise InvalidModelOutput(
            f"'key' must be 1..{MAX_KEY_LENGTH} characters of a-z, 0-9, '.', '_', '-'", path
        )
    return key


def _sources(raw: Sequence[str], path: list[str | int]) -> tuple[str, ...]:
    if len(raw) > MAX_SOURCES:
        raise InvalidModelOutput(f"more than {MAX_SOURCES} sources", path)
    sources: list[str] = []
    for index, source in enumerate(raw):
        if not source.strip():
            raise InvalidModelOutput("a source must be an item id (text)", [*path, index])
        if source.strip() not in sources:
            sources.append(source.strip())
    return tuple(sources)
