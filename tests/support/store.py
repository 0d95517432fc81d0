"""A store whose answers are lost after the write lands, as a network may lose them."""

from __future__ import annotations

from typing import Any


class LostAnswers:
    """Makes the table apply a write and its answer look lost, so the SDK sends it again.

    A `needs-retry` handler that asks botocore to retry the first attempt of the next write
    after the table answered it: exactly what a read timeout after the commit does.
    """

    def __init__(self, client: Any) -> None:
        self.attempts: list[str] = []
        self._armed: str | None = None
        client.meta.events.register("needs-retry.dynamodb", self._needs_retry)

    def lose_next(self, *, also_failures: bool = False) -> None:
        """The next write's first answer is lost (a success; any answer with
        `also_failures`)."""
        self._armed = "any" if also_failures else "success"

    def _needs_retry(self, response: Any, attempts: int, operation: Any, **_: Any) -> Any:
        if operation.name not in WRITES:
            return None
        self.attempts.append(operation.name)
        if self._armed is None or attempts != 1 or response is None:
            return None
        if self._armed == "success" and response[0].status_code != 200:
            return None
        self._armed = None
        return 0  # retry now


WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}
