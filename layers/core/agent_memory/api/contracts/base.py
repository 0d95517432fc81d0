from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, Self, TypeVar

from fastapi import Query
from pydantic import (
    AfterValidator,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_snake
from pydantic.config import JsonDict
from pydantic_core import InitErrorDetails, PydanticCustomError

from agent_memory.domain.identity import IDENTIFIER_PATTERN
from agent_memory.domain.model_name_bounds import LOCAL_MODELS, MAX_NAME_LENGTH, PROVIDERS

if TYPE_CHECKING:
    from agent_memory.domain.runs import RunView

# What the service checks, stated in the schema: the document tells the truth.
# A model name, as domain/model_names.py checks it.
_CHAR, _NOT_DOT = "[A-Za-z0-9._:@+=,-]", "[A-Za-z0-9_:@+=,-]"
_SEGMENT = f"(?:{_NOT_DOT}{_CHAR}*|\\.{_NOT_DOT}{_CHAR}*|\\.\\.{_CHAR}+)"
_PROVIDER = "(?:" + "|".join(PROVIDERS) + ")"


def model_name_pattern(allowed: Sequence[str]) -> str:
    """The pattern of exactly the names `allowed` admits: a name, or `provider/*` for every
    well-formed name of that provider."""
    any_name = f"{_SEGMENT}(?:/{_SEGMENT})*"
    choices = [
        f"{re.escape(name[:-1])}{any_name}" if name.endswith("/*") else re.escape(name)
        for name in allowed
    ]
    # No name at all: a pattern nothing matches.
    return "^(?:" + "|".join(choices) + ")$" if choices else "^(?!)$"


# Any deployment's names; a deployment serves its own narrower pattern (api/app.py).
MODEL_NAME_PATTERN = model_name_pattern(
    [*LOCAL_MODELS, *(f"{provider}/*" for provider in PROVIDERS if provider != "local")]
)
# An allowedModels entry: a model name or `provider/*`.
MODEL_PATTERN_PATTERN = f"^{_PROVIDER}/(?:\\*|{_SEGMENT}(?:/{_SEGMENT})*)$"
MODEL_NAME: JsonDict = {"pattern": MODEL_NAME_PATTERN, "maxLength": MAX_NAME_LENGTH}
# Client-chosen ids (domain/identity.py): 1..64 letters, digits, `-`, `_`, `.`.
ID_PATTERN = IDENTIFIER_PATTERN
# An item id as the service writes it (domain/sessions.py `item_id`): i-01, ..., i-100.
ITEM_ID_PATTERN = r"^i-(?:0[1-9]|[1-9][0-9]+)$"
# Not blank as `str.strip()` sees it (tests/api/test_contract_truth.py checks the class).
NOT_BLANK_PATTERN = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
NOT_BLANK: JsonDict = {"pattern": NOT_BLANK_PATTERN}


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise PydanticCustomError("blank", "may not be blank")
    return value


# The check of NOT_BLANK, with a message a person reads (a pattern's would quote the pattern).
NotBlank = AfterValidator(_not_blank)
# Lists page as agent_memories do (API.md, seed 004).
MAX_PAGE = 100
PageLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="1..100 objects per page")]
Cursor = Annotated[str, Query(min_length=1, max_length=200)]
# An Item's `app` is only on a tool result: any other role sends none (or null).
APP_ONLY_ON_TOOLS: JsonDict = {
    "if": {"properties": {"role": {"not": {"const": "tool"}}}},
    "then": {"properties": {"app": {"type": "null"}}},
}


def empty_list() -> list[Any]:
    """A list field's default: pydantic reads a default factory's signature, and `list`'s (a
    builtin's) is parsed from text by the tokenizer, about 2-3 ms of a cold start the first
    time; a Python function's is not."""
    return []


class Body(BaseModel):
    """A request body: unknown fields are a 400 naming them; types are not coerced, but for
    one case: an integer field takes a JSON number with no fraction (`23.0`), which JSON
    Schema (and so the OpenAPI document) counts as an integer."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        wanted = _integer_fields(cls)
        return {
            name: int(value)
            if name in wanted and type(value) is float and value.is_integer()
            else value
            for name, value in data.items()
        }


@functools.cache
def _integer_fields(model: type[BaseModel]) -> frozenset[str]:
    """The fields (by the name a body sends) whose type admits an int but not a float."""
    return frozenset(
        field.alias or name
        for name, field in model.model_fields.items()
        if _admits_int(field.annotation)
    )


def _admits_int(annotation: Any) -> bool:
    if annotation is int:
        return True
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_admits_int(a) for a in args) and float not in args
    return False


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Mirror(Answer):
    """An answer that shows a domain object as it is: each field is read from the object's
    attribute of the same name in snake_case (`createdAt` from `created_at`), nested
    mirrors too; a field whose attribute is named otherwise says so with `validation_alias`.
    The aliases are read-side only, so the OpenAPI document names the fields as declared."""

    model_config = ConfigDict(
        alias_generator=AliasGenerator(validation_alias=to_snake), validate_by_name=True
    )

    @classmethod
    def of(cls, source: object) -> Self:
        return cls.model_validate(source, from_attributes=True)


class Envelope(Answer):
    """An answer of one field that holds a domain object (or a list of them) as that field's
    `Mirror` shows it: `SessionAnswer.of(session)` is `{"session": {...}}`."""

    @classmethod
    def of(cls, value: object) -> Self:
        (name,) = cls.model_fields
        return cls.model_validate({name: value}, from_attributes=True)


ItemT = TypeVar("ItemT")


class ListOf(Answer, Generic[ItemT]):
    """A page of a list as agent_memories page (API.md, seed 004): `has_more` says another
    page follows."""

    object: Literal["list"] = "list"
    data: list[ItemT]
    has_more: bool

    @classmethod
    def of(cls, page: tuple[Sequence[Any], bool]) -> Self:
        """A page of domain objects, each shown by its `Mirror` answer."""
        found, more = page
        return cls.model_validate({"data": found, "has_more": more}, from_attributes=True)


class Sparse(Answer):
    """An answer whose optional fields are left out when they have no value (API.md's `?`)."""

    optional: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _sparse(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in self.optional:
            if data.get(name) is None:
                data.pop(name, None)
        return data


AnswerT = TypeVar("AnswerT", bound=Answer)


def fitting(answers: Sequence[AnswerT]) -> list[AnswerT]:
    """The first `answers` whose JSON fits in one Lambda answer, as `bounds.carried_size`
    measures it."""
    from agent_memory.domain import bounds

    return bounds.within_budget(answers, lambda answer: bounds.carried_size(answer.model_dump()))[0]


# A pool's learning executions: sessions, agent memory and threads answer alike.
class Executions(Answer):
    executions: list[dict[str, Any]]

    @classmethod
    def of(cls, runs: Sequence[RunView]) -> Self:
        """The newest `runs` (newest first) that fit one answer."""
        from agent_memory.domain import bounds

        shown = [execution_json(run) for run in runs]
        return cls(executions=bounds.within_budget(shown)[0])


def execution_json(run: RunView) -> dict[str, Any]:
    """API.md's Execution: `<kind>Id` names the conversation the run read (`sessionId`,
    `chatId`), `kind` the thread step; `error` and `note` only when there is one."""
    view: dict[str, Any] = {
        "id": run.id,
        "status": run.status,
        "startedAt": run.started_at,
        "endedAt": run.ended_at,
        "itemIds": run.item_ids,
        "applied": run.applied,
        "rejected": run.rejected,
        "reason": run.reason,
        "model": run.model,
    }
    if run.source is not None:
        kind, source_id = run.source
        view[f"{kind}Id"] = source_id
    if run.error is not None:
        view["error"] = {"type": run.error.type, "message": run.error.message}
    if run.note is not None:
        view["note"] = run.note
    if run.kind is not None:
        view["kind"] = run.kind
    return view


class CommandBody(Body):
    """A body whose `command` is tagged by `_tag`, one of `TAGS`: a missing or unknown `_tag`
    is reported at `["command", "_tag"]` (pydantic would name the union's variants instead)."""

    TAGS: ClassVar[tuple[str, ...]]

    @field_validator("command", mode="wrap", check_fields=False)
    @classmethod
    def _tag_first(cls, value: Any, handler: Any) -> Any:
        if isinstance(value, dict) and value.get("_tag") not in cls.TAGS:
            missing = "_tag" not in value
            error = PydanticCustomError(
                "missing" if missing else "union_tag_invalid",
                "field required" if missing else "_tag must be one of {tags}",
                {"tags": ", ".join(cls.TAGS)},
            )
            raise ValidationError.from_exception_data(
                "command", [InitErrorDetails(type=error, loc=("_tag",), input=value.get("_tag"))]
            )
        return handler(value)
