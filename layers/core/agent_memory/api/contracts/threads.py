"""Threads and their messages, working memory and turn context (API.md, "Threads";
seed 003)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from agent_memory.api.contracts.base import Answer, Body
from agent_memory.domain import thread_limits as rules

Role = Literal["user", "assistant", "tool", "system"]


class CreateThread(Body):
    agentId: str = Field(min_length=1, max_length=200)
    resourceId: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="whose thread it is: the caller (the default), the only resource a "
        "person acts for; any other id is a 403 naming `resourceId`, and nothing is created",
    )


class ThreadOut(Answer):
    id: str
    agentId: str
    resourceId: str
    title: str | None
    createdAt: int


class ThreadAnswer(Answer):
    thread: ThreadOut


class ThreadsAnswer(Answer):
    threads: list[ThreadOut]
    has_more: bool = Field(
        description="more threads follow: pass the last one's id as `starting_after`"
    )


class MessageIn(Body):
    role: Role
    content: str = Field(max_length=rules.MAX_CONTENT)
    item: dict[str, Any] | None = Field(
        default=None, description="an opaque JSON object (at most 32 KB), returned as sent"
    )

    @field_validator("item")
    @classmethod
    def _bounded(cls, item: dict[str, Any] | None) -> dict[str, Any] | None:
        if item is not None and rules.item_size(item) > rules.MAX_ITEM_BYTES:
            raise ValueError(f"an item is at most {rules.MAX_ITEM_BYTES} bytes of JSON")
        return item


class SaveMessages(Body):
    messages: list[MessageIn] = Field(max_length=rules.MAX_MESSAGES_PER_SAVE)


class MessageIds(Answer):
    messageIds: list[str]


class MessageOut(Answer):
    id: str
    role: str
    content: str
    item: dict[str, Any] | None = Field(default=None, description="present when one was sent")
    createdAt: int

    @model_serializer(mode="wrap")
    def _without_absent_item(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # `item` is there only when the client sent one (it round-trips its own format).
        body: dict[str, Any] = handler(self)
        if body.get("item") is None:
            body.pop("item", None)
        return body


class MessagesAnswer(Answer):
    messages: list[MessageOut]


class RemovedMessage(Answer):
    message: MessageOut | None


class WorkingMemoryIn(Body):
    content: str | dict[str, Any]


class WorkingMemoryOut(Answer):
    scope: Literal["resource", "thread"]
    format: Literal["markdown", "json"]
    content: str | dict[str, Any] | None


class ContextMessage(Body):
    role: Literal["user"]
    content: str = Field(max_length=rules.MAX_CONTENT)


class ContextRequest(Body):
    message: ContextMessage | None = None


class Tool(Answer):
    name: str
    description: str
    parameters: dict[str, Any]


class Recalled(Answer):
    threadId: str
    messages: list[MessageOut]
    score: float


class ContextAnswer(Answer):
    messages: list[MessageOut]
    recalled: list[Recalled]
    workingMemory: str | dict[str, Any] | None
    observations: str | None
    system: str
    tools: list[Tool]
