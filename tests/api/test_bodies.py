"""Bodies are bounded while they stream: a chunked body over the limit answers 413 `TooLarge`
as soon as the limit passes, without reading the rest; a Content-Length over it answers 413
before anything is read. Driven through httpx against the ASGI app, with a generator body
that counts what the server pulled from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from tests.conftest import Api

LIMIT = 1_048_576  # create_app's default: the one setting
CHUNK = 64 * 1024


@dataclass
class Stream:
    """A request body of `total` bytes that counts the bytes the server pulled."""

    total: int
    pulled: int = 0

    async def chunks(self) -> AsyncIterator[bytes]:
        # A JSON string, so a body under the limit is a valid agent's name.
        sent = 0
        opening, closing = b'{"name": "', b'"}'
        yield opening
        self.pulled += len(opening)
        sent += len(opening)
        while sent < self.total - len(closing):
            piece = b"a" * min(CHUNK, self.total - len(closing) - sent)
            self.pulled += len(piece)
            sent += len(piece)
            yield piece
        self.pulled += len(closing)
        yield closing


def _post(services: Any, token: str, stream: Stream, **headers: str) -> httpx.Response:
    from agent_memory.api.app import create_app

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(lambda: services))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.post(
                "/v1/agents",
                content=stream.chunks(),
                headers={
                    "Authorization": f"Bearer {token}",
                    "Content-Type": "application/json",
                    **headers,
                },
            )

    return asyncio.run(send())


def _too_large(answer: httpx.Response) -> None:
    assert answer.status_code == 413, answer.text
    assert answer.json() == {
        "error": {"_tag": "TooLarge", "message": f"the body is over {LIMIT} bytes", "path": []}
    }
    assert answer.headers["connection"] == "close"
    assert answer.headers["x-correlation-id"]


def test_a_chunked_body_of_200_mb_is_refused_after_reading_about_the_limit(
    api: Api, services: Any
) -> None:
    user = api.user(api.org())
    stream = Stream(total=200 * 1024 * 1024)
    answer = _post(services, user.token, stream)
    _too_large(answer)
    # What was read is bounded by the limit, not by the body: memory stays flat.
    assert LIMIT < stream.pulled <= LIMIT + CHUNK
    listed = api.client.get("/v1/agents/none", headers=user.headers)
    assert listed.status_code == 404  # the service still answers


def test_a_declared_length_over_the_limit_is_refused_before_reading(
    api: Api, services: Any
) -> None:
    user = api.user(api.org())
    stream = Stream(total=LIMIT + 1)
    answer = _post(services, user.token, stream, **{"Content-Length": str(LIMIT + 1)})
    _too_large(answer)
    assert stream.pulled == 0


def test_a_chunked_body_at_the_limit_is_read_and_served(api: Api, services: Any) -> None:
    """At the limit the body is whole: it reaches validation (a name over 200 characters)."""
    user = api.user(api.org())
    stream = Stream(total=LIMIT)
    answer = _post(services, user.token, stream)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["path"] == ["name"]
    assert stream.pulled == LIMIT
    over = Stream(total=LIMIT + 1)
    _too_large(_post(services, user.token, over))


def test_a_small_chunked_body_creates_its_agent(api: Api, services: Any) -> None:
    user = api.user(api.org())
    stream = Stream(total=len(b'{"name": "') + 40 + len(b'"}'))
    answer = _post(services, user.token, stream)
    assert answer.status_code == 201, answer.text
    agent = answer.json()["agent"]
    assert agent["name"] == "a" * 40
    fetched = api.client.get(f"/v1/agents/{agent['id']}", headers=user.headers)
    assert fetched.json()["agent"]["name"] == "a" * 40


def test_the_limit_is_the_apps_one_setting(services: Any) -> None:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app

    with TestClient(create_app(lambda: services, max_body_bytes=100)) as client:
        answer = client.post("/v1/agents", content=b"x" * 101)
        assert answer.status_code == 413
        assert answer.json()["error"]["message"] == "the body is over 100 bytes"
        # Under the limit the request goes on (to authentication).
        assert client.post("/v1/agents", content=b"{}").status_code == 401
