"""`memory_changes`: consolidate a keyed pool (seed 000's session and agent memory) from new
evidence. The answer is API.md's "What a learning model returns"; the pool's consolidation
rules (domain/consolidation.py) check every change against its newest memory when applied.

`LearningRequest` is both this task's input and its provider request: providers read the
task's name, prompt, schema and deadline from it, `local/rules` calls `local_answer()`, and
test models read the evidence (`items`, `memory`, `person`) from it directly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from pydantic import BaseModel

from agent_memory.domain.consolidation import change_record
from agent_memory.domain.evidence import EvidenceItem, KnownEntry, Statements
from agent_memory.domain.learning_prompt import instructions_for, render_evidence
from agent_memory.domain.proposals import (
    CHANGES_SCHEMA,
    MemoryChangesAnswer,
    ProposedChange,
    parse_changes,
)
from agent_memory.domain.tasks.base import MAX_OUTPUT_TOKENS, STEP_DEADLINE_S, Ask, ModelTask
from agent_memory.domain.tasks.memory_changes_local import local_changes

NAME = "memory_changes"
DESCRIPTION = "Record the proposed changes to the memory (an empty list when none)."


@dataclass(frozen=True)
class LearningRequest:
    """Propose changes to one pool from new evidence.

    `instructions` is the system prompt the domain wrote (rules included); `items` and
    `memory` are also given structured, for models that do not read prose (local/rules).
    """

    pool_kind: str  # "session" | "agent" (the prompt differs), or any other keyed pool
    instructions: str
    items: tuple[EvidenceItem, ...]
    memory: tuple[KnownEntry, ...]
    allowed_kinds: tuple[str, ...]
    person: str | None = None
    deadline_s: float = STEP_DEADLINE_S

    max_output_tokens: ClassVar[int] = MAX_OUTPUT_TOKENS

    @property
    def task(self) -> str:
        return NAME

    @property
    def system(self) -> str:
        return self.instructions

    @property
    def user(self) -> str:
        return render_evidence(self)

    @property
    def schema(self) -> dict[str, Any]:
        return CHANGES_SCHEMA

    @property
    def description(self) -> str:
        return DESCRIPTION

    def local_answer(self) -> str:
        """What `local/rules` answers: the extractor's changes as API.md's JSON."""
        return local_changes(self).model_dump_json()


class MemoryChanges(ModelTask[LearningRequest, tuple[ProposedChange, ...]]):
    name = NAME
    output_model = MemoryChangesAnswer
    description = DESCRIPTION

    def system(self, task_input: LearningRequest) -> str:
        return task_input.instructions

    def user(self, task_input: LearningRequest) -> str:
        return render_evidence(task_input)

    def local_answer(self, task_input: LearningRequest) -> BaseModel:
        return local_changes(task_input)

    def parse(self, text: str, task_input: LearningRequest) -> tuple[ProposedChange, ...]:
        """Strict parse; keys the pool holds are accepted outside the key alphabet."""
        return parse_changes(text, known_keys=[entry.key for entry in task_input.memory])

    def describe(self, output: tuple[ProposedChange, ...]) -> list[dict[str, Any]]:
        """An answer none of which is applied, as a run's log keeps it: without content."""
        return [change_record(change) for change in output]

    def request(
        self, task_input: LearningRequest, *, deadline_s: float = STEP_DEADLINE_S
    ) -> LearningRequest:
        return replace(task_input, deadline_s=deadline_s)


MEMORY_CHANGES = MemoryChanges()


def consolidation(
    pool_kind: str, evidence: Statements[EvidenceItem]
) -> Ask[LearningRequest, tuple[ProposedChange, ...]]:
    """What a keyed pool of kind `pool_kind` asks for one run's evidence."""
    request = LearningRequest(
        pool_kind=pool_kind,
        instructions=instructions_for(pool_kind, evidence.allowed_kinds, evidence.person),
        items=tuple(evidence.items),
        memory=tuple(evidence.memory),
        allowed_kinds=tuple(evidence.allowed_kinds),
        person=evidence.person,
    )
    return Ask(MEMORY_CHANGES, request)
