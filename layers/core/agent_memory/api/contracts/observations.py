"""Observational memory's routes (API.md, "Threads"; seed 003 "The observer")."""

from __future__ import annotations

from pydantic import Field

from agent_memory.api.contracts.base import Answer, Body, Mirror
from agent_memory.api.contracts.threads import MessageOut
from agent_memory.domain import thread_limits as rules
from agent_memory.domain.threads import Found


class ObservationLog(Mirror):
    log: str = Field(
        validation_alias="text",
        description="every observation made, buffered or active, oldest first",
    )
    tokens: int = Field(description="the log's tokens (domain/observation.count_tokens)")
    reflections: int = Field(description="how many reflections condensed the log")


class RecallRequest(Body):
    query: str = Field(min_length=1, max_length=rules.MAX_CONTENT)
    limit: int | None = Field(default=None, ge=1, le=rules.RECALL_MAX)


class RecalledMessage(MessageOut):
    threadId: str
    score: float = Field(description="Okapi BM25 of the query over the messages searched")

    @classmethod
    def found(cls, found: Found) -> RecalledMessage:
        shown = MessageOut.of(found.message).model_dump()
        return cls(**shown, threadId=found.thread_id, score=found.score)


class RecallAnswer(Answer):
    messages: list[RecalledMessage]

    @classmethod
    def of(cls, found: list[Found]) -> RecallAnswer:
        return cls(messages=[RecalledMessage.found(f) for f in found])
