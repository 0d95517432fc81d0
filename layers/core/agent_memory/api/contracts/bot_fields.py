"""What the bot and the chat contracts share, apart so a family function imports only its own."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic import Field

from agent_memory.api.contracts.base import NOT_BLANK, NotBlank
from agent_memory.domain.bounds import MAX_BOT_NAME_LENGTH

Name = Annotated[
    str, Field(min_length=1, max_length=MAX_BOT_NAME_LENGTH, json_schema_extra=NOT_BLANK), NotBlank
]
Id = Annotated[str, Field(min_length=1, max_length=128)]
# The paging of `GET /v1/bots`, `/v1/channels` and `/v1/chats`, as `GET /v1/threads` pages.
LIMIT = Query(ge=1, le=100, description="objects per page")
AFTER = Query(
    min_length=1,
    max_length=200,
    description="the id of the last object of the page before: one this list shows you (else 404)",
)
