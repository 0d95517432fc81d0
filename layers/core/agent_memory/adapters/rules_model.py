"""`local/rules`: the deterministic local model, answering each task's `local_answer()`."""

from __future__ import annotations

from agent_memory.adapters.deadline import within_deadline
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.ports.models import ModelReply, Usage

NAME = "local/rules"


class RulesModel:
    name = NAME

    def propose(self, request: ModelRequest) -> ModelReply:
        """The task's local answer for this request; usage is zero (nothing is paid)."""
        text, latency_ms = within_deadline(request.local_answer, request.deadline_s, NAME)
        return ModelReply(text=text, model=NAME, usage=Usage(), latency_ms=latency_ms)
