"""`bedrock/<modelId>`: Amazon Bedrock's Converse API with one forced tool.

The model is made to call `record_memory_changes`, whose input schema is API.md's answer,
so the answer arrives as structured tool input; it is passed on as JSON text and the domain
parses it like any other model's answer. AWS errors become `ModelFailure`s.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ReadTimeoutError,
)

from agent_memory.domain.learning_prompt import render_evidence
from agent_memory.domain.proposals import CHANGES_SCHEMA
from agent_memory.ports import LearningRequest, ModelErrorKind, ModelFailure, ModelReply, Usage

TOOL_NAME = "record_memory_changes"
MAX_OUTPUT_TOKENS = 4096
# Below the workflow step's TimeoutSeconds (120): the adapter fails first, with a kind.
READ_TIMEOUT_S = 100

_ERRORS: dict[str, tuple[ModelErrorKind, bool]] = {
    "ThrottlingException": ("throttled", True),
    "ServiceQuotaExceededException": ("throttled", True),
    "TooManyRequestsException": ("throttled", True),
    "ModelTimeoutException": ("timeout", True),
    "ServiceUnavailableException": ("unavailable", True),
    "InternalServerException": ("unavailable", True),
    "ModelNotReadyException": ("unavailable", True),
    "ModelErrorException": ("unavailable", True),
    "ValidationException": ("config", False),
    "AccessDeniedException": ("config", False),
    "ResourceNotFoundException": ("config", False),
    "UnrecognizedClientException": ("config", False),
    "ExpiredTokenException": ("config", False),
}

_TOOL_SPEC = {
    "toolSpec": {
        "name": TOOL_NAME,
        "description": "Record the proposed changes to the memory (an empty list when none).",
        "inputSchema": {"json": CHANGES_SCHEMA},
    }
}


def client_config() -> Any:
    """The botocore Config for Bedrock Runtime: a read timeout under the step's 120 s and
    one retry (the workflow retries too)."""
    from botocore.config import Config

    return Config(
        read_timeout=READ_TIMEOUT_S,
        connect_timeout=5,
        retries={"mode": "standard", "max_attempts": 2},
    )


def default_client(region: str) -> Any:
    """A `bedrock-runtime` client for `region` with `client_config()`."""
    import boto3

    return boto3.client("bedrock-runtime", region_name=region, config=client_config())


class BedrockModel:
    """`ports.LearningModel` over Bedrock Converse. `model_id` is the part after `bedrock/`.

    Give `client`, or `client_factory` (called once, on first use), or `region` for a
    default client built on first use.
    """

    def __init__(
        self,
        model_id: str,
        client: Any = None,
        *,
        client_factory: Callable[[], Any] | None = None,
        region: str = "us-east-1",
    ) -> None:
        self.model_id = model_id
        self.name = f"bedrock/{model_id}"
        self._client = client
        self._factory = client_factory or (lambda: default_client(region))
        self._lock = threading.Lock()

    def _runtime(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._factory()
        return self._client

    def propose(self, request: LearningRequest) -> ModelReply:
        """Ask the model for changes; raise `ModelFailure` when it cannot answer."""
        started = time.monotonic()
        try:
            response = self._runtime().converse(**self.converse_request(request))
        except ClientError as error:
            raise _client_failure(error) from None
        except (ReadTimeoutError, ConnectTimeoutError) as error:
            raise ModelFailure(
                "timeout", f"Bedrock did not answer: {error}", retryable=True
            ) from None
        except (NoCredentialsError, NoRegionError) as error:
            raise ModelFailure(
                "config", f"Bedrock is not configured: {error}", retryable=False
            ) from None
        except (EndpointConnectionError, ConnectionClosedError, BotoCoreError) as error:
            raise ModelFailure(
                "unavailable", f"Bedrock call failed: {error}", retryable=True
            ) from None
        latency_ms = (time.monotonic() - started) * 1000
        text = _tool_input(response)
        usage = response.get("usage") or {}
        return ModelReply(
            text=text,
            model=self.name,
            usage=Usage(
                input_tokens=int(usage.get("inputTokens", 0)),
                output_tokens=int(usage.get("outputTokens", 0)),
            ),
            latency_ms=latency_ms,
        )

    def converse_request(self, request: LearningRequest) -> dict[str, Any]:
        """The Converse parameters for `request` (public for tests and tracing)."""
        return {
            "modelId": self.model_id,
            "system": [{"text": request.instructions}],
            "messages": [{"role": "user", "content": [{"text": render_evidence(request)}]}],
            "inferenceConfig": {"maxTokens": MAX_OUTPUT_TOKENS, "temperature": 0.0},
            "toolConfig": {"tools": [_TOOL_SPEC], "toolChoice": {"tool": {"name": TOOL_NAME}}},
        }


def _client_failure(error: Any) -> ModelFailure:
    info = error.response.get("Error", {}) if isinstance(error.response, dict) else {}
    code = str(info.get("Code", ""))
    message = f"Bedrock answered {code}: {info.get('Message', '')}"
    if code in _ERRORS:
        kind, retryable = _ERRORS[code]
        return ModelFailure(kind, message, retryable=retryable)
    status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    if isinstance(status, int) and status >= 500:
        return ModelFailure("unavailable", message, retryable=True)
    return ModelFailure("config", message, retryable=False)


def _tool_input(response: Any) -> str:
    """The JSON input of the `record_memory_changes` call in a Converse answer."""
    stop = response.get("stopReason") if isinstance(response, dict) else None
    if stop == "max_tokens":
        raise ModelFailure("invalid_output", "the answer was cut off (max_tokens)", retryable=False)
    try:
        content = response["output"]["message"]["content"]
    except (KeyError, TypeError):
        raise ModelFailure(
            "invalid_output", f"no message in the answer (stopReason={stop})", retryable=False
        ) from None
    for block in content if isinstance(content, list) else []:
        use = block.get("toolUse") if isinstance(block, dict) else None
        if isinstance(use, dict) and use.get("name") == TOOL_NAME:
            tool_input = use.get("input")
            if isinstance(tool_input, str):
                return tool_input  # some models send the input as JSON text
            return json.dumps(tool_input)
    raise ModelFailure(
        "invalid_output",
        f"the model answered without calling {TOOL_NAME} (stopReason={stop})",
        retryable=False,
    )
