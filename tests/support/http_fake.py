"""A real local HTTP server that answers model requests with scripted replies, for the
HTTP model adapters (OpenAI-compatible, Anthropic) and their contract suite."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    delay_s: float = 0.0

    @classmethod
    def json(cls, data: Any, status: int = 200, delay_s: float = 0.0) -> Reply:
        return cls(status, json.dumps(data).encode(), delay_s)


@dataclass
class FakeServer:
    url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def fake_server(prefix: str = "") -> Iterator[FakeServer]:
    """A server on 127.0.0.1; `url` ends with `prefix` (e.g. "/v1/")."""
    state = FakeServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            state.requests.append(
                {
                    "path": self.path,
                    # Header names are case-insensitive: kept lowercase.
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "json": json.loads(body),
                }
            )
            reply = state.replies.pop(0) if state.replies else Reply(500, b"{}")
            if reply.delay_s:
                time.sleep(reply.delay_s)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except OSError:
                pass  # the client gave up (timeout tests)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}{prefix}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
