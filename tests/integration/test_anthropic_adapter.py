"""`anthropic/<model>` against a real local HTTP server speaking the Messages API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.adapters.http_models import AnthropicModel
from agent_memory.domain.proposals import CHANGES_SCHEMA, parse_changes
from agent_memory.domain.tasks.memory_changes import render_evidence
from agent_memory.domain.tasks.observation import TITLE, TitleInput
from agent_memory.ports import ModelFailure, Usage
from tests.support.http_fake import FakeServer, Reply, fake_server
from tests.support.model_tasks import BUDGET_ANSWER, budget_request

API_KEY = "sk-ant-test-0123456789abcdefghij"
ANSWER = BUDGET_ANSWER


def message(content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 512, "output_tokens": 38},
    }


def tool_use(tool_input: Any, name: str = "memory_changes") -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_01", "name": name, "input": tool_input}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with fake_server() as state:
        yield state


def _model(server: FakeServer, api_key: str = API_KEY) -> AnthropicModel:
    return AnthropicModel("claude-haiku-4-5", api_key=api_key, base_url=server.url)


def test_happy_path_forces_the_tasks_tool_and_returns_its_input(server: FakeServer) -> None:
    server.replies.append(
        Reply.json(message([{"type": "text", "text": "Sure."}, tool_use(ANSWER)]))
    )
    request = budget_request()
    reply = _model(server).propose(request)

    assert json.loads(reply.text) == ANSWER
    assert parse_changes(reply.text)[0].key == "budget"
    assert reply.model == "anthropic/claude-haiku-4-5"
    assert reply.usage == Usage(input_tokens=512, output_tokens=38)
    (sent,) = server.requests
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == API_KEY
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert sent["json"] == {
        "model": "claude-haiku-4-5",
        "max_tokens": 4096,
        "temperature": 0,
        "system": request.system,
        "messages": [{"role": "user", "content": render_evidence(request.input)}],
        "tools": [
            {
                "name": "memory_changes",
                "description": (
                    "Record the proposed changes to the memory (an empty list when none)."
                ),
                "input_schema": CHANGES_SCHEMA,
            }
        ],
        "tool_choice": {"type": "tool", "name": "memory_changes"},
    }


def test_any_task_is_asked_by_its_own_name_and_schema(server: FakeServer) -> None:
    server.replies.append(Reply.json(message([tool_use({"title": "Lisbon in May"}, "title")])))
    title_input = TitleInput("Plan a trip to Lisbon in May")
    reply = _model(server).propose(TITLE.request(title_input, deadline_s=15))
    assert TITLE.parse(reply.text, title_input).title == "Lisbon in May"
    sent = server.requests[0]["json"]
    assert sent["tool_choice"] == {"type": "tool", "name": "title"}
    assert sent["tools"][0]["input_schema"] == TITLE.schema(title_input)
    assert sent["max_tokens"] == TITLE.max_output_tokens


@pytest.mark.parametrize(
    ("status", "error_type", "kind", "retryable"),
    [
        (429, "rate_limit_error", "throttled", True),
        (529, "overloaded_error", "unavailable", True),
        (500, "api_error", "unavailable", True),
        (400, "invalid_request_error", "config", False),
        (401, "authentication_error", "config", False),
        (403, "permission_error", "config", False),
        (404, "not_found_error", "config", False),
        (413, "request_too_large", "config", False),
    ],
)
def test_api_errors_are_mapped(
    server: FakeServer, status: int, error_type: str, kind: str, retryable: bool
) -> None:
    body = {"type": "error", "error": {"type": error_type, "message": f"bad key {API_KEY}"}}
    server.replies.append(Reply.json(body, status))
    with pytest.raises(ModelFailure) as raised:
        _model(server).propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == (kind, retryable)
    assert str(status) in str(raised.value)
    assert API_KEY not in str(raised.value)


@pytest.mark.parametrize(
    "body",
    [
        message([{"type": "text", "text": "I would remember the budget."}], stop="end_turn"),
        message([tool_use(ANSWER, name="some_other_tool")]),
        message([tool_use({"changes": []})], stop="max_tokens"),
        message([tool_use("not an object")]),
        message([], stop="refusal"),
        ["not", "a", "message"],
    ],
)
def test_an_answer_without_the_tool_input_is_invalid_output(server: FakeServer, body: Any) -> None:
    server.replies.append(Reply.json(body))
    with pytest.raises(ModelFailure) as raised:
        _model(server).propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == ("invalid_output", False)


def test_a_proxy_without_a_key_gets_no_key_header(server: FakeServer) -> None:
    server.replies.append(Reply.json(message([tool_use({"changes": []})])))
    _model(server, api_key="").propose(budget_request())
    assert "x-api-key" not in server.requests[0]["headers"]


def test_the_key_is_not_in_the_model_repr() -> None:
    model = AnthropicModel("claude-haiku-4-5", api_key=API_KEY)
    assert API_KEY not in repr(model)
