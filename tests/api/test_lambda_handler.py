"""The deployed entry point: API Gateway HTTP API events through Mangum to the app."""

from __future__ import annotations

import importlib
import io
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from agent_memory.bootstrap import build_services
from agent_memory.domain.errors import Unavailable
from tests.conftest import ADMIN_TOKEN


def _event(method: str, path: str, body: Any = None, token: str | None = None) -> dict[str, Any]:
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "http": {
                "method": method,
                "path": path,
                "sourceIp": "127.0.0.1",
                "protocol": "HTTP/1.1",
            },
            "requestId": "req-123",
            "stage": "$default",
        },
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


class _Context:
    function_name = "ApiFunction"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:ApiFunction"
    aws_request_id = "lambda-req-1"


def test_handler_serves_health_and_admin_routes(settings) -> None:
    import functions.api.handler as module

    handler = importlib.reload(module).handler
    health = handler(_event("GET", "/healthz"), _Context())
    assert health["statusCode"] == 200
    assert json.loads(health["body"]) == {"status": "ok"}
    # The API Gateway request id becomes the correlation id.
    assert health["headers"]["x-correlation-id"] == "req-123"

    created = handler(
        _event("POST", "/v1/admin/organizations", {"id": "acme", "name": "Acme"}, ADMIN_TOKEN),
        _Context(),
    )
    assert created["statusCode"] == 201
    settings_answer = handler(
        _event("GET", "/v1/organizations/acme/settings", token=ADMIN_TOKEN), _Context()
    )
    assert json.loads(settings_answer["body"])["memory"] == {"use": True, "generate": True}

    denied = handler(_event("GET", "/v1/organizations/acme/settings"), _Context())
    assert denied["statusCode"] == 401


# --- correlation ids on every log line ----------------------------------------------------


@pytest.fixture
def log_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The JSON lines the Powertools handler writes (every logger of the package)."""
    from agent_memory.observability import logger

    buffer = io.StringIO()
    handler = logger.registered_handler
    previous = handler.setStream(buffer)
    yield lambda: [json.loads(line) for line in buffer.getvalue().splitlines()]
    handler.setStream(previous)


class _WorkflowDown:
    """Step Functions unreachable: a turn's learning cannot start."""

    def start(self, name: str, payload: Any) -> Any:
        raise Unavailable("the workflow service could not be reached; retry shortly")


def test_a_service_log_line_carries_the_correlation_id_of_its_request(
    settings: Any, adapters: Any, log_lines: Callable[[], list[dict[str, Any]]]
) -> None:
    import functions.api.handler as module

    module = importlib.reload(module)
    module.services.use(build_services(settings, replace(adapters, orchestrator=_WorkflowDown())))
    handler = module.handler
    org = handler(
        _event("POST", "/v1/admin/organizations", {"name": "Acme"}, ADMIN_TOKEN), _Context()
    )
    org_id = json.loads(org["body"])["id"]
    user = handler(
        _event(
            "POST", "/v1/admin/users", {"organizationId": org_id, "role": "member"}, ADMIN_TOKEN
        ),
        _Context(),
    )
    token = json.loads(user["body"])["token"]
    agent = handler(
        _event("POST", "/v1/agents", {"name": "Planner", "members": []}, token), _Context()
    )
    session = handler(
        _event(
            "POST", "/v1/sessions", {"agentId": json.loads(agent["body"])["agent"]["id"]}, token
        ),
        _Context(),
    )
    session_id = json.loads(session["body"])["session"]["id"]
    turn = _event(
        "POST",
        f"/v1/sessions/{session_id}/turns",
        {"items": [{"role": "user", "content": "My budget is 1500 EUR."}]},
        token,
    )
    turn["headers"]["x-correlation-id"] = "turn-42"
    answer = handler(turn, _Context())
    assert json.loads(answer["body"])["turn"]["learning"] == "skipped"
    service_lines = [
        line for line in log_lines() if line["message"].startswith("learning not started")
    ]
    assert [line["correlation_id"] for line in service_lines] == ["turn-42"]
    assert service_lines[0]["level"] == "WARNING"


def test_a_learning_step_logs_with_its_execution_name(
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    import functions.learning_steps.handler as steps

    class Learning:
        def record_failure(self, event: dict[str, Any]) -> dict[str, Any]:
            logging.getLogger("agent_memory.service.learning").warning("recording the failure")
            return {"type": "ModelFailure"}

    class Services:
        learning = Learning()

    steps.services.use(Services())  # type: ignore[arg-type]
    try:
        event = {"input": {}, "context": {"executionName": "session-acme-s1-00042"}}
        steps.record_failure(event, _Context())
    finally:
        steps.services.reset()
    lines = {line["message"]: line for line in log_lines()}
    assert lines["recording the failure"]["correlation_id"] == "session-acme-s1-00042"
    assert lines["learning failed"]["correlation_id"] == "session-acme-s1-00042"
    assert lines["learning failed"]["function_name"] == "ApiFunction"


def test_the_learning_steps_count_runs_by_outcome_and_model_tokens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the dashboard's learning widgets read (template.yaml's OperatorDashboard)."""
    import functions.learning_steps.handler as steps

    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)

    class Learning:
        def load_evidence(self, event: dict[str, Any]) -> dict[str, Any]:
            return {"status": "skipped", "items": 0, "reason": "nothing new to learn"}

        def call_model(self, event: dict[str, Any]) -> dict[str, Any]:
            return {"status": "answered", "call": "c", "reused": False, "tokens": [120, 30]}

        def apply_learning(self, event: dict[str, Any]) -> dict[str, Any]:
            return {"status": "succeeded", "applied": 2, "rejected": 1}

    class Services:
        learning = Learning()

    steps.services.use(Services())  # type: ignore[arg-type]
    capsys.readouterr()
    try:
        event = {"input": {}, "context": {"executionName": "session-acme-s1-00042"}}
        for step in (steps.load_evidence, steps.call_model, steps.apply_learning):
            step(event, _Context())
    finally:
        steps.services.reset()
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    seen: dict[str, Any] = {}
    for blob in blobs:
        for declared in blob["_aws"]["CloudWatchMetrics"]:
            for metric in declared["Metrics"]:
                seen[metric["Name"]] = (blob[metric["Name"]], declared["Dimensions"], blob)
    assert seen["LearningSkipped"][1] == [["service", "reason"]]
    assert seen["LearningSkipped"][2]["reason"] == "nothing new to learn"
    assert (seen["ModelInputTokens"][0], seen["ModelOutputTokens"][0]) == ([120.0], [30.0])
    assert (seen["LearningSucceeded"][0], seen["ChangesApplied"][0]) == ([1.0], [2.0])
    assert seen["ChangesRejected"][0] == [1.0]
