"""`local/rules`: the deterministic local model, answering each task's `local_answer()`."""

from __future__ import annotations

import time

from agent_memory.ports.models import ModelFailure, ModelReply, ModelRequest, Usage

NAME = "local/rules"


class RulesModel:
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
