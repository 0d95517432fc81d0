"""The API's errors as exceptions: one class per `_tag` of API.md "Errors"."""

from __future__ import annotations

from typing import Any


class AgentMemoryError(Exception):
    """Any error the service answered: its HTTP status, `_tag` (`code`), message and `path`
    (the offending field, e.g. `["command", "kind"]`)."""

    code = "Error"

    def __init__(
        self,
        status: int,
        message: str,
        path: list[str | int] | None = None,
        *,
        code: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.message = message
        self.path: list[str | int] = list(path or [])
        if code is not None:
            self.code = code
        self.retry_after = retry_after
        where = f" at {'.'.join(str(p) for p in self.path)}" if self.path else ""
        super().__init__(f"{status} {self.code}{where}: {message}")


class ValidationError(AgentMemoryError):
    code = "ValidationError"


class Unauthorized(AgentMemoryError):
    code = "Unauthorized"


class Forbidden(AgentMemoryError):
    code = "Forbidden"


class NotFound(AgentMemoryError):
    code = "NotFound"


class Conflict(AgentMemoryError):
    """Any 409; the subclasses name which."""

    code = "Conflict"


class SessionConflict(Conflict):
    code = "SessionConflict"


class VersionConflict(Conflict):
    code = "VersionConflict"


class ChatConflict(Conflict):
    code = "ChatConflict"


class EntryConflict(Conflict):
    code = "EntryConflict"


class ThreadConflict(Conflict):
    code = "ThreadConflict"


class TooLarge(AgentMemoryError):
    code = "TooLarge"


class Throttled(AgentMemoryError):
    code = "Throttled"


class Unavailable(AgentMemoryError):
    code = "Unavailable"


_BY_TAG: dict[str, type[AgentMemoryError]] = {
    cls.code: cls
    for cls in (
        ValidationError,
        Unauthorized,
        Forbidden,
        NotFound,
        SessionConflict,
        VersionConflict,
        ChatConflict,
        EntryConflict,
        ThreadConflict,
        TooLarge,
        Throttled,
    )
}
_BY_STATUS: dict[int, type[AgentMemoryError]] = {
    400: ValidationError,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: Throttled,
    503: Unavailable,
}


def error_from_answer(status: int, body: Any, retry_after: float | None = None) -> AgentMemoryError:
    """The exception for an error answer: by its `_tag` when the body has one, else by status
    (a proxy's answer, say); an unknown tag keeps its name in `code`."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        cls = _BY_STATUS.get(status, AgentMemoryError)
        text = body if isinstance(body, str) else ""
        return cls(status, text or f"HTTP {status}", retry_after=retry_after)
    tag = str(error.get("_tag") or "")
    message = str(error.get("message") or "")
    raw_path = error.get("path")
    path = [p for p in raw_path if isinstance(p, str | int)] if isinstance(raw_path, list) else []
    cls = _BY_TAG.get(tag) or _BY_STATUS.get(status, AgentMemoryError)
    return cls(status, message, path, code=tag or None, retry_after=retry_after)
