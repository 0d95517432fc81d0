"""A working-memory schema's validator that does a bounded amount of work: it retrieves no
remote document, and each `pattern`/`patternProperties` match has a time bound (the regex
engine keeps it: the domain reads no clock), so a catastrophic pattern (`(a+)+$`) is a 400
at the field, never a hang."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

import regex  # type: ignore[import-untyped]
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource

# One match's time: far above any sane pattern on 32 KB.
PATTERN_SECONDS = 0.25
TOO_SLOW = "its pattern takes too long to evaluate on this value"


def _refuse(uri: str) -> Resource[Any]:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class


def _search(pattern: str, text: str) -> bool:
    """Whether `pattern` occurs in `text`; TimeoutError past the bound."""
    return regex.search(pattern, text, timeout=PATTERN_SECONDS) is not None


def bounded_validator(schema: Mapping[str, Any]) -> Validator:
    """A draft 2020-12 validator of `schema` with no retrieval and bounded patterns."""

    def pattern(_: Validator, wanted: str, instance: Any, __: Any) -> Iterator[ValidationError]:
        if not isinstance(instance, str):
            return
        try:
            found = _search(wanted, instance)
        except TimeoutError:
            yield ValidationError(TOO_SLOW)
            return
        if not found:
            yield ValidationError(f"{instance!r} does not match {wanted!r}")

    def pattern_properties(
        validator: Any, patterns: Mapping[str, Any], instance: Any, _: Any
    ) -> Iterator[ValidationError]:
        if not isinstance(instance, dict):
            return
        for wanted, subschema in patterns.items():
            for key, value in instance.items():
                try:
                    found = _search(wanted, key)
                except TimeoutError:
                    yield ValidationError(TOO_SLOW, path=[key])
                    continue
                if found:
                    yield from validator.descend(value, subschema, path=key, schema_path=wanted)

    bounded = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator, {"pattern": pattern, "patternProperties": pattern_properties}
    )
    registry: Registry[Any] = Registry(retrieve=_refuse)  # type: ignore[call-arg]
    return cast(Validator, bounded(schema, registry=registry))
