"""Seed 003's memory options: strict validation and the effective options.

An agent version's `memory` block is `{"options": {...}}` with five independent switches
(`lastMessages`, `generateTitle`, `semanticRecall`, `workingMemory`, `observationalMemory`)
and `readOnly`. `validate_memory` rejects an unknown key or a value out of range with a
`ValidationFailed` whose `path` names it (API.md, "Agents' memory options"); `effective`
expands every shorthand (`true` = `{"enabled": true}`, `lastMessages: false` = 0, a
`messageRange` number = `{before, after}`, a duration = milliseconds) and fills every
default, so a thread reads one shape. `effective` of an effective block is itself.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.model_names import parse_model_name

Path = tuple[str | int, ...]
OPTIONS_PATH: Path = ("memory", "options")

MAX_LAST_MESSAGES = 200
DEFAULT_LAST_MESSAGES = 10
MAX_TOP_K = 30
MAX_MESSAGE_RANGE = 10
MIN_TOKENS = 1_000
MAX_TOKENS = 1_000_000
MAX_INSTRUCTION = 4_000
# A template is a page of headings; a schema a small document: both sit in the version row.
MAX_TEMPLATE = 20_000
MAX_SCHEMA_BYTES = 32_768
# Idle durations above ten years are typos (and would overflow a millisecond clock's maths).
MAX_IDLE_MS = 10 * 365 * 86_400_000
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

_DURATION = re.compile(r"^(\d{1,13})(ms|s|m|hr|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "hr": 3_600_000, "d": 86_400_000}


# --- scalar checks ------------------------------------------------------------------------


def _fail(message: str, path: Path) -> ValidationFailed:
    return ValidationFailed(message, list(path))


def _bool(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        raise _fail("must be true or false", path)
    return value


def _int(value: Any, low: int, high: int, path: Path) -> int:
    # JSON has one number type: 5.0 is the integer 5; True is not a number here.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"must be an integer from {low} to {high}", path)
    if isinstance(value, float) and not value.is_integer():
        raise _fail(f"must be an integer from {low} to {high}", path)
    number = int(value)
    if not low <= number <= high:
        raise _fail(f"must be an integer from {low} to {high}", path)
    return number


def _number(value: Any, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail("must be a number", path)
    return float(value)


def _share(value: Any, path: Path, *, upper_closed: bool) -> float:
    """A number in (0, 1] (or (0, 1) when `upper_closed` is False)."""
    number = _number(value, path)
    if number <= 0 or number > 1 or (number == 1 and not upper_closed):
        raise _fail("must be a number above 0 and at most 1", path)
    return number


def _multiplier(value: Any, path: Path) -> float:
    number = _number(value, path)
    if not 1 <= number <= 10:
        raise _fail("must be a number from 1 to 10", path)
    return number


def _buffer_tokens(value: Any, path: Path) -> float | int:
    """A share of `messageTokens` in (0, 1), or a token count (an integer >= 1)."""
    number = _number(value, path)
    if 0 < number < 1:
        return number
    if number >= 1 and number.is_integer() and number <= MAX_TOKENS:
        return int(number)
    raise _fail(
        "must be a number between 0 and 1 (a share of messageTokens) or an integer >= 1", path
    )


def _text(value: Any, path: Path, limit: int = MAX_INSTRUCTION) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail("must be a string", path)
    if len(value) > limit:
        raise _fail(f"must be at most {limit} characters", path)
    return value


def _model(value: Any, path: Path) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail("must be a model name such as provider/model", path)
    return str(parse_model_name(value, list(path)))


def _choice(value: Any, choices: Sequence[str], path: Path) -> str:
    if value not in choices:
        raise _fail(f"must be one of {', '.join(repr(c) for c in choices)}", path)
    return str(value)


def duration_ms(value: Any, path: Path) -> int | str | bool:
    """An idle duration: milliseconds, `"<n>ms|s|m|h|hr|d"`, `"auto"` or `false` (off).
    Answers the milliseconds, `"auto"`, or False."""
    if value is False:
        return False
    if value == "auto":
        return "auto"
    if isinstance(value, str):
        match = _DURATION.match(value.strip())
        if match is None:
            raise _fail('must be milliseconds, a duration such as "5m", "auto" or false', path)
        value = int(match.group(1)) * _UNIT_MS[match.group(2)]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail('must be milliseconds, a duration such as "5m", "auto" or false', path)
    return _int(value, 0, MAX_IDLE_MS, path)


def _object(value: Any, keys: Sequence[str], path: Path) -> dict[str, Any]:
    """A JSON object holding only `keys` (an unknown key is named in the path)."""
    if not isinstance(value, dict):
        raise _fail("must be an object", path)
    for key in value:
        if key not in keys:
            raise _fail("unknown field", (*path, key))
    return value


def _switch(value: Any, keys: Sequence[str], path: Path) -> dict[str, Any] | None:
    """An option's switch: `true` is `{"enabled": true}`, `false` is off (None), an object
    without `enabled` is on. Answers the object with `enabled` set, or None when off."""
    if value is True:
        return {"enabled": True}
    if value is False or value is None:
        return None
    body = _object(value, ("enabled", *keys), path)
    enabled = _bool(body.get("enabled", True), (*path, "enabled"))
    return {**body, "enabled": enabled}


# --- the options --------------------------------------------------------------------------


def _last_messages(value: Any, path: Path) -> int:
    if value is False:
        return 0
    return _int(value, 0, MAX_LAST_MESSAGES, path)


def _generate_title(value: Any, path: Path) -> dict[str, Any]:
    body = _switch(value, ("model", "instructions"), path)
    if body is None:
        return {"enabled": False, "model": None, "instructions": None}
    return {
        "enabled": body["enabled"],
        "model": _model(body.get("model"), (*path, "model")),
        "instructions": _text(body.get("instructions"), (*path, "instructions")),
    }


def _message_range(value: Any, path: Path) -> dict[str, int]:
    if isinstance(value, dict):
        body = _object(value, ("before", "after"), path)
        return {
            side: _int(body.get(side, 2), 0, MAX_MESSAGE_RANGE, (*path, side))
            for side in ("before", "after")
        }
    count = _int(value, 0, MAX_MESSAGE_RANGE, path)
    return {"before": count, "after": count}


def _semantic_recall(value: Any, path: Path) -> dict[str, Any]:
    body = _switch(value, ("topK", "messageRange", "scope"), path) or {"enabled": False}
    return {
        "enabled": body["enabled"],
        "topK": _int(body.get("topK", 5), 1, MAX_TOP_K, (*path, "topK")),
        "messageRange": _message_range(body.get("messageRange", 2), (*path, "messageRange")),
        "scope": _choice(body.get("scope", "resource"), ("resource", "thread"), (*path, "scope")),
    }


def _json_schema(value: Any, path: Path) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _fail("must be a JSON Schema object", path)
    if len(json.dumps(value, separators=(",", ":"))) > MAX_SCHEMA_BYTES:
        raise _fail(f"must be at most {MAX_SCHEMA_BYTES} bytes of JSON", path)
    check_schema(value, path)
    return value


def check_schema(schema: Mapping[str, Any], path: Path) -> None:
    """Raise ValidationFailed unless `schema` is a valid JSON Schema (draft 2020-12)."""
    from jsonschema import Draft202012Validator, SchemaError  # imported where it is needed

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        inner = tuple(str(p) for p in error.absolute_path)
        raise _fail(f"not a valid JSON Schema: {error.message}", (*path, *inner)) from error


def _working_memory(value: Any, path: Path) -> dict[str, Any]:
    keys = ("scope", "template", "schema", "agentManaged")
    body = _switch(value, keys, path) or {"enabled": False}
    template = _text(body.get("template"), (*path, "template"), MAX_TEMPLATE)
    schema = _json_schema(body.get("schema"), (*path, "schema"))
    if template is not None and schema is not None:
        raise _fail("send a template or a schema, not both", (*path, "schema"))
    managed = body.get("agentManaged")
    return {
        "enabled": body["enabled"],
        "scope": _choice(body.get("scope", "resource"), ("resource", "thread"), (*path, "scope")),
        "template": DEFAULT_TEMPLATE if template is None and schema is None else template,
        "schema": schema,
        # None until the observer's settings are known (`_finish` decides).
        "agentManaged": None if managed is None else _bool(managed, (*path, "agentManaged")),
    }


def _retrieval(value: Any, path: Path) -> dict[str, Any]:
    body = _switch(value, ("vector", "scope", "instructions"), path) or {"enabled": False}
    return {
        "enabled": body["enabled"],
        "vector": _bool(body.get("vector", False), (*path, "vector")),
        "scope": _choice(body.get("scope", "resource"), ("resource", "thread"), (*path, "scope")),
        "instructions": _text(body.get("instructions"), (*path, "instructions")),
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
    body = _object({} if value is None else value, _OBSERVATION_KEYS, path)
    own_idle = body.get("activateAfterIdle")
    return {
        "model": _model(body.get("model"), (*path, "model")),
        "messageTokens": _int(
            body.get("messageTokens", 30_000), MIN_TOKENS, MAX_TOKENS, (*path, "messageTokens")
        ),
        "bufferTokens": _buffer_tokens(body.get("bufferTokens", 0.15), (*path, "bufferTokens")),
        "bufferActivation": _share(
            body.get("bufferActivation", 0.8), (*path, "bufferActivation"), upper_closed=True
        ),
        "blockAfter": _multiplier(body.get("blockAfter", 1.9), (*path, "blockAfter")),
        "bufferOnIdle": _bool(body.get("bufferOnIdle", False), (*path, "bufferOnIdle")),
        "manageWorkingMemory": _bool(
            body.get("manageWorkingMemory", False), (*path, "manageWorkingMemory")
        ),
        "threadTitle": _bool(body.get("threadTitle", False), (*path, "threadTitle")),
        "instruction": _text(body.get("instruction"), (*path, "instruction")),
        # Inherits the top-level activateAfterIdle; `false` switches it off for observations.
        "activateAfterIdle": idle
        if own_idle is None
        else duration_ms(own_idle, (*path, "activateAfterIdle")),
    }


def _reflection(value: Any, observer_model: str | None, path: Path) -> dict[str, Any]:
    body = _object({} if value is None else value, _REFLECTION_KEYS, path)
    model = _model(body.get("model"), (*path, "model"))
    return {
        # Left unset, the reflector follows the observer's own model.
        "model": model if model is not None else observer_model,
        "observationTokens": _int(
            body.get("observationTokens", 40_000),
            MIN_TOKENS,
            MAX_TOKENS,
            (*path, "observationTokens"),
        ),
        "bufferActivation": _share(
            body.get("bufferActivation", 0.5), (*path, "bufferActivation"), upper_closed=True
        ),
        "blockAfter": _multiplier(body.get("blockAfter", 1.9), (*path, "blockAfter")),
        # Not inherited from the top level (the seed's table).
        "activateAfterIdle": duration_ms(
            body.get("activateAfterIdle", False), (*path, "activateAfterIdle")
        ),
        "instruction": _text(body.get("instruction"), (*path, "instruction")),
    }


def _observational_memory(value: Any, path: Path) -> dict[str, Any]:
    keys = ("model", "scope", "activateAfterIdle", "retrieval", "observation", "reflection")
    body = _switch(value, keys, path) or {"enabled": False}
    model = _model(body.get("model"), (*path, "model"))
    idle = duration_ms(body.get("activateAfterIdle", False), (*path, "activateAfterIdle"))
    observation = _observation(body.get("observation"), idle, (*path, "observation"))
    if model is not None and observation["model"] is not None:
        raise _fail(
            "observation.model is exclusive with the top-level model",
            (*path, "observation", "model"),
        )
    return {
        "enabled": body["enabled"],
        "model": model,
        "scope": _choice(body.get("scope", "thread"), ("thread",), (*path, "scope")),
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
    "readOnly": _bool,
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
    body = _object({} if options is None else options, tuple(_OPTIONS), path)
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
        raise _fail(
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
    body = _object(memory, ("options",), OPTIONS_PATH[:1])
    effective_options(body.get("options"))
    return {"options": body.get("options") or {}}


def effective(memory: Mapping[str, Any] | None) -> dict[str, Any]:
    """The effective `memory` block of a saved one (None: the platform defaults)."""
    options = None if memory is None else memory.get("options")
    return {"options": effective_options(options)}


def platform_defaults() -> dict[str, Any]:
    """The effective options of an agent saved with no memory block."""
    return effective(None)
