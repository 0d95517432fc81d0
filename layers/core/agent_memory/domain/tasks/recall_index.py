"""`recall_index` (seed 003 semantic recall): the background embedding of a thread's new
messages. Not a chat-model question: the learning workflow runs one CallModel per
execution, and this task is always answered by `local/rules` (no network, no tokens);
the embedding itself is done when the run is applied (service/recall_step.py).
Out: `{"messages": int}`, how many messages the run reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from agent_memory.domain.tasks.base import ModelTask

NAME = "recall_index"
MODEL = "local/rules"


@dataclass(frozen=True)
class RecallIndexInput:
    messages: int


class RecallIndex(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: int


class RecallIndexTask(ModelTask[RecallIndexInput, RecallIndex]):
    name = NAME
    output_model = RecallIndex
    max_output_tokens = 16
    description = "Count the messages to embed."

    def system(self, task_input: RecallIndexInput) -> str:
        return 'Answer with one JSON object and nothing else: {"messages": <count>}.'

    def user(self, task_input: RecallIndexInput) -> str:
        return f"Messages to embed: {task_input.messages}"

    def local_answer(self, task_input: RecallIndexInput) -> RecallIndex:
        return RecallIndex(messages=task_input.messages)


RECALL_INDEX = RecallIndexTask()
