"""Domain errors. The API maps each to one HTTP status in one place (api/errors.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class DomainError(Exception):
    """Base of every error a client may see. `tag` is the `_tag` of the error body, `status`
    the HTTP status; a subclass names either in its header (`tag=...`, `status=...`)."""

    tag = "Error"
    status = 500

    def __init_subclass__(
        cls, *, tag: str | None = None, status: int | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if tag is not None:
            cls.tag = tag
        if status is not None:
            cls.status = status

    def __init__(self, message: str, path: Sequence[str | int] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = list(path)


class ValidationFailed(DomainError, tag="ValidationError", status=400):
    """Malformed input; `path` names the offending field."""


class Unauthorized(DomainError, tag="Unauthorized", status=401): ...


class Forbidden(DomainError, tag="Forbidden", status=403):
    """The object is visible to the caller, but the action needs a grant it lacks."""


class NotFound(DomainError, tag="NotFound", status=404):
    """Unknown object, or one of another organization (never 403 across organizations)."""


class Conflict(DomainError, tag="Conflict", status=409):
    """A write whose condition failed: someone else changed the object first."""


class SessionConflict(Conflict, tag="SessionConflict"): ...


class VersionConflict(Conflict, tag="VersionConflict"): ...


class EntryConflict(Conflict, tag="EntryConflict"):
    """Seed 002: Forget or share of a bot memory entry that is not for the caller, or a
    share that a source's access rule does not allow."""


class ChatConflict(Conflict, tag="ChatConflict"):
    """Seed 002: confide in a review chat or after its turn completed; items for a
    completed turn."""


class ThreadConflict(Conflict, tag="ThreadConflict"):
    """Seed 003: a working-memory PUT when the observer manages it, working memory is off,
    or the active version is readOnly."""


class TooLarge(DomainError, tag="TooLarge", status=413): ...


class Throttled(DomainError, tag="Throttled", status=429): ...


class Unavailable(DomainError, tag="Unavailable", status=503):
    """A dependency (AWS, a model) failed transiently; nothing was written. Retry later."""


class IntegrityError(DomainError, tag="IntegrityError", status=500):
    """A stored ciphertext does not belong where it was found (copied or tampered with)."""


class WriteConflict(Conflict):
    """Raised by the store when a conditional write or transaction's condition failed.

    `condition` is the `name` of the condition that failed (None when it had none), and
    `index` the position of its action in the write; both are None when no condition
    failed (a concurrent transaction won). Services translate it into the seed's tag
    (SessionConflict, VersionConflict).
    """

    def __init__(
        self,
        message: str = "a condition failed",
        index: int | None = None,
        condition: str | None = None,
    ) -> None:
        super().__init__(message)
        self.index = index
        self.condition = condition

    @property
    def raced(self) -> bool:
        """No condition failed: another transaction on the same rows won (retry)."""
        return self.index is None and self.condition is None
