"""A model's answer text: decoded, checked against the task's pydantic model, and the JSON
schema sent to providers, generated from that same model (one source for both).

The generated schema is "strict": every object lists all its properties as required and
forbids others, references are inlined, unions are `anyOf` and constants are one-value
enums, so OpenAI's strict `json_schema`, Bedrock's tool `inputSchema` and Anthropic's tool
`input_schema` all accept it. A field that may be absent is typed `X | None` (nullable), never
given a default: the model must always say it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from agent_memory.domain.errors import DomainError

Answer = TypeVar("Answer", bound=BaseModel)

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*?)\n?```$", re.DOTALL)
# A transaction holds at most 100 actions; an answer with more changes is not usable.
MAX_CHANGES = 100
# Keywords a strict schema does without: they only describe, or providers refuse them.
_DROPPED = frozenset({"title", "default", "discriminator", "examples"})


class Closed(BaseModel):
    """An answer's object: no field beyond its own, immutable once parsed."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class InvalidModelOutput(DomainError, tag="InvalidModelOutput", status=502):
    """A model's answer is not the task's protocol (not JSON, wrong shape, bad field).

    `path` names the offending place, e.g. `["changes", 0, "key"]`.
    """


def decode_json(text: str) -> Any:
    """The JSON value of an answer: the text alone, or wrapped in one Markdown code fence."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    if not body:
        raise InvalidModelOutput("the answer is empty")
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:
        raise InvalidModelOutput(f"the answer is not JSON: {error}") from None


def decode_changes(text: str) -> Any:
    """The JSON value of an answer of changes (`{"changes": [...]}`), refused as a whole
    when it holds more than `MAX_CHANGES` of them, before any change is checked."""
    data = decode_json(text)
    changes = data.get("changes") if isinstance(data, dict) else None
    if isinstance(changes, list) and len(changes) > MAX_CHANGES:
        raise InvalidModelOutput(
            f"{len(changes)} changes; at most {MAX_CHANGES} fit in one step", ["changes"]
        )
    return data


def validated(model: type[Answer], data: Any) -> Answer:
    """`data` as the task's output model; the first problem becomes `InvalidModelOutput`
    naming its place (a union's tag is left out of the path: it is not a field)."""
    if not isinstance(data, dict):
        raise InvalidModelOutput("the answer is not a JSON object")
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        path = _path(first, data)
        raise InvalidModelOutput(_message(first, path), path) from None


def parse_answer(model: type[Answer], text: str) -> Answer:
    """Decode and validate an answer in one step (what most tasks' parsers are)."""
    return validated(model, decode_json(text))


def _path(error: Mapping[str, Any], data: Any) -> list[str | int]:
    """The error's location in the answer. A discriminated union puts the chosen tag in the
    location (`["changes", 0, "remember", "content"]`): a part that is not a key of the
    object at that place, and not the last part, is that tag and is left out."""
    loc: Sequence[str | int] = error.get("loc", ())
    path: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(part, str) and isinstance(node, dict) and part not in node and not last:
            continue
        path.append(part)
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    if error["type"] in {"union_tag_invalid", "union_tag_not_found"}:
        ctx = error.get("ctx") or {}
        path.append(str(ctx.get("discriminator", "op")).strip("'"))
    return path


def _message(error: Mapping[str, Any], path: Sequence[str | int]) -> str:
    where = ".".join(str(part) for part in path) or "the answer"
    kind = error["type"]
    if kind == "missing":
        return f"{where} is missing"
    if kind == "extra_forbidden":
        # The field's name is the model's text: an execution's error never repeats it.
        parent = ".".join(str(part) for part in path[:-1]) or "the answer"
        return f"an unknown field in {parent}"
    if kind in {"union_tag_invalid", "union_tag_not_found"}:
        expected = (error.get("ctx") or {}).get("expected_tags", "")
        return f"{where} must be one of {expected}"
    return f"{where}: {error.get('msg', 'invalid')}"


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON schema of an output model (a fresh copy each call)."""
    return json.loads(_strict_schema_text(model))  # type: ignore[no-any-return]


@cache
def _strict_schema_text(model: type[BaseModel]) -> str:
    raw = model.model_json_schema()
    definitions = raw.pop("$defs", {})
    return json.dumps(_strict(raw, definitions, ()))


def strictly(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A hand-written schema fragment (e.g. an agent's working-memory schema) made strict."""
    copied = json.loads(json.dumps(schema))
    definitions = copied.pop("$defs", {}) if isinstance(copied, dict) else {}
    result = _strict(copied, definitions, ())
    if not isinstance(result, dict):
        raise ValueError("a schema is a JSON object")
    return result


def _strict(node: Any, definitions: Mapping[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_strict(part, definitions, seen) for part in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            raise ValueError(f"a recursive schema ({name}) cannot be inlined")
        return _strict(definitions[name], definitions, (*seen, name))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "const":
            out["enum"] = [value]
        elif key == "oneOf":
            out["anyOf"] = _strict(value, definitions, seen)
        elif key == "properties":
            out[key] = {name: _strict(sub, definitions, seen) for name, sub in value.items()}
        else:
            out[key] = _strict(value, definitions, seen)
    if out.get("type") == "object" and "properties" in out:
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
        # A model's description is its class docstring: written for developers, not models.
        out.pop("description", None)
    return out
