"""The model port's contract: every provider adapter serves any task the same way.

For a request of a task it never heard of (`contract_echo`, defined here): the task's name
and schema are what the provider is asked for, a valid answer comes back as the task's JSON
text (with the model's name, usage and latency), each way the provider can fail is one
`ModelFailure` kind with the same `retryable`, and an answer later than the request's
deadline is a `timeout`.

Each adapter runs over a stubbed transport (a local HTTP server, botocore's Stubber). To run
the suite against another set of adapters, add one `Harness` to `HARNESSES`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pytest
from pydantic import BaseModel, ConfigDict

from agent_memory.domain.tasks.base import ModelTask
from agent_memory.ports import LearningModel, ModelErrorKind, ModelFailure
from tests.support.http_fake import FakeServer, Reply, fake_server

RETRYABLE: dict[str, bool] = {
    "timeout": True,
    "throttled": True,
    "unavailable": True,
    "invalid_output": False,
    "config": False,
}
ANSWER = {"answer": "forty-two", "items": ["a", "b"]}


class Echo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str
    items: list[str]


@dataclass(frozen=True)
class EchoInput:
    """The answer the local model should give (and how long it takes), so that every
    provider is asked the same request."""

    answer: dict[str, Any]
    delay_s: float = 0.0


class EchoTask(ModelTask[EchoInput, Echo]):
    name = "contract_echo"
    output_model = Echo
    max_output_tokens = 256
    intro = "Echo what you are given."
    answer_format = "the JSON you are given."

    def user(self, task_input: EchoInput) -> str:
        return json.dumps(task_input.answer)

    def local_answer(self, task_input: EchoInput) -> Echo:
        time.sleep(task_input.delay_s)
        return Echo.model_validate(task_input.answer)


ECHO = EchoTask()


class Harness(Protocol):
    """One adapter over its stubbed transport."""

    name: str
    # The failure kinds its transport can produce (local/rules has no transport).
    failures: tuple[ModelErrorKind, ...]

    def model(self) -> LearningModel: ...

    def answer(self, data: dict[str, Any], delay_s: float = 0.0) -> None:
        """The next call answers `data` as the task's structured output."""

    def fail(self, kind: ModelErrorKind) -> None:
        """The next call fails the provider's way that maps to `kind`."""

    def asked(self) -> tuple[str, dict[str, Any]]:
        """The task name and schema the last call asked the provider for."""


class OpenAIHarness:
    name = "openai/contract"
    failures: tuple[ModelErrorKind, ...] = (
        "timeout",
        "throttled",
        "unavailable",
        "invalid_output",
        "config",
    )

    def __init__(self, server: FakeServer) -> None:
        self.server = server

    def model(self) -> LearningModel:
        from agent_memory.adapters.http_models import OpenAICompatibleModel

        return OpenAICompatibleModel("contract", base_url=self.server.url, api_key="sk-x")

    def answer(self, data: dict[str, Any], delay_s: float = 0.0) -> None:
        self.server.replies.append(Reply.json(_completion(json.dumps(data)), delay_s=delay_s))

    def fail(self, kind: ModelErrorKind) -> None:
        statuses = {"timeout": 408, "throttled": 429, "unavailable": 503, "config": 401}
        if kind == "invalid_output":
            self.server.replies.append(Reply.json(_completion(None)))
        else:
            self.server.replies.append(Reply.json({"error": {"message": kind}}, statuses[kind]))

    def asked(self) -> tuple[str, dict[str, Any]]:
        schema = self.server.requests[-1]["json"]["response_format"]["json_schema"]
        return schema["name"], schema["schema"]


class AnthropicHarness(OpenAIHarness):
    name = "anthropic/contract"

    def model(self) -> LearningModel:
        from agent_memory.adapters.http_models import AnthropicModel

        return AnthropicModel("contract", api_key="sk-ant-x", base_url=self.server.url)

    def answer(self, data: dict[str, Any], delay_s: float = 0.0) -> None:
        block = {"type": "tool_use", "id": "toolu_1", "name": ECHO.name, "input": data}
        self.server.replies.append(Reply.json(_message([block]), delay_s=delay_s))

    def fail(self, kind: ModelErrorKind) -> None:
        statuses = {"timeout": 408, "throttled": 429, "unavailable": 529, "config": 401}
        if kind == "invalid_output":
            text = {"type": "text", "text": "no tool call"}
            self.server.replies.append(Reply.json(_message([text], stop="end_turn")))
        else:
            error = {"type": "error", "error": {"type": kind, "message": kind}}
            self.server.replies.append(Reply.json(error, statuses[kind]))

    def asked(self) -> tuple[str, dict[str, Any]]:
        body = self.server.requests[-1]["json"]
        assert body["tool_choice"] == {"type": "tool", "name": body["tools"][0]["name"]}
        return body["tools"][0]["name"], body["tools"][0]["input_schema"]


class _SlowClient:
    """A bedrock-runtime client whose next Converse takes `delay_s` longer."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.delay_s = 0.0
        self.params: list[dict[str, Any]] = []

    def converse(self, **params: Any) -> Any:
        self.params.append(params)
        time.sleep(self.delay_s)
        self.delay_s = 0.0
        return self.client.converse(**params)


class BedrockHarness:
    name = "bedrock/contract"
    failures: tuple[ModelErrorKind, ...] = (
        "timeout",
        "throttled",
        "unavailable",
        "invalid_output",
        "config",
    )

    def __init__(self, client: Any, stubber: Any) -> None:
        self.client = _SlowClient(client)
        self.stubber = stubber

    def model(self) -> LearningModel:
        from agent_memory.adapters.bedrock import BedrockModel

        return BedrockModel("contract", self.client)

    def answer(self, data: dict[str, Any], delay_s: float = 0.0) -> None:
        self.client.delay_s = delay_s
        use = {"toolUse": {"toolUseId": "t-1", "name": ECHO.name, "input": data}}
        self.stubber.add_response("converse", _converse([use]))

    def fail(self, kind: ModelErrorKind) -> None:
        codes = {
            "timeout": ("ModelTimeoutException", 408),
            "throttled": ("ThrottlingException", 429),
            "unavailable": ("ServiceUnavailableException", 503),
            "config": ("AccessDeniedException", 403),
        }
        if kind == "invalid_output":
            self.stubber.add_response("converse", _converse([{"text": "no tool"}], "end_turn"))
            return
        code, status = codes[kind]
        self.stubber.add_client_error(
            "converse", service_error_code=code, service_message=kind, http_status_code=status
        )

    def asked(self) -> tuple[str, dict[str, Any]]:
        tools = self.client.params[-1]["toolConfig"]
        spec = tools["tools"][0]["toolSpec"]
        assert tools["toolChoice"] == {"tool": {"name": spec["name"]}}
        return spec["name"], spec["inputSchema"]["json"]


class LocalHarness:
    """`local/rules`: the answer is the task's local answer (carried by the request)."""

    name = "local/rules"
    failures: tuple[ModelErrorKind, ...] = ()

    def model(self) -> LearningModel:
        from agent_memory.adapters.rules_model import RulesModel

        return RulesModel()

    def answer(self, data: dict[str, Any], delay_s: float = 0.0) -> None:
        pass

    def fail(self, kind: ModelErrorKind) -> None:
        raise AssertionError("local/rules has no transport to fail")

    def asked(self) -> tuple[str, dict[str, Any]]:
        return ECHO.name, ECHO.schema(EchoInput(ANSWER))


def _completion(content: str | None) -> dict[str, Any]:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}}
    usage = {"prompt_tokens": 10, "completion_tokens": 5}
    return {"choices": [choice | {"finish_reason": "stop"}], "usage": usage}


def _message(content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return {"type": "message", "content": content, "stop_reason": stop, "usage": usage}


def _converse(content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 1},
    }


def _http(kind: type[OpenAIHarness]) -> Callable[[pytest.FixtureRequest], Iterator[Harness]]:
    def build(request: pytest.FixtureRequest) -> Iterator[Harness]:
        with fake_server("/v1/" if kind is OpenAIHarness else "") as server:
            yield kind(server)

    return build


def _bedrock(request: pytest.FixtureRequest) -> Iterator[Harness]:
    import boto3
    from botocore.config import Config
    from botocore.stub import Stubber

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}),
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stubber:
        yield BedrockHarness(client, stubber)


def _local(request: pytest.FixtureRequest) -> Iterator[Harness]:
    yield LocalHarness()


HARNESSES: dict[str, Callable[[pytest.FixtureRequest], Iterator[Harness]]] = {
    "openai": _http(OpenAIHarness),
    "anthropic": _http(AnthropicHarness),
    "bedrock": _bedrock,
    "local": _local,
}


@pytest.fixture(params=list(HARNESSES))
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    yield from HARNESSES[request.param](request)


def test_a_valid_answer_is_the_tasks_json_text(harness: Harness) -> None:
    task_input = EchoInput(ANSWER)
    harness.answer(ANSWER)
    reply = harness.model().propose(ECHO.request(task_input, deadline_s=5))

    assert ECHO.parse(reply.text, task_input) == Echo.model_validate(ANSWER)
    assert reply.model == harness.model().name
    assert reply.latency_ms >= 0
    assert reply.usage.input_tokens >= 0


def test_the_task_name_and_schema_are_what_the_provider_is_asked(harness: Harness) -> None:
    harness.answer(ANSWER)
    harness.model().propose(ECHO.request(EchoInput(ANSWER), deadline_s=5))
    name, schema = harness.asked()
    assert name == "contract_echo"
    assert schema == ECHO.schema(EchoInput(ANSWER))


@pytest.mark.parametrize("kind", list(RETRYABLE))
def test_each_failure_is_one_kind(harness: Harness, kind: ModelErrorKind) -> None:
    if kind not in harness.failures:
        pytest.skip(f"{harness.name} cannot fail with {kind}")
    harness.fail(kind)
    with pytest.raises(ModelFailure) as raised:
        harness.model().propose(ECHO.request(EchoInput(ANSWER), deadline_s=5))
    assert (raised.value.kind, raised.value.retryable) == (kind, RETRYABLE[kind])


def test_an_answer_past_the_deadline_is_a_retryable_timeout(harness: Harness) -> None:
    harness.answer(ANSWER, delay_s=0.6)
    started = time.monotonic()
    with pytest.raises(ModelFailure) as raised:
        harness.model().propose(ECHO.request(EchoInput(ANSWER, delay_s=0.6), deadline_s=0.2))
    assert (raised.value.kind, raised.value.retryable) == ("timeout", True)
    # HTTP adapters give up at the deadline; the others fail as soon as the answer is late.
    assert time.monotonic() - started < 1.5
