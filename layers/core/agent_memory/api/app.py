"""The FastAPI application, assembled in one place."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.routing import compile_path

from agent_memory.api.bodies import RequestGuard
from agent_memory.api.contracts.base import MODEL_NAME_PATTERN, model_name_pattern
from agent_memory.api.errors import install_error_handlers
from agent_memory.api.observability import RequestContext
from agent_memory.service.registry import Services


def all_routers() -> tuple[APIRouter, ...]:
    """Every family's routers (api/families.py); imported only when an app is built."""
    from agent_memory.api.families import FAMILIES, routers

    return tuple(router for family in FAMILIES for router in routers(family.name))


def create_app(
    services: Callable[[], Services],
    *,
    max_body_bytes: int = 1_048_576,
    routers: Iterable[APIRouter] | None = None,
    deployment_document: bool = True,
) -> FastAPI:
    """`services` is called per request and builds lazily; `deployment_document` narrows the
    served document's model names to what this deployment runs and allows."""
    app = FastAPI(
        title="agent-memory",
        version="0.1.0",
        description="A memory service for AI agents.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.services = services
    for router in all_routers() if routers is None else routers:
        app.include_router(router)
    install_error_handlers(app)
    # Inside RequestContext, so its answers carry the correlation id and are counted.
    app.add_middleware(
        RequestGuard, max_body_bytes=max_body_bytes, paths=lambda: app.openapi()["paths"]
    )
    app.add_middleware(RequestContext)
    app.add_middleware(AllowEveryMethod, app=app)
    _document_errors(app, deployment_document)
    return app


class AllowEveryMethod:
    """A 405's `Allow` lists every method of the path, not only the first matching route's."""

    def __init__(self, asgi: Any, *, app: FastAPI) -> None:
        self._asgi = asgi
        self._app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._asgi(scope, receive, send)
            return

        async def corrected(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] == 405:
                allowed = ", ".join(sorted(_methods_of(self._app, scope)))
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", allowed.encode())]}
            await send(message)

        await self._asgi(scope, receive, corrected)


def _methods_of(app: FastAPI, scope: Any) -> set[str]:
    path = str(scope.get("path", ""))
    paths: dict[str, Any] = app.openapi().get("paths", {})
    # A path without parameters is served by its own routes, not a template's.
    if path in paths:
        return {method.upper() for method in paths[path]}
    methods: set[str] = set()
    for template, operations in paths.items():
        if compile_path(template)[0].match(path):
            methods |= {method.upper() for method in operations}
    return methods


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
    "400": "ValidationError: malformed body, unknown field, a key written twice, or a value "
    "outside this schema (its limits included); `path` names it",
    "401": "Unauthorized: missing, unknown or revoked token",
    "403": "Forbidden: the object is visible but the action needs a grant",
    "404": "NotFound: unknown object, or one of another organization",
    "409": "SessionConflict, VersionConflict, EntryConflict, ChatConflict, ThreadConflict or "
    "Conflict: stale "
    "expected/revision, or a conflict the route names",
    "413": "TooLarge: what no schema states: a body over the limit (1 MiB), a text within "
    "its characters but over its bytes as UTF-8, a write that would take a pool past its "
    "bound (`path` names the field), or a person's export over what one answer of the "
    "deployment carries (EXPORT_MAX_BYTES)",
    "429": "Throttled: the token is over its rate limit (RATE_LIMIT_PER_MINUTE); "
    "`Retry-After` says when to retry",
    "503": "Unavailable: a dependency failed; nothing was written, retry",
}


def _served_model_names(schema: Any, svc: Services) -> None:
    """State this deployment's model names, so a client reading the schema never sends a 400."""
    served = model_name_pattern(svc.capabilities.deployment_names())
    todo = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("pattern") == MODEL_NAME_PATTERN:
                node["pattern"] = served
            todo += node.values()
        elif isinstance(node, list):
            todo += node


# The answers that say when to retry (API.md "Errors").
_RETRY_AFTER = ("429", "503")
_RETRY_AFTER_HEADER: dict[str, Any] = {
    "description": "Seconds to wait before retrying",
    "schema": {"type": "integer", "minimum": 0},
}


def _document_errors(app: FastAPI, deployment_document: bool) -> None:
    """Document API.md's error answers instead of FastAPI's 422, which is never sent."""
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
                    answer = responses.setdefault(
                        status,
                        {
                            "description": description,
                            "content": {"application/json": {"schema": reference}},
                        },
                    )
                    if status in _RETRY_AFTER:
                        answer.setdefault("headers", {})["Retry-After"] = _RETRY_AFTER_HEADER
        if deployment_document:
            _served_model_names(schema, app.state.services())
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
