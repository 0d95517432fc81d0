"""The local server closes a connection whose request head or body arrives too slowly (a
total bound on each, REQUEST_HEAD_TIMEOUT / REQUEST_BODY_TIMEOUT: infra/local/deadlines.py),
answering 408 `RequestTimeout`, while other clients are served meanwhile.

Raw sockets against `make run`'s server, with the bounds shortened so the test is quick.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.local.deadlines import bounded_requests
from tests.support.local_server import LocalServer, local_server

HEAD_S = 2.0
BODY_S = 3.0
# Time past a bound that a busy machine may take to close the connection.
SLACK_S = 2.0
TRICKLE_S = 0.25


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalServer]:
    workdir = tmp_path_factory.mktemp("slow-clients")
    with local_server(
        workdir, REQUEST_HEAD_TIMEOUT=str(HEAD_S), REQUEST_BODY_TIMEOUT=str(BODY_S)
    ) as running:
        yield running


def _connect(server: LocalServer) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=5)
    connection.setblocking(False)
    return connection


def _trickle(
    server: LocalServer, connection: socket.socket, pieces: bytes, bound: float
) -> tuple[float, bytes]:
    """Send `pieces` one byte every TRICKLE_S (for a while past `bound` at most) while a
    normal client is served each time; the seconds until the server closed the connection,
    and what it answered."""
    started = time.monotonic()
    answered = b""
    for byte in pieces:
        if time.monotonic() - started > bound + 2 * SLACK_S:
            break
        assert _healthy(server), "a normal client was not served while one trickled"
        try:
            connection.send(bytes([byte]))
        except OSError:
            break
        time.sleep(TRICKLE_S)
        try:
            chunk = connection.recv(65536)
        except BlockingIOError:
            continue
        except OSError:
            break
        answered += chunk
        if not chunk:
            break
        answered += _rest(connection)
        break
    return time.monotonic() - started, answered


def _rest(connection: socket.socket) -> bytes:
    connection.setblocking(True)
    connection.settimeout(5)
    data = b""
    while chunk := connection.recv(65536):
        data += chunk
    return data


def _healthy(server: LocalServer) -> bool:
    with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as answer:
        return bool(answer.status == 200)


def _timed_out(answered: bytes, part: str, bound: float) -> None:
    head, _, body = answered.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 "), answered[:200]
    assert b"connection: close" in head.lower()
    assert json.loads(body) == {
        "error": {
            "_tag": "RequestTimeout",
            "message": f"the request's {part} did not arrive within {bound:g} s",
            "path": [],
        }
    }


def test_a_header_trickled_a_byte_at_a_time_is_cut_off_at_the_head_bound(
    server: LocalServer,
) -> None:
    connection = _connect(server)
    request = b"GET /healthz HTTP/1.1\r\nHost: local\r\nX-Slow: " + b"a" * 1000
    took, answered = _trickle(server, connection, request, HEAD_S)
    connection.close()
    assert HEAD_S - TRICKLE_S <= took <= HEAD_S + SLACK_S, took
    _timed_out(answered, "head", HEAD_S)


def test_a_body_trickled_a_byte_at_a_time_is_cut_off_at_the_body_bound(
    server: LocalServer,
) -> None:
    connection = _connect(server)
    head = (
        "POST /v1/agents HTTP/1.1\r\nHost: local\r\n"
        f"Authorization: Bearer {server.admin_token}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    connection.send(head.encode())
    took, answered = _trickle(server, connection, b'{"name": "' + b"a" * 990, BODY_S)
    connection.close()
    assert BODY_S - TRICKLE_S <= took <= BODY_S + SLACK_S, took
    _timed_out(answered, "body", BODY_S)


def test_a_connection_that_sends_nothing_is_closed_at_the_head_bound(
    server: LocalServer,
) -> None:
    connection = _connect(server)
    started = time.monotonic()
    answered = _rest(connection)
    took = time.monotonic() - started
    connection.close()
    assert took <= HEAD_S + SLACK_S, took
    _timed_out(answered, "head", HEAD_S)


def test_a_request_sent_at_once_is_answered_and_its_connection_kept_for_the_next(
    server: LocalServer,
) -> None:
    connection = _connect(server)
    connection.setblocking(True)
    connection.settimeout(5)
    for _ in range(2):
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: local\r\n\r\n")
        answered = _one_response(connection)
        assert answered.startswith(b"HTTP/1.1 200 "), answered[:200]
        assert answered.endswith(b'{"status":"ok"}'), answered[-200:]
    connection.close()


def _one_response(connection: socket.socket) -> bytes:
    """One whole response: its head, then as many body bytes as its content-length says (the
    server may send them in separate segments)."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += connection.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += connection.recv(65536)
    return head + b"\r\n\r\n" + body


def test_the_bounds_are_seconds_above_zero() -> None:
    protocol = bounded_requests({"REQUEST_HEAD_TIMEOUT": "4", "REQUEST_BODY_TIMEOUT": ""})
    assert (protocol.head_timeout_s, protocol.body_timeout_s) == (4.0, 30.0)
    for wrong in ("0", "-1", "soon", "nan", "inf"):
        with pytest.raises(ValueError, match="REQUEST_BODY_TIMEOUT"):
            bounded_requests({"REQUEST_BODY_TIMEOUT": wrong})


def test_the_local_server_refuses_to_start_with_a_bound_that_is_no_time(tmp_path: Path) -> None:
    with (
        pytest.raises(RuntimeError, match="REQUEST_HEAD_TIMEOUT is a number of seconds"),
        local_server(tmp_path, REQUEST_HEAD_TIMEOUT="later"),
    ):
        pass
