"""The memory Bot in a chat: confide, confessions and enrichments (API.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from agent_memory.api.contracts.base import Answer, Body
from agent_memory.domain.session_limits import MAX_ITEM_BYTES

if TYPE_CHECKING:
    from agent_memory.domain.memory_bot import Confession, Enriched


class Confide(Body):
    text: str = Field(
        min_length=1,
        description=f"What the Bot confides. At most {MAX_ITEM_BYTES} bytes as UTF-8.",
    )


class ConfideAnswered(Answer):
    answer: str
    calm: bool = Field(description="the fixed calm answer was given (no model answered)")

    @classmethod
    def of(cls, confession: Confession) -> ConfideAnswered:
        return cls(answer=confession.answer, calm=confession.calm)


class ConfessionOut(Answer):
    turnId: str
    text: str
    answer: str
    calm: bool
    at: int

    @classmethod
    def of(cls, confession: Confession) -> ConfessionOut:
        return cls(
            turnId=confession.turn_id,
            text=confession.text,
            answer=confession.answer,
            calm=confession.calm,
            at=confession.at,
        )


class Confessions(Answer):
    confessions: list[ConfessionOut]


class EnrichmentOut(Answer):
    turnId: str
    input: str
    original: str
    entryIds: list[str]
    at: int

    @classmethod
    def of(cls, enriched: Enriched) -> EnrichmentOut:
        return cls(
            turnId=enriched.turn_id,
            input=enriched.input,
            original=enriched.original,
            entryIds=list(enriched.entry_ids),
            at=enriched.at,
        )


class Enrichments(Answer):
    enrichments: list[EnrichmentOut]
