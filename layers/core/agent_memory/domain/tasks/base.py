"""What every model task is: a name, a prompt, an output schema, a parser, rules and a local
answer. Providers (ports.models) serve any task through `ModelRequest`; the learning workflow
runs any pool's task through `Ask`. Every task writes its prompt with `task_prompt` and
`json_lines`, so all of them read alike to a model.

A task is stateless and lives once per process (a module-level instance). Its input is a
plain typed value (a dataclass); its output is what its parser returns, by default the
instance of its pydantic `output_model`, from which its JSON schema is generated.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast, final, runtime_checkable

from pydantic import BaseModel

from agent_memory.domain.tasks.answers import InvalidModelOutput, parse_answer, strict_schema

In = TypeVar("In")
Out = TypeVar("Out")

# A learning step stays under the workflow's 120 s CallModel timeout (seed 002: "One step of
# learning may take at most 2 minutes"); request-path tasks pass their own (15 s for 002).
STEP_DEADLINE_S = 100.0
MAX_OUTPUT_TOKENS = 4096
# The headings of a note a task adds after its rules.
OWNER_RULES = "The owner's rules about privacy and sharing"
FOCUS = "What to focus on"


@runtime_checkable
class Instructed(Protocol):
    """A task input that carries a person's note (the owner's rules, a focus, the title's
    instructions): the task adds it after its rules."""

    @property
    def instructions(self) -> str | None: ...


class ModelTask(ABC, Generic[In, Out]):
    """One thing a model is asked. A task states its prompt as data (`intro`, `rules`,
    `answer_format`, `note_heading`), picks from it by input where the prompt
    depends on it (`intro_for`, `rules_for`), and writes the user message (`user`) and the
    deterministic `local_answer`. `system` is the same for every task; `parse`, `schema` and
    `describe` have defaults that most tasks keep."""

    # The task's name: `response_format.json_schema.name` (OpenAI-compatible), the forced
    # tool's name (Bedrock, Anthropic), and what saved calls record.
    name: ClassVar[str]
    # The answer's shape: the source of the JSON schema and of the default parser.
    output_model: ClassVar[type[BaseModel]]
    max_output_tokens: ClassVar[int] = MAX_OUTPUT_TOKENS
    # One sentence a tool-calling provider shows the model as the tool's description.
    description: ClassVar[str] = "Record the answer."
    # The system text, as `task_prompt` writes it: what the model does, its rules, the JSON
    # object it answers with, and the heading of the note a person may add (`Instructed`).
    intro: ClassVar[str] = ""
    rules: ClassVar[tuple[str, ...]] = ()
    answer_format: ClassVar[str] = ""
    note_heading: ClassVar[str] = OWNER_RULES

    @final
    def system(self, task_input: In) -> str:
        """The system text: the task and its rules, for this input (the same mechanism for
        every task, so no prompt is written by hand)."""
        return task_prompt(
            self.intro_for(task_input),
            self.rules_for(task_input),
            answer=self.answer_format,
            note=task_input.instructions if isinstance(task_input, Instructed) else None,
            note_heading=self.note_heading,
        )

    def intro_for(self, task_input: In) -> str:
        """What the model does, for this input (a task whose intro depends on its input
        overrides it)."""
        return self.intro

    def rules_for(self, task_input: In) -> Sequence[str]:
        """The rules for this input (a task whose rules depend on its input overrides it)."""
        return self.rules

    @abstractmethod
    def user(self, task_input: In) -> str:
        """The user message: the input the model reads (items, entries, text)."""

    @abstractmethod
    def local_answer(self, task_input: In) -> BaseModel:
        """What `local/rules` answers for this input: deterministic, no network, an
        instance of `output_model`."""

    def schema(self, task_input: In) -> dict[str, Any]:
        """The strict JSON schema of the answer (from `output_model`; a task whose schema
        depends on its input, such as an embedded working-memory schema, overrides it)."""
        return strict_schema(self.output_model)

    def parse(self, text: str, task_input: In) -> Out:
        """The model's text as the typed output, or `InvalidModelOutput` naming the place.
        Default: the `output_model` instance (tasks with another output type override)."""
        return cast(Out, parse_answer(self.output_model, text))

    def describe(self, output: Out) -> list[dict[str, Any]]:
        """The answer as records an execution shows when none of it is applied: the task
        that answered, never its words (an execution row is plaintext metadata)."""
        return [{"op": self.name}]

    def request(self, task_input: In, *, deadline_s: float = STEP_DEADLINE_S) -> ModelRequest:
        return ModelRequest(self, task_input, deadline_s)


@dataclass(frozen=True)
class ModelRequest:
    """What any provider is sent (what `ports.models.LearningModel.propose` takes): the
    task's name, the system text, the user message, the answer's JSON schema and the deadline
    in seconds, computed once from the task and its input. `local_answer()` is what
    `local/rules` answers, so it serves any task."""

    spec: ModelTask[Any, Any]
    input: Any
    deadline_s: float

    @property
    def task(self) -> str:
        return self.spec.name

    @cached_property
    def system(self) -> str:
        return self.spec.system(self.input)

    @cached_property
    def user(self) -> str:
        return self.spec.user(self.input)

    @cached_property
    def schema(self) -> dict[str, Any]:
        return self.spec.schema(self.input)

    @property
    def max_output_tokens(self) -> int:
        return self.spec.max_output_tokens

    @property
    def description(self) -> str:
        return self.spec.description

    def local_answer(self) -> str:
        return self.spec.local_answer(self.input).model_dump_json(by_alias=True)


@dataclass(frozen=True)
class Ask(Generic[In, Out]):
    """A task bound to its input: what one learning run asks, and how its answer is read.
    The workflow carries it without knowing the task."""

    task: ModelTask[In, Out]
    input: In

    @property
    def name(self) -> str:
        return self.task.name

    def request(self, deadline_s: float) -> ModelRequest:
        return self.task.request(self.input, deadline_s=deadline_s)

    def parse(self, text: str) -> Out:
        return self.task.parse(text, self.input)

    def describe(self, output: Out) -> list[dict[str, Any]]:
        return self.task.describe(output)


def task_prompt(
    task: str,
    rules: Sequence[str],
    *,
    answer: str,
    note: str | None = None,
    note_heading: str = OWNER_RULES,
) -> str:
    """The task, its rules numbered from 1 (none: no rules section), the note under its
    heading when set, and `answer`: the JSON object to answer with, as the model reads it."""
    text = task
    if rules:
        numbered = "\n".join(f"{number}. {rule}" for number, rule in enumerate(rules, start=1))
        text += f"\n\nRules:\n{numbered}"
    if note:
        text += f"\n\n{note_heading}: {note}"
    return f"{text}\n\nAnswer with one JSON object and nothing else: {answer}"


def json_lines(records: Iterable[Mapping[str, object]]) -> list[str]:
    """One JSON object per record, or `(none)` so the model sees the list is empty: text
    cannot break out of its record (quotes and newlines are escaped), ids stay exact."""
    return [json.dumps(dict(record), ensure_ascii=False) for record in records] or ["(none)"]


def item_record(
    id: str, role: str, content: str, app: str | None, context: Mapping[str, str | None]
) -> dict[str, object]:
    """A conversation item as the model reads it: id, role, the context set (its session,
    its actor), and a tool result of an App marked as outside data."""
    record: dict[str, object] = {"id": id, "role": role}
    record.update({name: value for name, value in context.items() if value})
    if app:
        record["app"] = app
        record["outside_data"] = True
    record["content"] = content
    return record


def required_text(value: str, field: str, max_length: int) -> str:
    """An answer's text field: never blank, at most `max_length` characters."""
    if not value:
        raise InvalidModelOutput(f"'{field}' must be non-empty text", [field])
    if len(value) > max_length:
        raise InvalidModelOutput(f"'{field}' is longer than {max_length} characters", [field])
    return value
