"""The one place where errors become HTTP answers (API.md, "Errors")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from agent_memory.domain.errors import DomainError
from agent_memory.observability import logger

# Where a request part comes first in a validation error's location.
_LOCATIONS = {"body", "query", "path", "header"}
# Tags of discriminated unions: pydantic puts the chosen variant in the location.
UNION_TAGS: set[str] = {"Remember", "Forget", "Configure", "Refresh"}


def error_body(tag: str, message: str, path: Sequence[str | int] = ()) -> dict[str, Any]:
    return {"error": {"_tag": tag, "message": message, "path": list(path)}}


def _path(loc: Sequence[Any]) -> list[str | int]:
    parts = list(loc)
    if parts and parts[0] in _LOCATIONS:
        parts = parts[1:]
    return [p for p in parts if not (isinstance(p, str) and (p in UNION_TAGS or "[" in p))]


def _validation_message(error: dict[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown field"
    if error.get("type") == "missing":
        return "field required"
    if error.get("type") in {"json_invalid", "model_attributes_type", "dict_type"} and not _path(
        error.get("loc", ())
    ):
        return "the body must be a JSON object"
    return str(error.get("msg", "invalid value"))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def domain_error(_request: Request, error: DomainError) -> JSONResponse:
        if error.status >= 500:
            logger.error("request failed", extra={"tag": error.tag, "error": error.message})
        headers = {"Retry-After": "1"} if error.status in (429, 503) else None
        # Imported here: only the services raise it, and they have loaded it by then.
        from agent_memory.domain.limits import RateLimited

        if isinstance(error, RateLimited):
            # Seconds until the token's window frees up (domain/limits.py).
            headers = {"Retry-After": str(error.retry_after_s)}
        return JSONResponse(
            error_body(error.tag, error.message, error.path), error.status, headers=headers
        )

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, error: RequestValidationError) -> JSONResponse:
        first = error.errors()[0]
        path = _path(first.get("loc", ()))
        if first.get("type") == "json_invalid":
            path = []
        return JSONResponse(error_body("ValidationError", _validation_message(first), path), 400)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, error: HTTPException) -> JSONResponse:
        # Starlette's 400 is a body it could not decode (not UTF-8): a validation error.
        tags = {
            400: "ValidationError",
            401: "Unauthorized",
            404: "NotFound",
            405: "MethodNotAllowed",
        }
        tag = tags.get(error.status_code, "Error")
        return JSONResponse(
            error_body(tag, str(error.detail)), error.status_code, headers=error.headers
        )

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, error: Exception) -> JSONResponse:
        logger.exception("unexpected error")
        return JSONResponse(error_body("InternalError", "something went wrong on our side"), 500)
