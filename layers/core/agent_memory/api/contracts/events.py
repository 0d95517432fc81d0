"""The events feed (API.md "Events")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from pydantic import Field

from agent_memory.api.contracts.base import Answer
from agent_memory.domain.bounds import EVENT_CURSOR_PATTERN, EventType

if TYPE_CHECKING:
    from agent_memory.domain.events import Event, EventPage


class EventOut(Answer):
    id: str = Field(description="time-ordered; unique in the feed")
    type: EventType
    at: int = Field(description="when the change happened, ms since the epoch")
    object: dict[str, str] = Field(
        description="ids of what changed (threadId, agentId, resourceId, sessionId, botId, "
        "chatId, memoryId, executionId): never content, never titles"
    )
    serviceKeyId: str | None = Field(
        default=None,
        description="present when the change came through an organization's service key: "
        "which key (its id, never the key)",
    )
    person: str | None = Field(
        default=None,
        description="with `serviceKeyId`, the person the key acted for: shown to that person "
        "alone (who changed what others share is not shown)",
    )

    @classmethod
    def of(cls, event: Event, reader: str | None = None) -> Self:
        """The key a change came through is shown to every reader; the person it acted
        for only to that person (who changed a shared entry is not shown: ADR 0012)."""
        shown: dict[str, object] = {
            "id": event.id,
            "type": event.type,
            "at": event.at,
            "object": dict(event.object),
        }
        if event.by is not None:
            shown["serviceKeyId"] = event.by["serviceKeyId"]
            if event.by["person"] == reader:
                shown["person"] = reader
        return cls.model_validate(shown)


class EventsAnswer(Answer):
    events: list[EventOut] = Field(
        description="the changes after `after` that the caller may see, oldest first; may "
        "be empty while `next` moves on (hidden events still advance it)"
    )
    next: str = Field(
        description="opaque cursor: pass it as `after` for the following page",
        json_schema_extra={"pattern": EVENT_CURSOR_PATTERN},
    )

    @classmethod
    def of(cls, page: EventPage) -> Self:
        return cls(
            events=[EventOut.of(event, page.reader) for event in page.events], next=page.next
        )
