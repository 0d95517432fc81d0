"""`bedrock/<modelId>` over a real bedrock-runtime client with botocore's Stubber (moto has no
Converse; the Stubber checks every request against the real service model)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber

from agent_memory.adapters.bedrock import BedrockClients, BedrockModel, client_config
from agent_memory.domain.proposals import CHANGES_SCHEMA, parse_changes
from agent_memory.domain.tasks.memory_changes import render_evidence
from agent_memory.ports import ModelFailure, Usage
from tests.support.model_tasks import BUDGET_ANSWER, budget_request

# The forced tool is named after the task (the same name OpenAI's json_schema gets).
TOOL_NAME = "memory_changes"

MODEL_ID = "anthropic.claude-3-5-haiku-20241022-v1:0"
ANSWER = BUDGET_ANSWER


@pytest.fixture
def client() -> Any:
    config = Config(retries={"max_attempts": 1})
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        config=config,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def stubber(client: Any) -> Iterator[Stubber]:
    with Stubber(client) as stub:
        yield stub
        stub.assert_no_pending_responses()


def _reply(content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 812, "outputTokens": 64, "totalTokens": 876},
        "metrics": {"latencyMs": 420},
    }


def _tool_use(tool_input: Any, name: str = TOOL_NAME) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": "tooluse_1", "name": name, "input": tool_input}}


def test_happy_path_forces_the_tool_and_returns_its_input(client: Any, stubber: Stubber) -> None:
    request = budget_request()
    stubber.add_response(
        "converse",
        _reply([_tool_use(ANSWER)]),
        expected_params={
            "modelId": MODEL_ID,
            "system": [{"text": request.system}],
            "messages": [{"role": "user", "content": [{"text": render_evidence(request.input)}]}],
            "inferenceConfig": {"maxTokens": 4096, "temperature": 0.0},
            "toolConfig": {
                "tools": [
                    {
                        "toolSpec": {
                            "name": TOOL_NAME,
                            "description": (
                                "Record the proposed changes to the memory "
                                "(an empty list when none)."
                            ),
                            "inputSchema": {"json": CHANGES_SCHEMA},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": TOOL_NAME}},
            },
        },
    )
    reply = BedrockModel(MODEL_ID, client).propose(request)
    assert json.loads(reply.text) == ANSWER
    assert parse_changes(reply.text)[0].key == "budget"
    assert reply.model == f"bedrock/{MODEL_ID}"
    assert reply.usage == Usage(input_tokens=812, output_tokens=64)
    assert reply.latency_ms >= 0


def test_a_text_answer_after_the_tool_call_is_ignored(client: Any, stubber: Stubber) -> None:
    stubber.add_response("converse", _reply([{"text": "Here you go."}, _tool_use(ANSWER)]))
    reply = BedrockModel(MODEL_ID, client).propose(budget_request())
    assert json.loads(reply.text) == ANSWER


@pytest.mark.parametrize(
    ("code", "status", "kind", "retryable"),
    [
        ("ThrottlingException", 429, "throttled", True),
        ("ServiceQuotaExceededException", 400, "throttled", True),
        ("ModelTimeoutException", 408, "timeout", True),
        ("ServiceUnavailableException", 503, "unavailable", True),
        ("InternalServerException", 500, "unavailable", True),
        ("ModelNotReadyException", 429, "unavailable", True),
        ("ModelErrorException", 424, "unavailable", True),
        ("ValidationException", 400, "config", False),
        ("AccessDeniedException", 403, "config", False),
        ("ResourceNotFoundException", 404, "config", False),
        ("SomethingNewException", 502, "unavailable", True),
        ("SomethingElseException", 400, "config", False),
    ],
)
def test_errors_are_mapped_to_failure_kinds(
    client: Any, stubber: Stubber, code: str, status: int, kind: str, retryable: bool
) -> None:
    stubber.add_client_error(
        "converse", service_error_code=code, service_message="nope", http_status_code=status
    )
    with pytest.raises(ModelFailure) as raised:
        BedrockModel(MODEL_ID, client).propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == (kind, retryable)
    assert code in str(raised.value)


@pytest.mark.parametrize(
    "content",
    [
        [{"text": "I would remember the budget."}],
        [_tool_use(ANSWER, name="some_other_tool")],
        [],
    ],
)
def test_an_answer_without_the_tool_call_is_invalid_output(
    client: Any, stubber: Stubber, content: list[dict[str, Any]]
) -> None:
    stubber.add_response("converse", _reply(content, stop="end_turn"))
    with pytest.raises(ModelFailure) as raised:
        BedrockModel(MODEL_ID, client).propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == ("invalid_output", False)
    assert TOOL_NAME in str(raised.value)


def test_a_cut_off_answer_is_invalid_output(client: Any, stubber: Stubber) -> None:
    stubber.add_response("converse", _reply([_tool_use({"changes": []})], stop="max_tokens"))
    with pytest.raises(ModelFailure) as raised:
        BedrockModel(MODEL_ID, client).propose(budget_request())
    assert raised.value.kind == "invalid_output"


def test_a_read_timeout_is_a_retryable_timeout(client: Any) -> None:
    def time_out(**_: Any) -> None:
        raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    client.meta.events.register("before-send.bedrock-runtime.Converse", time_out)
    with pytest.raises(ModelFailure) as raised:
        BedrockModel(MODEL_ID, client).propose(budget_request())
    assert (raised.value.kind, raised.value.retryable) == ("timeout", True)


def test_the_client_is_built_once_on_first_use(client: Any, stubber: Stubber) -> None:
    built: list[float] = []

    def factory(read_timeout_s: float) -> Any:
        built.append(read_timeout_s)
        return client

    model = BedrockModel(MODEL_ID, clients=BedrockClients(factory))
    assert built == []
    stubber.add_response("converse", _reply([_tool_use(ANSWER)]))
    stubber.add_response("converse", _reply([_tool_use(ANSWER)]))
    model.propose(budget_request())
    model.propose(budget_request())
    # One client for the step's deadline, built on the first call.
    assert built == [100.0]


def test_the_default_client_config_stays_under_the_step_timeout() -> None:
    config = client_config()
    assert config.read_timeout < 120
    assert config.retries["max_attempts"] == 2
    # A request-path deadline is the read timeout, with no SDK retry to double it.
    short = client_config(15)
    assert (short.read_timeout, short.retries["max_attempts"]) == (15, 1)
