"""The events feed: changes the caller may see (API.md "Events"; seed 003)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agent_memory.api.contracts.events import EventsAnswer
from agent_memory.api.deps import CallerDep, ServicesDep, run
from agent_memory.domain.bounds import (
    DEFAULT_EVENT_PAGE,
    EVENT_CURSOR_PATTERN,
    MAX_EVENT_CURSOR,
    MAX_EVENT_PAGE,
)

router = APIRouter(tags=["events"])


@router.get("/v1/events", response_model_exclude_none=True)
async def list_events(
    caller: CallerDep,
    svc: ServicesDep,
    after: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_EVENT_CURSOR,
            pattern=EVENT_CURSOR_PATTERN,
            description="the `next` of the previous page (opaque, in this pattern); without "
            "it, the oldest kept events (kept at least 24 hours). One this feed did not issue "
            "to you (another caller's, or made up) is a 404 naming `after`",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_EVENT_PAGE, description="events per page")] = (
        DEFAULT_EVENT_PAGE
    ),
) -> EventsAnswer:
    """Changes of the caller's organization that the caller may see, oldest first: threads
    created or renamed, working memory updated, memory changed, executions ended."""
    page = await run(svc, svc.events.page, caller, after, limit)
    return EventsAnswer.of(page)
