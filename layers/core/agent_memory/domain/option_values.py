"""The JSON values memory options are made of (API.md, "Agents' memory options"): each check
answers the value as the options hold it, or raises ValidationFailed naming its path."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.model_names import parse_model_name

Path = tuple[str | int, ...]

MAX_TOKENS = 1_000_000
MAX_INSTRUCTION = 4_000
# Idle durations above ten years are typos (and would overflow a millisecond clock's maths).
MAX_IDLE_MS = 10 * 365 * 86_400_000
_DURATION = re.compile(r"^(\d{1,13})(ms|s|m|hr|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "hr": 3_600_000, "d": 86_400_000}


def fail(message: str, path: Path) -> ValidationFailed:
    return ValidationFailed(message, list(path))


def boolean(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        raise fail("must be true or false", path)
    return value


def integer(value: Any, low: int, high: int, path: Path) -> int:
    # JSON has one number type: 5.0 is the integer 5; True is not a number here.
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if isinstance(number, float) and not number.is_integer():
        number = None
    if number is None or not low <= number <= high:
        raise fail(f"must be an integer from {low} to {high}", path)
    return int(number)


def finite(value: Any, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise fail("must be a number", path)
    return float(value)


def share(value: Any, path: Path) -> float:
    """A number in (0, 1]."""
    number = finite(value, path)
    if number <= 0 or number > 1:
        raise fail("must be a number above 0 and at most 1", path)
    return number


def multiplier(value: Any, path: Path) -> float:
    number = finite(value, path)
    if not 1 <= number <= 10:
        raise fail("must be a number from 1 to 10", path)
    return number


def buffer_tokens(value: Any, path: Path) -> float | int:
    """A share of `messageTokens` in (0, 1), or a token count (an integer >= 1)."""
    number = finite(value, path)
    if 0 < number < 1:
        return number
    if number >= 1 and number.is_integer() and number <= MAX_TOKENS:
        return int(number)
    raise fail(
        "must be a number between 0 and 1 (a share of messageTokens) or an integer >= 1", path
    )


def text(value: Any, path: Path, limit: int = MAX_INSTRUCTION) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail("must be a string", path)
    if len(value) > limit:
        raise fail(f"must be at most {limit} characters", path)
    return value


def model_name(value: Any, path: Path) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail("must be a model name such as provider/model", path)
    return str(parse_model_name(value, list(path)))


def choice(value: Any, choices: Sequence[str], path: Path) -> str:
    if value not in choices:
        raise fail(f"must be one of {', '.join(repr(c) for c in choices)}", path)
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
        value = int(match.group(1)) * _UNIT_MS[match.group(2)] if match else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail('must be milliseconds, a duration such as "5m", "auto" or false', path)
    return integer(value, 0, MAX_IDLE_MS, path)


def json_object(value: Any, keys: Sequence[str], path: Path) -> dict[str, Any]:
    """A JSON object holding only `keys` (an unknown key is named in the path)."""
    if not isinstance(value, dict):
        raise fail("must be an object", path)
    for key in value:
        if key not in keys:
            raise fail("unknown field", (*path, key))
    return value


def switch(value: Any, keys: Sequence[str], path: Path) -> dict[str, Any] | None:
    """An option's switch: `true` is `{"enabled": true}`, `false` is off (None), an object
    without `enabled` is on. Answers the object with `enabled` set, or None when off."""
    if value is True:
        return {"enabled": True}
    if value is False or value is None:
        return None
    body = json_object(value, ("enabled", *keys), path)
    enabled = boolean(body.get("enabled", True), (*path, "enabled"))
    return {**body, "enabled": enabled}
