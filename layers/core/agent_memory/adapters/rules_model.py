"""`local/rules`: the deterministic local model that needs no network.

It serves any task: it answers the task's own local answer (`ModelRequest.local_answer()`,
written next to the task's prompt in domain/tasks), in the task's JSON protocol, so the
domain parses and checks it like any other model's answer. For `memory_changes` that is the
extractor of plain user statements (domain/tasks/memory_changes_local.py).
"""

from __future__ import annotations

import time

from agent_memory.ports.models import ModelFailure, ModelReply, ModelRequest, Usage

NAME = "local/rules"


class RulesModel:
    """`ports.LearningModel` for `local/rules`."""

    name = NAME

    def propose(self, request: ModelRequest) -> ModelReply:
        """The task's local answer for this request; usage is zero (nothing is paid)."""
        started = time.monotonic()
        text = request.local_answer()
        latency_s = time.monotonic() - started
        if latency_s > request.deadline_s:
            raise ModelFailure(
                "timeout", f"no local answer within {request.deadline_s:g} s", retryable=True
            )
        return ModelReply(text=text, model=NAME, usage=Usage(0, 0), latency_ms=latency_s * 1000)
