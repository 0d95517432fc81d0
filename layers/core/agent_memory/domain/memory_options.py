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


def _generate_title(value: Any, path: Path) -> dict[str, Any]:
    body = switch(value, ("model", "instructions"), path)
    if body is None:
        return {"enabled": False, "model": None, "instructions": None}
    return {
        "enabled": body["enabled"],
        "model": model_name(body.get("model"), (*path, "model")),
        "instructions": text(body.get("instructions"), (*path, "instructions")),
    }


def _message_range(value: Any, path: Path) -> dict[str, int]:
    if isinstance(value, dict):
        body = json_object(value, ("before", "after"), path)
        return {
            side: integer(body.get(side, 2), 0, MAX_MESSAGE_RANGE, (*path, side))
            for side in ("before", "after")
        }
    count = integer(value, 0, MAX_MESSAGE_RANGE, path)
    return {"before": count, "after": count}


def _semantic_recall(value: Any, path: Path) -> dict[str, Any]:
    body = switch(value, ("topK", "messageRange", "scope"), path) or {"enabled": False}
    return {
        "enabled": body["enabled"],
        "topK": integer(body.get("topK", 5), 1, MAX_TOP_K, (*path, "topK")),
        "messageRange": _message_range(body.get("messageRange", 2), (*path, "messageRange")),
        "scope": choice(body.get("scope", "resource"), ("resource", "thread"), (*path, "scope")),
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
        "scope": choice(body.get("scope", "resource"), ("resource", "thread"), (*path, "scope")),
        "template": DEFAULT_TEMPLATE if template is None and schema is None else template,
        "schema": schema,
        # None until the observer's settings are known (`_finish` decides).
        "agentManaged": None if managed is None else boolean(managed, (*path, "agentManaged")),
    }


def _retrieval(value: Any, path: Path) -> dict[str, Any]:
    body = switch(value, ("vector", "scope", "instructions"), path) or {"enabled": False}
    return {
        "enabled": body["enabled"],
        "vector": boolean(body.get("vector", False), (*path, "vector")),
        "scope": choice(body.get("scope", "resource"), ("resource", "thread"), (*path, "scope")),
        "instructions": text(body.get("instructions"), (*path, "instructions")),
    }


_OBSERVATION_KEYS = (
    "model",
    "messageTokens",
    "bufferTokens",
    "bufferActivation",
    "blockAfter",
    "bufferOnIdle",
    "manageWorkingMemory",
    "threadTitle",
    "instruction",
    "activateAfterIdle",
)
_REFLECTION_KEYS = (
    "model",
    "observationTokens",
    "bufferActivation",
    "blockAfter",
    "activateAfterIdle",
    "instruction",
)


def _observation(value: Any, idle: int | str | bool, path: Path) -> dict[str, Any]:
    body = json_object({} if value is None else value, _OBSERVATION_KEYS, path)
    own_idle = body.get("activateAfterIdle")
    return {
        "model": model_name(body.get("model"), (*path, "model")),
        "messageTokens": integer(
            body.get("messageTokens", 30_000), MIN_TOKENS, MAX_TOKENS, (*path, "messageTokens")
        ),
        "bufferTokens": buffer_tokens(body.get("bufferTokens", 0.15), (*path, "bufferTokens")),
        "bufferActivation": share(
            body.get("bufferActivation", 0.8), (*path, "bufferActivation"), upper_closed=True
        ),
        "blockAfter": multiplier(body.get("blockAfter", 1.9), (*path, "blockAfter")),
        "bufferOnIdle": boolean(body.get("bufferOnIdle", False), (*path, "bufferOnIdle")),
        "manageWorkingMemory": boolean(
            body.get("manageWorkingMemory", False), (*path, "manageWorkingMemory")
        ),
        "threadTitle": boolean(body.get("threadTitle", False), (*path, "threadTitle")),
        "instruction": text(body.get("instruction"), (*path, "instruction")),
        # Inherits the top-level activateAfterIdle; `false` switches it off for observations.
        "activateAfterIdle": idle
        if own_idle is None
        else duration_ms(own_idle, (*path, "activateAfterIdle")),
    }


def _reflection(value: Any, observer_model: str | None, path: Path) -> dict[str, Any]:
    body = json_object({} if value is None else value, _REFLECTION_KEYS, path)
    model = model_name(body.get("model"), (*path, "model"))
    return {
        # Left unset, the reflector follows the observer's own model.
        "model": model if model is not None else observer_model,
        "observationTokens": integer(
            body.get("observationTokens", 40_000),
            MIN_TOKENS,
            MAX_TOKENS,
            (*path, "observationTokens"),
        ),
        "bufferActivation": share(
            body.get("bufferActivation", 0.5), (*path, "bufferActivation"), upper_closed=True
        ),
        "blockAfter": multiplier(body.get("blockAfter", 1.9), (*path, "blockAfter")),
        # Not inherited from the top level (the seed's table).
        "activateAfterIdle": duration_ms(
            body.get("activateAfterIdle", False), (*path, "activateAfterIdle")
        ),
        "instruction": text(body.get("instruction"), (*path, "instruction")),
    }


def _observational_memory(value: Any, path: Path) -> dict[str, Any]:
    keys = ("model", "scope", "activateAfterIdle", "retrieval", "observation", "reflection")
    body = switch(value, keys, path) or {"enabled": False}
    model = model_name(body.get("model"), (*path, "model"))
    idle = duration_ms(body.get("activateAfterIdle", False), (*path, "activateAfterIdle"))
    observation = _observation(body.get("observation"), idle, (*path, "observation"))
    if model is not None and observation["model"] is not None:
        raise fail(
            "observation.model is exclusive with the top-level model",
            (*path, "observation", "model"),
        )
    return {
        "enabled": body["enabled"],
        "model": model,
        "scope": choice(body.get("scope", "thread"), ("thread",), (*path, "scope")),
        "activateAfterIdle": idle,
        "retrieval": _retrieval(body.get("retrieval", False), (*path, "retrieval")),
        "observation": observation,
        "reflection": _reflection(
            body.get("reflection"), observation["model"], (*path, "reflection")
        ),
    }


_OPTIONS: dict[str, Callable[[Any, Path], Any]] = {
    "lastMessages": _last_messages,
    "generateTitle": _generate_title,
    "semanticRecall": _semantic_recall,
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
