"""The FastAPI application, assembled in one place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from agent_memory.api.bodies import RequestGuard
from agent_memory.api.errors import install_error_handlers
from agent_memory.api.observability import RequestContext
from agent_memory.api.routers import (
    admin,
    agent_memory,
    agent_versions,
    agents,
    bots,
    console,
    docs,
    events,
    health,
    me,
    memory_bot,
    memory_objects,
    org_settings,
    sessions,
    threads,
)
from agent_memory.service.registry import Services

ROUTERS = (
    health.router,
    console.router,
    docs.router,
    me.router,
    admin.router,
    admin.organizations,
    org_settings.router,
    memory_objects.router,
    agents.router,
    sessions.router,
    agent_memory.router,
    agent_versions.router,
    threads.router,
    bots.router,
    memory_bot.router,
    events.router,
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
    # Inside RequestContext, so its answers carry the correlation id and are counted.
    app.add_middleware(
        RequestGuard, max_body_bytes=max_body_bytes, paths=lambda: app.openapi()["paths"]
    )
    app.add_middleware(RequestContext)
    _document_errors(app)
    return app


_ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["_tag", "message", "path"],
            "properties": {
                "_tag": {"type": "string"},
                "message": {"type": "string"},
                "path": {
                    "type": "array",
                    "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                },
            },
        }
    },
}
_ERRORS = {
    "400": "ValidationError: malformed body or unknown field; `path` names it",
    "401": "Unauthorized: missing, unknown or revoked token",
    "403": "Forbidden: the object is visible but the action needs a grant",
    "404": "NotFound: unknown object, or one of another organization",
    "409": "SessionConflict, VersionConflict, EntryConflict, ChatConflict, ThreadConflict or "
    "Conflict: stale "
    "expected/revision, or a conflict the route names",
    "413": "TooLarge: a body over the limit (1 MiB), a field over its documented limit, or "
    "a write that would take a pool past its bound; `path` names the field",
    "429": "Throttled: the token is over its rate limit (RATE_LIMIT_PER_MINUTE); "
    "`Retry-After` says when to retry",
    "503": "Unavailable: a dependency failed; nothing was written, retry",
}


def _document_errors(app: FastAPI) -> None:
    """Document the error answers API.md fixes, instead of FastAPI's 422 (never sent:
    validation errors answer 400 with the error body)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = generate()
        schema.setdefault("components", {}).setdefault("schemas", {})["Error"] = _ERROR_SCHEMA
        for schemas in ("HTTPValidationError", "ValidationError"):
            schema["components"]["schemas"].pop(schemas, None)
        reference = {"$ref": "#/components/schemas/Error"}
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                responses = operation.setdefault("responses", {})
                responses.pop("422", None)
                if not operation.get("security"):
                    continue
                for status, description in _ERRORS.items():
                    responses.setdefault(
                        status,
                        {
                            "description": description,
                            "content": {"application/json": {"schema": reference}},
                        },
                    )
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
