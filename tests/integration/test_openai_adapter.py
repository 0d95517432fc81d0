"""`openai/<model>` against a real local HTTP server speaking Chat Completions."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.adapters.http_models import OpenAICompatibleModel
from agent_memory.domain.proposals import CHANGES_SCHEMA, parse_changes
from agent_memory.domain.tasks.memory_changes import render_evidence
from agent_memory.ports import ModelFailure, Usage
from tests.support.http_fake import FakeServer, Reply, fake_server
from tests.support.model_tasks import BUDGET_ANSWER, budget_request

API_KEY = "sk-test-0123456789abcdefghij"
ANSWER = json.dumps(BUDGET_ANSWER)


def _completion(content: Any, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
    }


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with fake_server("/v1/") as state:
        yield state


def _model(
    server: FakeServer, api_key: str = API_KEY, timeout_s: float = 5
) -> OpenAICompatibleModel:
    return OpenAICompatibleModel(
        "gpt-4o-mini", base_url=server.url, api_key=api_key, timeout_s=timeout_s
    )


def test_happy_path_sends_the_protocol_and_records_usage(server: FakeServer) -> None:
    server.replies.append(Reply(200, json.dumps(_completion(ANSWER)).encode()))
    request = budget_request()
    reply = _model(server).propose(request)

    assert reply.text == ANSWER
    assert parse_changes(reply.text)[0].key == "budget"
    assert reply.model == "openai/gpt-4o-mini"
    assert reply.usage == Usage(input_tokens=321, output_tokens=45)
    assert reply.latency_ms > 0

    (sent,) = server.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {API_KEY}"
    assert sent["headers"]["content-type"] == "application/json"
    body = sent["json"]
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0
    assert body["messages"] == [
        {"role": "system", "content": request.system},
        {"role": "user", "content": render_evidence(request.input)},
    ]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "memory_changes", "strict": True, "schema": CHANGES_SCHEMA},
    }


def test_a_local_server_needs_no_key(server: FakeServer) -> None:
    server.replies.append(Reply(200, json.dumps(_completion('{"changes": []}')).encode()))
    _model(server, api_key="").propose(budget_request())
    assert "authorization" not in server.requests[0]["headers"]


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (429, "throttled", True),
        (500, "unavailable", True),
        (503, "unavailable", True),
        (408, "timeout", True),
        (400, "config", False),
        (401, "config", False),
        (403, "config", False),
        (404, "config", False),
    ],
)
def test_http_errors_are_mapped(
    server: FakeServer, status: int, kind: str, retryable: bool
) -> None:
    error = {"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "x"}}
    server.replies.append(Reply(status, json.dumps(error).encode()))
    with pytest.raises(ModelFailure) as raised:
        _model(server).propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == (kind, retryable)
    assert str(status) in str(raised.value)
    assert API_KEY not in str(raised.value)
    assert "Incorrect API key provided: ***" in str(raised.value)


@pytest.mark.parametrize(
    "body",
    [
        b"<html>Bad Gateway</html>",
        b"[]",
        b'{"choices": []}',
        b'{"choices": [{"message": "text"}]}',
        json.dumps(_completion(None)).encode(),
        json.dumps(_completion("")).encode(),
        json.dumps(_completion(ANSWER[:40], finish="length")).encode(),
    ],
)
def test_a_body_that_is_not_the_protocol_is_invalid_output(server: FakeServer, body: bytes) -> None:
    server.replies.append(Reply(200, body))
    with pytest.raises(ModelFailure) as raised:
        _model(server).propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == ("invalid_output", False)


def test_a_refusal_is_invalid_output_with_the_reason(server: FakeServer) -> None:
    completion = _completion(None)
    completion["choices"][0]["message"]["refusal"] = "I cannot help with that."
    server.replies.append(Reply(200, json.dumps(completion).encode()))
    with pytest.raises(ModelFailure, match="refused: I cannot help") as raised:
        _model(server).propose(budget_request())
    assert raised.value.kind == "invalid_output"


def test_a_slow_server_is_a_retryable_timeout(server: FakeServer) -> None:
    server.replies.append(Reply(200, json.dumps(_completion(ANSWER)).encode(), delay_s=1.0))
    started = time.monotonic()
    with pytest.raises(ModelFailure) as raised:
        _model(server, timeout_s=0.2).propose(budget_request())
    assert time.monotonic() - started < 0.9
    assert (raised.value.kind, raised.value.retryable) == ("timeout", True)


def test_a_refused_connection_is_retryable_unavailable() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAICompatibleModel("m", base_url=f"http://127.0.0.1:{port}/v1", timeout_s=2)
    with pytest.raises(ModelFailure) as raised:
        model.propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == ("unavailable", True)


def test_a_non_http_base_url_is_a_configuration_error() -> None:
    model = OpenAICompatibleModel("m", base_url="file:///etc", api_key=API_KEY)
    with pytest.raises(ModelFailure) as raised:
        model.propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == ("config", False)


def test_the_key_is_not_in_the_model_repr() -> None:
    model = OpenAICompatibleModel("m", api_key=API_KEY)
    assert API_KEY not in repr(model)
    assert API_KEY not in repr(vars(model).get("name"))
