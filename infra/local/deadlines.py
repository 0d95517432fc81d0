"""Time bounds on what a client sends to the local server: a request's head must arrive
whole within `REQUEST_HEAD_TIMEOUT` seconds (default 10) and its body within
`REQUEST_BODY_TIMEOUT` seconds (default 30), or the connection is answered 408 and closed
(docs/operations.md, "Local"; docs/adr/0017-duplicated-keys-and-slow-requests.md).

uvicorn bounds only an idle keep-alive connection: its timer stops at the first byte, so a
client that trickles a header or its body a byte at a time held a connection (and its
buffers) for as long as it liked. This is uvicorn's h11 protocol with one timer per request:
armed when the connection opens or the previous response ends (the head's clock), moved to
the body's clock when the head is complete, stopped when the body is.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 30.0


class BoundedRequests(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a total time bound on each request's head and body."""

    head_timeout_s: float = HEAD_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for: str | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await("head")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE:
            # The next request's head is awaited from now (a pipelined one may be in already).
            self._await("head")
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop()
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Move the timer along with the request the client is sending."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            if self._waiting_for != "body":
                self._await("body")
        elif state is not h11.IDLE:
            self._stop()  # the request is in (or the connection is done): nothing awaited

    def _await(self, part: str) -> None:
        self._stop()
        bound = self.head_timeout_s if part == "head" else self.body_timeout_s
        self._waiting_for = part
        self._deadline = self.loop.call_later(bound, self._too_slow, part, bound)

    def _stop(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._waiting_for = None

    def _too_slow(self, part: str, bound: float) -> None:
        self._deadline = None
        self._waiting_for = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        answering = cycle is not None and cycle.response_started and not cycle.response_complete
        if not answering:
            self.transport.write(_timed_out(part, bound))
        self.transport.close()


def _timed_out(part: str, bound: float) -> bytes:
    """A 408 in API.md's error shape, written as raw bytes: no request may have been parsed."""
    body = json.dumps(
        {
            "error": {
                "_tag": "RequestTimeout",
                "message": f"the request's {part} did not arrive within {bound:g} s",
                "path": [],
            }
        }
    ).encode()
    head = (
        "HTTP/1.1 408 Request Timeout\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode()
    return head + body


def bounded_requests(environ: dict[str, str] | None = None) -> type[BoundedRequests]:
    """The protocol class with the bounds of `REQUEST_HEAD_TIMEOUT` / `REQUEST_BODY_TIMEOUT`
    (seconds; os.environ by default). ValueError names a setting that is not a number above 0."""
    environ = dict(os.environ) if environ is None else environ
    head = _seconds(environ, "REQUEST_HEAD_TIMEOUT", HEAD_TIMEOUT_S)
    body = _seconds(environ, "REQUEST_BODY_TIMEOUT", BODY_TIMEOUT_S)
    return type(
        "BoundedRequests", (BoundedRequests,), {"head_timeout_s": head, "body_timeout_s": body}
    )


def _seconds(environ: dict[str, str], name: str, default: float) -> float:
    text = environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} is a number of seconds above 0, not {text!r}")
    return value
