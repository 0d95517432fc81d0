"""The request guard, one ASGI middleware in front of routing and validation.

- a body over the limit answers 413 `TooLarge`, counted while it streams, the rest unread;
- a path or query parameter, or a JSON string, that cannot be encoded as UTF-8 answers 400;
- a key twice in one JSON object answers 400 (docs/adr/0017-duplicated-keys-and-slow-requests.md),
  and so does a number JSON cannot carry (NaN, Infinity, 1e999), which would be stored as null.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, unquote

from starlette.routing import compile_path

from agent_memory.api.errors import error_body
from agent_memory.domain.text import UNENCODABLE, Path, encodable, first_unencodable, shown

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# A JSON escape of a surrogate: only a body holding one (or a byte that is not UTF-8) is parsed.
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_UNPARSED = object()


class RequestGuard:
    """ASGI middleware: the body limit (counted while the body streams) and bad text."""

    def __init__(
        self,
        app: Any,
        *,
        max_body_bytes: int,
        paths: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        # Asked for only when a path holds bad text.
        self.paths = paths

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        where = bad_query(scope) or bad_path(scope, self.paths)
        if where is not None:
            await _answer(send, 400, error_body("ValidationError", UNENCODABLE, where))
            return
        if _declared_length(scope) > self.max_body_bytes:
            await self._too_large(send)
            return
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                # The client left before its body was complete: the app sees it leave.
                await self.app(scope, _replay(messages, receive), send)
                return
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                await self._too_large(send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(m.get("body", b"") for m in messages)
        where = bad_body(body)
        if where is not None:
            await _answer(send, 400, error_body("ValidationError", UNENCODABLE, where))
            return
        refused = not_json(body)
        if refused is not None:
            await _answer(send, 400, error_body("ValidationError", refused[1], refused[0]))
            return
        whole = {"type": "http.request", "body": body, "more_body": False}
        await self.app(scope, _replay([whole], receive), send)

    async def _too_large(self, send: Send) -> None:
        message = f"the body is over {self.max_body_bytes} bytes"
        # The rest of the body is never read: the connection cannot carry another request.
        await _answer(send, 413, error_body("TooLarge", message), close=True)


def bad_body(body: bytes) -> Path | None:
    """The path of the first unencodable string of a JSON body; None for none or not JSON."""
    if not body:
        return None
    if json.detect_encoding(body) == "utf-8" and _ESCAPED_SURROGATE.search(body) is None:
        try:
            body.decode("utf-8")
            return None
        except UnicodeDecodeError:
            pass
    value = _parsed(body)
    return None if value is _UNPARSED else first_unencodable(value)


def _parsed(body: bytes) -> Any:
    # A byte that is not UTF-8 becomes a lone surrogate, so the walk can name its field.
    for text in (body.decode("utf-8", "surrogateescape"), body):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            continue
    return _UNPARSED


class _Repeated(dict[str, Any]):
    """A JSON object in which `key` appeared more than once (the parser kept the last)."""

    key: str = ""


class _NotFinite(float):
    """A number JSON cannot carry (`NaN`, `Infinity`, or one past a float's range, as
    `1e999`), which Python's parser takes and would store as null."""


def _number(text: str) -> float:
    value = float(text)
    return _NotFinite(value) if math.isinf(value) or math.isnan(value) else value


def not_json(body: bytes) -> tuple[Path, str] | None:
    """The path of the first key repeated in one JSON object, or of the first number JSON
    cannot carry, with why (outer objects first); None for neither, or a body the parser
    refuses (validation answers that)."""
    if not body:
        return None
    found: list[Any] = []

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        built = dict(pairs)
        if len(built) == len(pairs):
            return built
        repeated = _Repeated(built)
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                repeated.key = key
                break
            seen.add(key)
        found.append(repeated)
        return repeated

    def number(text: str) -> float:
        value = _number(text)
        if isinstance(value, _NotFinite):
            found.append(value)
        return value

    try:
        value = json.loads(
            body, object_pairs_hook=members, parse_float=number, parse_constant=number
        )
    except (ValueError, RecursionError):
        return None
    return _first_found(value) if found else None


def _first_found(value: Any) -> tuple[Path, str] | None:
    # Iterative, so the deepest document the JSON parser accepts cannot exhaust the stack.
    pending: list[tuple[Path, Any]] = [([], value)]
    while pending:
        path, node = pending.pop()
        if isinstance(node, _Repeated):
            return [*path, node.key], f"the key {node.key!r} appears more than once in one object"
        if isinstance(node, _NotFinite):
            return path, "a number must be finite (no NaN, Infinity or overflow)"
        if isinstance(node, dict):
            pending.extend(reversed([([*path, key], child) for key, child in node.items()]))
        elif isinstance(node, list):
            pending.extend(reversed([([*path, index], item) for index, item in enumerate(node)]))
    return None


def bad_query(scope: Message) -> Path | None:
    """The name of the first query parameter whose name or value cannot be encoded."""
    query = scope.get("query_string", b"")
    if not query:
        return None
    text = query.decode("latin-1")
    for name, value in parse_qsl(text, keep_blank_values=True, errors="surrogateescape"):
        if not (encodable(name) and encodable(value)):
            return [shown(name)]
    return None


def bad_path(scope: Message, paths: Callable[[], Iterable[str]]) -> Path | None:
    """The unencodable path parameter of the matching route; None when fine or unmatched."""
    raw = scope.get("raw_path")
    path = unquote(raw.decode("latin-1"), errors="surrogateescape") if raw else scope["path"]
    if encodable(path):
        return None
    root = scope.get("root_path", "")
    path = path[len(root) :] if root and path.startswith(root) else path
    for template in paths():
        found = compile_path(template)[0].match(path)
        if found is None:
            continue
        for name, value in found.groupdict().items():
            if not encodable(value):
                return [name]
        return []
    return None


def _declared_length(scope: Message) -> int:
    for name, value in scope.get("headers", []):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return 0


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` for the app: the messages already read, then the server's own."""
    pending = list(messages)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


async def _answer(send: Send, status: int, body: dict[str, Any], *, close: bool = False) -> None:
    headers = [(b"content-type", b"application/json")]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
