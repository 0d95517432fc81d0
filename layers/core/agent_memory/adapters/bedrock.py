"""`bedrock/<modelId>`: Amazon Bedrock's Converse API with one forced tool.

botocore has no per-call timeout, so a client is built once per deadline (rounded up to the
second) and its read timeout is the deadline.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from typing import Any

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    NoCredentialsError,
    NoRegionError,
    ReadTimeoutError,
)

from agent_memory.adapters.deadline import within_deadline
from agent_memory.adapters.http_models import usage_of
from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.ports.models import ModelErrorKind, ModelFailure, ModelReply

# Below the workflow step's TimeoutSeconds (120): the adapter fails first, with a kind.
READ_TIMEOUT_S = 100
# Short deadlines (the request path) get no SDK retry: one retry would double the wait.
RETRY_FROM_S = 60

ClientFactory = Callable[[float], Any]

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


def client_config(read_timeout_s: float = READ_TIMEOUT_S) -> Any:
    """One SDK retry for long deadlines only (the workflow retries too)."""
    from botocore.config import Config

    attempts = 2 if read_timeout_s >= RETRY_FROM_S else 1
    return Config(
        read_timeout=read_timeout_s,
        connect_timeout=min(5.0, read_timeout_s),
        retries={"mode": "standard", "max_attempts": attempts},
    )


def default_client(region: str, read_timeout_s: float = READ_TIMEOUT_S) -> Any:
    import boto3

    return boto3.client("bedrock-runtime", region_name=region, config=client_config(read_timeout_s))


class BedrockClients:
    """Bedrock Runtime clients, one per deadline, shared by every Bedrock model of a catalog."""

    def __init__(self, factory: ClientFactory) -> None:
        self._factory = factory
        self._clients: dict[int, Any] = {}
        self._lock = threading.Lock()

    def for_deadline(self, deadline_s: float) -> Any:
        seconds = max(1, math.ceil(deadline_s))
        with self._lock:
            if seconds not in self._clients:
                self._clients[seconds] = self._factory(float(seconds))
            return self._clients[seconds]


class BedrockModel:
    """`ports.LearningModel` over Bedrock Converse: a catalog's `clients`, or one `client`
    that serves every deadline (tests)."""

    def __init__(
        self, model_id: str, client: Any = None, *, clients: BedrockClients | None = None
    ) -> None:
        self.model_id = model_id
        self.name = f"bedrock/{model_id}"
        self._clients = clients or BedrockClients(lambda _seconds: client)

    def runtime(self, deadline_s: float = READ_TIMEOUT_S) -> Any:
        return self._clients.for_deadline(deadline_s)

    def propose(self, request: ModelRequest) -> ModelReply:
        response, latency_ms = within_deadline(
            lambda: self._converse(request), request.deadline_s, "Bedrock"
        )
        text = _tool_input(response, request.task)
        usage = usage_of(response.get("usage"), "inputTokens", "outputTokens")
        return ModelReply(text=text, model=self.name, usage=usage, latency_ms=latency_ms)

    def _converse(self, request: ModelRequest) -> Any:
        try:
            return self.runtime(request.deadline_s).converse(**self.converse_request(request))
        except ClientError as error:
            raise client_failure(error) from None
        except (ReadTimeoutError, ConnectTimeoutError) as error:
            raise ModelFailure(
                "timeout", f"Bedrock did not answer: {error}", retryable=True
            ) from None
        except (NoCredentialsError, NoRegionError) as error:
            raise ModelFailure(
                "config", f"Bedrock is not configured: {error}", retryable=False
            ) from None
        except BotoCoreError as error:  # a refused or dropped connection among them
            raise ModelFailure(
                "unavailable", f"Bedrock call failed: {error}", retryable=True
            ) from None

    def converse_request(self, request: ModelRequest) -> dict[str, Any]:
        """The Converse parameters for `request` (public for tests and tracing)."""
        tool = {
            "toolSpec": {
                "name": request.task,
                "description": request.description,
                "inputSchema": {"json": request.schema},
            }
        }
        return {
            "modelId": self.model_id,
            "system": [{"text": request.system}],
            "messages": [{"role": "user", "content": [{"text": request.user}]}],
            "inferenceConfig": {"maxTokens": request.max_output_tokens, "temperature": 0.0},
            "toolConfig": {"tools": [tool], "toolChoice": {"tool": {"name": request.task}}},
        }


def client_failure(error: Any) -> ModelFailure:
    """What a Bedrock Runtime error means, for a model or an embedder."""
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


def _tool_input(response: Any, tool: str) -> str:
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
        if isinstance(use, dict) and use.get("name") == tool:
            tool_input = use.get("input")
            if isinstance(tool_input, str):
                return tool_input  # some models send the input as JSON text
            return json.dumps(tool_input)
    raise ModelFailure(
        "invalid_output",
        f"the model answered without calling {tool} (stopReason={stop})",
        retryable=False,
    )
