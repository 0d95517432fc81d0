"""The memory Bot in a chat: confide, confessions and enrichments (API.md)."""

from __future__ import annotations

from pydantic import Field

from agent_memory.api.contracts.base import Body, Envelope, Mirror
from agent_memory.domain.bounds import MAX_ITEM_BYTES


class Confide(Body):
    text: str = Field(
        min_length=1,
        description=f"What the Bot confides. At most {MAX_ITEM_BYTES} bytes as UTF-8.",
    )


class ConfideAnswered(Mirror):
    answer: str
    calm: bool = Field(description="the fixed calm answer was given (no model answered)")


class ConfessionOut(Mirror):
    turnId: str
    text: str
    answer: str
    calm: bool
    at: int


class Confessions(Envelope):
    confessions: list[ConfessionOut]


class EnrichmentOut(Mirror):
    turnId: str
    input: str
    original: str
    entryIds: list[str]
    at: int


class Enrichments(Envelope):
    enrichments: list[EnrichmentOut]
