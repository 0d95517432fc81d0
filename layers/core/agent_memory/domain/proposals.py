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

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.errors import DomainError

# The seed's kinds (000 "Read memory"); agent memory keeps only the lasting ones.
MEMORY_KINDS: tuple[str, ...] = ("fact", "decision", "preference", "procedure", "hypothesis")
LASTING_KINDS: tuple[str, ...] = ("procedure", "preference", "decision")

KEY_PATTERN = re.compile(r"[a-z0-9._-]{1,100}")
MAX_KEY_LENGTH = 100
# One entry never exceeds what the memory text can show (8000 characters by default).
MAX_CONTENT_LENGTH = 8000
MAX_SOURCES = 50
# A transaction holds at most 100 actions; an answer with more changes is not usable.
MAX_CHANGES = 100

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?```$", re.DOTALL)

_SOURCES_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Ids of the new items that support this change (at least one).",
}

# The schema of the answer: OpenAI `response_format` json_schema (strict mode: every property
# required, no additional properties) and the input schema of the Bedrock tool.
CHANGES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "changes": {
            "type": "array",
            "items": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {
                            "op": {"type": "string", "enum": ["remember"]},
                            "key": {"type": "string"},
                            "content": {"type": "string"},
                            "kind": {"type": "string", "enum": list(MEMORY_KINDS)},
                            "sources": _SOURCES_SCHEMA,
                        },
                        "required": ["op", "key", "content", "kind", "sources"],
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "properties": {
                            "op": {"type": "string", "enum": ["forget"]},
                            "key": {"type": "string"},
                            "sources": _SOURCES_SCHEMA,
                        },
                        "required": ["op", "key", "sources"],
                        "additionalProperties": False,
                    },
                ]
            },
        }
    },
    "required": ["changes"],
    "additionalProperties": False,
}


class InvalidModelOutput(DomainError):
    """A model's answer is not the protocol (not JSON, wrong shape, bad field).

    `path` names the offending place, e.g. `["changes", 0, "key"]`.
    """

    tag = "InvalidModelOutput"
    status = 502


@dataclass(frozen=True)
class ProposedRemember:
    """Add the fact under `key`, or replace the one there."""

    key: str
    content: str
    kind: str
    sources: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The change in API.md's shape (for recording a rejected change)."""
        return {
            "op": "remember",
            "key": self.key,
            "content": self.content,
            "kind": self.kind,
            "sources": list(self.sources),
        }


@dataclass(frozen=True)
class ProposedForget:
    """Retract the fact under `key`."""

    key: str
    sources: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The change in API.md's shape (for recording a rejected change)."""
        return {"op": "forget", "key": self.key, "sources": list(self.sources)}


ProposedChange = ProposedRemember | ProposedForget

_FIELDS = {
    "remember": frozenset({"op", "key", "content", "kind", "sources"}),
    "forget": frozenset({"op", "key", "sources"}),
}


def parse_changes(text: str, *, known_keys: Collection[str] = ()) -> tuple[ProposedChange, ...]:
    """Parse a model's answer text into proposed changes, in the order given.

    Accepts the JSON object alone or wrapped in one Markdown code fence. Raises
    `InvalidModelOutput` for anything else. `known_keys` are keys the pool already holds:
    they are accepted even when outside the key alphabet.
    """
    if not isinstance(text, str):
        raise InvalidModelOutput("the answer is not text")
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    if not body:
        raise InvalidModelOutput("the answer is empty")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise InvalidModelOutput(f"the answer is not JSON: {error}") from None
    if not isinstance(data, dict):
        raise InvalidModelOutput("the answer is not a JSON object")
    extra = sorted(set(data) - {"changes"})
    if extra:
        raise InvalidModelOutput(f"unknown field {extra[0]!r}", [extra[0]])
    if "changes" not in data:
        raise InvalidModelOutput("the answer has no 'changes'", ["changes"])
    changes = data["changes"]
    if not isinstance(changes, list):
        raise InvalidModelOutput("'changes' is not a list", ["changes"])
    if len(changes) > MAX_CHANGES:
        raise InvalidModelOutput(
            f"{len(changes)} changes; at most {MAX_CHANGES} fit in one step", ["changes"]
        )
    known = frozenset(known_keys)
    return tuple(_change(raw, ["changes", index], known) for index, raw in enumerate(changes))


def _change(raw: object, path: list[str | int], known: frozenset[str]) -> ProposedChange:
    if not isinstance(raw, dict):
        raise InvalidModelOutput("a change is not a JSON object", path)
    op = raw.get("op")
    if op not in _FIELDS:
        raise InvalidModelOutput("a change needs 'op' set to 'remember' or 'forget'", [*path, "op"])
    extra = sorted(set(raw) - _FIELDS[op])
    if extra:
        raise InvalidModelOutput(f"unknown field {extra[0]!r} in a {op} change", [*path, extra[0]])
    missing = sorted(_FIELDS[op] - set(raw))
    if missing:
        raise InvalidModelOutput(f"a {op} change needs {missing[0]!r}", [*path, missing[0]])
    key = _key(raw["key"], [*path, "key"], known)
    sources = _sources(raw["sources"], [*path, "sources"])
    if op == "forget":
        return ProposedForget(key=key, sources=sources)
    content = raw["content"]
    if not isinstance(content, str) or not content.strip():
        raise InvalidModelOutput("'content' must be non-empty text", [*path, "content"])
    if len(content) > MAX_CONTENT_LENGTH:
        raise InvalidModelOutput(
            f"'content' is longer than {MAX_CONTENT_LENGTH} characters", [*path, "content"]
        )
    kind = raw["kind"]
    if kind not in MEMORY_KINDS:
        raise InvalidModelOutput(
            f"'kind' must be one of {', '.join(MEMORY_KINDS)}", [*path, "kind"]
        )
    return ProposedRemember(key=key, content=content.strip(), kind=kind, sources=sources)


def _key(raw: object, path: Sequence[str | int], known: frozenset[str]) -> str:
    if not isinstance(raw, str):
        raise InvalidModelOutput("'key' must be text", path)
    key = raw.strip()
    if key in known:
        return key
    if not KEY_PATTERN.fullmatch(key.lower()):
        raise InvalidModelOutput(
            f"'key' must be 1..{MAX_KEY_LENGTH} characters of a-z, 0-9, '.', '_', '-'", path
        )
    return key


def _sources(raw: object, path: list[str | int]) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise InvalidModelOutput("'sources' must be a list of item ids", path)
    if len(raw) > MAX_SOURCES:
        raise InvalidModelOutput(f"more than {MAX_SOURCES} sources", path)
    sources: list[str] = []
    for index, source in enumerate(raw):
        if not isinstance(source, str) or not source.strip():
            raise InvalidModelOutput("a source must be an item id (text)", [*path, index])
        if source.strip() not in sources:
            sources.append(source.strip())
    return tuple(sources)
