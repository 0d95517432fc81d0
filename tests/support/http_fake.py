"""Real local HTTP servers that answer model requests: one POST handler for every fake model
server, and scripted replies for the HTTP model adapters and their contract suite."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
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


class PostServer:
    """A threaded HTTP server on 127.0.0.1 that answers every POST with
    `answer(path, headers, body)`; header names are lowercase. `url` ends with `prefix`."""

    def __init__(self, answer: Callable[[str, dict[str, str], bytes], Reply], prefix: str = ""):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = answer(self.path, headers, body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client gave up (timeout tests) or was killed

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{prefix}"
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def post_server(
    answer: Callable[[str, dict[str, str], bytes], Reply], prefix: str = ""
) -> Iterator[PostServer]:
    server = PostServer(answer, prefix)
    try:
        yield server
    finally:
        server.close()


@contextmanager
def fake_server(prefix: str = "") -> Iterator[FakeServer]:
    """A server whose POSTs take the scripted `replies` in order (500 when none is left);
    `url` ends with `prefix` (e.g. "/v1/")."""
    state = FakeServer(url="")

    def answer(path: str, headers: dict[str, str], body: bytes) -> Reply:
        state.requests.append({"path": path, "headers": headers, "json": json.loads(body)})
        return state.replies.pop(0) if state.replies else Reply(500, b"{}")

    with post_server(answer, prefix) as server:
        state.url = server.url
        yield state
