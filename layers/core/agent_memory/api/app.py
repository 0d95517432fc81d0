"""The FastAPI application, assembled in one place."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from agent_memory.api.errors import install_error_handlers
from agent_memory.api.observability import RequestContext
from agent_memory.api.routers import (
    admin,
    agent_memories,
    agent_memory,
    agents,
    health,
    org_settings,
    sessions,
)
from agent_memory.service.registry import Services

ROUTERS = (
    health.router,
    admin.router,
    org_settings.router,
    agent_memories.router,
    agents.router,
    sessions.router,
    agent_memory.router,
)


def create_app(services: Callable[[], Services], *, max_body_bytes: int = 1_048_576) -> FastAPI:
    """`services` is called on each request and should return the same (lazily built)
    Services: wiring happens on the first request, not at import."""
    app = FastAPI(
        title="agent-memory",
        version="0.1.0",
        description="A memory service for AI agents.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.services = services
    for router in ROUTERS:
        app.include_router(router)
    install_error_handlers(app)
    app.add_middleware(RequestContext, max_body_bytes=max_body_bytes)
    return app
