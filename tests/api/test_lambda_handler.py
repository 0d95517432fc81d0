"""The deployed entry point: API Gateway HTTP API events through Mangum to the app."""

from __future__ import annotations

import importlib
import json
from typing import Any

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
