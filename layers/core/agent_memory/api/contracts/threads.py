"""Threads and their messages, working memory, turn context and observational memory
(API.md, "Threads"; seed 003 "The observer")."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field

from agent_memory.api.contracts.base import Answer, Body, Envelope, Mirror, Sparse
from agent_memory.domain import bounds
from agent_memory.domain.threads import Found

Role = Literal["user", "assistant", "tool", "system"]


def _bounded(limit: int, what: str) -> AfterValidator:
    """A JSON object of at most `limit` bytes (`bounds.item_size`), else a 400 naming `what`."""

    def check(value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and bounds.item_size(value) > limit:
            raise ValueError(f"{what} is at most {limit} bytes of JSON")
        return value

    return AfterValidator(check)


Metadata = Annotated[dict[str, Any] | None, _bounded(bounds.MAX_THREAD_METADATA_BYTES, "metadata")]


class CreateThread(Body):
    agentId: str = Field(min_length=1, max_length=200)
    resourceId: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="whose thread it is: the caller (the default), the only resource a "
        "person acts for; any other id is a 403 naming `resourceId`, and nothing is created",
    )
    title: str | None = Field(
        default=None,
        min_length=1,
        max_length=bounds.MAX_THREAD_TITLE,
        description="the thread's title; given, `generateTitle` leaves the thread as titled",
    )
    metadata: Metadata = Field(
        default=None,
        description="an opaque JSON object about the thread (at most "
        f"{bounds.MAX_THREAD_METADATA_BYTES} bytes), sealed like content and returned as sent",
    )


class UpdateThread(Body):
    title: str | None = Field(
        default=None,
        min_length=1,
        max_length=bounds.MAX_THREAD_TITLE,
        description="the new title (`generateTitle` then leaves the thread)",
    )
    metadata: Metadata = Field(
        default=None,
        description=f"replaces the thread's metadata whole (a JSON object, at most "
        f"{bounds.MAX_THREAD_METADATA_BYTES} bytes); `{{}}` clears it",
    )


class ThreadOut(Mirror):
    id: str
    agentId: str
    resourceId: str
    title: str | None
    metadata: dict[str, Any] | None = Field(description="as the client set it, else null")
    createdAt: int


class ThreadAnswer(Envelope):
    thread: ThreadOut


class ThreadsAnswer(Mirror):
    threads: list[ThreadOut]
    has_more: bool = Field(
        description="more threads follow: pass the last one's id as `starting_after`"
    )


class MessageIn(Body):
    role: Role
    content: str = Field(max_length=bounds.MAX_MESSAGE_CONTENT)
    item: Annotated[dict[str, Any] | None, _bounded(bounds.MAX_ITEM_BYTES, "an item")] = Field(
        default=None, description="an opaque JSON object (at most 32 KB), returned as sent"
    )


class SaveMessages(Body):
    messages: list[MessageIn] = Field(max_length=bounds.MAX_MESSAGES_PER_SAVE)


class MessageIds(Answer):
    messageIds: list[str]


class MessageOut(Mirror, Sparse):
    # `item` is there only when the client sent one (it round-trips its own format).
    optional: ClassVar[tuple[str, ...]] = ("item",)

    id: str
    role: str
    content: str
    item: dict[str, Any] | None = Field(default=None, description="present when one was sent")
    createdAt: int


class MessagesAnswer(Envelope):
    messages: list[MessageOut]


class DeletedThread(Answer):
    id: str
    object: Literal["thread"] = "thread"
    deleted: Literal[True] = True
    messages: int = Field(description="Messages this call removed")


class RemovedMessage(Envelope):
    message: MessageOut | None


class WorkingMemoryIn(Body):
    content: str | dict[str, Any]


class WorkingMemoryOut(Mirror):
    scope: Literal["resource", "thread"]
    format: Literal["markdown", "json"]
    content: str | dict[str, Any] | None


class ContextMessage(Body):
    role: Literal["user"]
    content: str = Field(max_length=bounds.MAX_MESSAGE_CONTENT)


class ContextRequest(Body):
    message: ContextMessage | None = None


class Tool(Answer):
    name: str
    description: str
    parameters: dict[str, Any]


class Recalled(Mirror):
    threadId: str
    messages: list[MessageOut]
    score: float


class ContextAnswer(Mirror):
    messages: list[MessageOut]
    recalled: list[Recalled]
    workingMemory: str | dict[str, Any] | None
    observations: str | None
    system: str
    tools: list[Tool]


class ObservationLog(Mirror):
    log: str = Field(
        validation_alias="text",
        description="every observation made, buffered or active, oldest first",
    )
    tokens: int = Field(description="the log's tokens (domain/observation.count_tokens)")
    reflections: int = Field(description="how many reflections condensed the log")


class RecallRequest(Body):
    query: str = Field(min_length=1, max_length=bounds.MAX_MESSAGE_CONTENT)
    limit: int | None = Field(default=None, ge=1, le=bounds.RECALL_MAX)


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
