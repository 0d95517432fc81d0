"""Seed 003's memory options (API.md, "Agents' memory options"): `validate_memory` rejects
an unknown key or a value out of range with a `ValidationFailed` whose `path` names it;
`effective` expands every shorthand (`true` = `{"enabled": true}`, a duration =
milliseconds, ...) and fills every default, so a thread reads one shape. `effective` of an
effective block is itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from agent_memory.domain.option_values import (
    MAX_TOKENS,
    Path,
    boolean,
    buffer_tokens,
    choice,
    duration_ms,
    fail,
    integer,
    json_object,
    model_name,
    multiplier,
    share,
    switch,
    text,
)

OPTIONS_PATH: Path = ("memory", "options")
# The fields of an option: each name's default and its check.
Spec = Mapping[str, tuple[Any, Callable[[Any, Path], Any]]]

MAX_LAST_MESSAGES = 200
DEFAULT_LAST_MESSAGES = 10
MAX_TOP_K = 30
MAX_MESSAGE_RANGE = 10
MIN_TOKENS = 1_000
# A template is a page of headings; a schema a small document: both sit in the version row.
MAX_TEMPLATE = 20_000
MAX_SCHEMA_BYTES = 32_768
DEFAULT_TEMPLATE = (
    "# User Information\n"
    "- **First Name**:\n"
    "- **Last Name**:\n"
    "- **Location**:\n"
    "- **Occupation**:\n"
    "- **Interests**:\n"
    "- **Goals**:\n"
    "- **Events**:\n"
    "- **Facts**:\n"
    "- **Projects**:\n"
)


def _last_messages(value: Any, path: Path) -> int:
    if value is False:
        return 0
    return integer(value, 0, MAX_LAST_MESSAGES, path)


def _message_range(value: Any, path: Path) -> dict[str, int]:
    if isinstance(value, dict):
        body = json_object(value, ("before", "after"), path)
        return {
            side: integer(body.get(side, 2), 0, MAX_MESSAGE_RANGE, (*path, side))
            for side in ("before", "after")
        }
    count = integer(value, 0, MAX_MESSAGE_RANGE, path)
    return {"before": count, "after": count}


def _fields(body: Mapping[str, Any], spec: Spec, path: Path) -> dict[str, Any]:
    """Each field `spec` names (name: its default, its check), checked at its path."""
    return {
        name: check(body.get(name, default), (*path, name))
        for name, (default, check) in spec.items()
    }


def _switched(value: Any, spec: Spec, path: Path) -> dict[str, Any]:
    """An option with a switch (`true`, `false` or an object) and the fields of `spec`."""
    body = switch(value, tuple(spec), path) or {"enabled": False}
    return {"enabled": body["enabled"], **_fields(body, spec, path)}


def _scope(value: Any, path: Path) -> str:
    return choice(value, ("resource", "thread"), path)


def _top_k(value: Any, path: Path) -> int:
    return integer(value, 1, MAX_TOP_K, path)


def _tokens(value: Any, path: Path) -> int:
    return integer(value, MIN_TOKENS, MAX_TOKENS, path)


def _own_idle(value: Any, path: Path) -> int | str | bool | None:
    return None if value is None else duration_ms(value, path)


_GENERATE_TITLE: Spec = {
    "model": (None, model_name),
    "instructions": (None, text),
}
_SEMANTIC_RECALL: Spec = {
    "topK": (5, _top_k),
    "messageRange": (2, _message_range),
    "scope": ("resource", _scope),
}
_RETRIEVAL: Spec = {
    "vector": (False, boolean),
    "scope": ("resource", _scope),
    "instructions": (None, text),
}
_OBSERVATION: Spec = {
    "model": (None, model_name),
    "messageTokens": (30_000, _tokens),
    "bufferTokens": (0.15, buffer_tokens),
    "bufferActivation": (0.8, share),
    "blockAfter": (1.9, multiplier),
    "bufferOnIdle": (False, boolean),
    "manageWorkingMemory": (False, boolean),
    "threadTitle": (False, boolean),
    "instruction": (None, text),
    # Unset, it inherits the top-level activateAfterIdle; `false` switches it off.
    "activateAfterIdle": (None, _own_idle),
}
_REFLECTION: Spec = {
    # Unset, the reflector follows the observer's own model.
    "model": (None, model_name),
    "observationTokens": (40_000, _tokens),
    "bufferActivation": (0.5, share),
    "blockAfter": (1.9, multiplier),
    # Not inherited from the top level (the seed's table).
    "activateAfterIdle": (False, duration_ms),
    "instruction": (None, text),
}


def _json_schema(value: Any, path: Path) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail("must be a JSON Schema object", path)
    if len(json.dumps(value, separators=(",", ":"))) > MAX_SCHEMA_BYTES:
        raise fail(f"must be at most {MAX_SCHEMA_BYTES} bytes of JSON", path)
    check_schema(value, path)
    return value


def check_schema(schema: Mapping[str, Any], path: Path) -> None:
    """Raise ValidationFailed unless `schema` is a valid JSON Schema (draft 2020-12)."""
    from jsonschema import Draft202012Validator, SchemaError  # imported where it is needed

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        inner = tuple(str(p) for p in error.absolute_path)
        raise fail(f"not a valid JSON Schema: {error.message}", (*path, *inner)) from error
    _check_refs(schema, schema, path, (), set())


# A schema is self-contained: a reference leaves it never, so validating fetches nothing.
REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


def _check_refs(
    root: Any, node: Any, path: Path, following: tuple[str, ...], done: set[str]
) -> None:
    """Refuse a reference that is not local, does not resolve, or loops back on itself."""
    if not isinstance(node, dict | list):
        return
    children = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in children:
        here = (*path, str(key))
        if isinstance(node, dict) and key in REF_KEYS and isinstance(value, str):
            _check_ref(root, value, here, following, done)
        elif isinstance(node, dict) and key == "$id" and node is not root:
            raise fail("a nested $id is not supported: the schema is one document", here)
        else:
            _check_refs(root, value, here, following, done)


def _check_ref(root: Any, ref: str, path: Path, following: tuple[str, ...], done: set[str]) -> None:
    if not ref.startswith("#"):
        raise fail("a $ref must point inside this schema (start with #)", path)
    if ref in following:
        raise fail("a recursive $ref is not supported", path)
    if ref not in done:
        _check_refs(root, local_target(root, ref, path), path, (*following, ref), done)
        done.add(ref)


def local_target(root: Any, ref: str, path: Path) -> Any:
    """The part of `root` a local `#/a/b` reference names (a 400 at `path` when none)."""
    from urllib.parse import unquote

    target = root
    pointer = unquote(ref[1:])
    if pointer and not pointer.startswith("/"):
        raise fail("a $ref must be a JSON pointer (#/...): anchors are not supported", path)
    for part in pointer.split("/")[1:] if pointer else []:
        step = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and step in target:
            target = target[step]
        elif isinstance(target, list) and step.isdigit() and int(step) < len(target):
            target = target[int(step)]
        else:
            raise fail(f"the $ref {ref} names nothing in this schema", path)
    return target


def _working_memory(value: Any, path: Path) -> dict[str, Any]:
    keys = ("scope", "template", "schema", "agentManaged")
    body = switch(value, keys, path) or {"enabled": False}
    template = text(body.get("template"), (*path, "template"), MAX_TEMPLATE)
    schema = _json_schema(body.get("schema"), (*path, "schema"))
    if template is not None and schema is not None:
        raise fail("send a template or a schema, not both", (*path, "schema"))
    managed = body.get("agentManaged")
    return {
        "enabled": body["enabled"],
        "scope": _scope(body.get("scope", "resource"), (*path, "scope")),
        "template": DEFAULT_TEMPLATE if template is None and schema is None else template,
        "schema": schema,
        # None until the observer's settings are known (`_finish` decides).
        "agentManaged": None if managed is None else boolean(managed, (*path, "agentManaged")),
    }


def _part(value: Any, spec: Spec, path: Path) -> dict[str, Any]:
    body = json_object({} if value is None else value, tuple(spec), path)
    return _fields(body, spec, path)


def _observational_memory(value: Any, path: Path) -> dict[str, Any]:
    keys = ("model", "scope", "activateAfterIdle", "retrieval", "observation", "reflection")
    body = switch(value, keys, path) or {"enabled": False}
    model = model_name(body.get("model"), (*path, "model"))
    idle = duration_ms(body.get("activateAfterIdle", False), (*path, "activateAfterIdle"))
    observation = _part(body.get("observation"), _OBSERVATION, (*path, "observation"))
    if observation["activateAfterIdle"] is None:
        observation["activateAfterIdle"] = idle
    if model is not None and observation["model"] is not None:
        raise fail(
            "observation.model is exclusive with the top-level model",
            (*path, "observation", "model"),
        )
    result = {
        "enabled": body["enabled"],
        "model": model,
        "scope": choice(body.get("scope", "thread"), ("thread",), (*path, "scope")),
        "activateAfterIdle": idle,
        "retrieval": _switched(body.get("retrieval", False), _RETRIEVAL, (*path, "retrieval")),
        "observation": observation,
        "reflection": _part(body.get("reflection"), _REFLECTION, (*path, "reflection")),
    }
    result["reflection"]["model"] = result["reflection"]["model"] or observation["model"]
    return result


_OPTIONS: dict[str, Callable[[Any, Path], Any]] = {
    "lastMessages": _last_messages,
    "generateTitle": lambda value, path: _switched(value, _GENERATE_TITLE, path),
    "semanticRecall": lambda value, path: _switched(value, _SEMANTIC_RECALL, path),
    "workingMemory": _working_memory,
    "observationalMemory": _observational_memory,
    "readOnly": boolean,
}
_DEFAULTS: dict[str, Any] = {
    "lastMessages": DEFAULT_LAST_MESSAGES,
    "generateTitle": True,
    "semanticRecall": False,
    "workingMemory": False,
    "observationalMemory": False,
    "readOnly": False,
}


def effective_options(options: Any, path: Path = OPTIONS_PATH) -> dict[str, Any]:
    """Every option of `options` (a JSON object, or None for the platform defaults) with
    shorthands expanded and defaults filled in; raises ValidationFailed naming the path."""
    body = json_object({} if options is None else options, tuple(_OPTIONS), path)
    # A null option is the option's default, like a missing one.
    result = {
        name: check(_DEFAULTS[name] if body.get(name) is None else body[name], (*path, name))
        for name, check in _OPTIONS.items()
    }
    return _finish(result, path)


def _finish(options: dict[str, Any], path: Path) -> dict[str, Any]:
    """The rules between options: the observer managing the notes needs working memory on,
    and then the agent gets them read-only (agentManaged false)."""
    working, observer = options["workingMemory"], options["observationalMemory"]
    manages = observer["enabled"] and observer["observation"]["manageWorkingMemory"]
    if manages and not working["enabled"]:
        raise fail(
            "manageWorkingMemory needs workingMemory on",
            (*path, "observationalMemory", "observation", "manageWorkingMemory"),
        )
    if working["agentManaged"] is None or manages:
        working["agentManaged"] = not manages
    return options


def validate_memory(memory: Any) -> dict[str, Any] | None:
    """The `memory` block as it will be saved (`{"options": {...}}`, as sent), or None for
    `"memory": null` (the platform defaults). Raises ValidationFailed naming the path."""
    if memory is None:
        return None
    body = json_object(memory, ("options",), OPTIONS_PATH[:1])
    effective_options(body.get("options"))
    return {"options": body.get("options") or {}}


def effective(memory: Mapping[str, Any] | None) -> dict[str, Any]:
    """The effective `memory` block of a saved one (None: the platform defaults)."""
    options = None if memory is None else memory.get("options")
    return {"options": effective_options(options)}
