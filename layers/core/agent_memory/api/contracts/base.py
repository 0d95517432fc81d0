from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError


class Body(BaseModel):
    """A request body: unknown fields are a 400 naming them; types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


def require_known_tag(value: Any, tags: Sequence[str], field: str = "command") -> None:
    """A missing or unknown `_tag` of a command is reported at `[field, "_tag"]` (pydantic
    would name the union's variants instead)."""
    if isinstance(value, dict) and value.get("_tag") not in tags:
        missing = "_tag" not in value
        error = PydanticCustomError(
            "missing" if missing else "union_tag_invalid",
            "field required" if missing else "_tag must be one of {tags}",
            {"tags": ", ".join(tags)},
        )
        raise ValidationError.from_exception_data(
            field, [InitErrorDetails(type=error, loc=("_tag",), input=value.get("_tag"))]
        )
