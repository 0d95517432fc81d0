"""The MCP server as the Lambda function behind the HTTP API (template.yaml McpFunction):
API Gateway's events through its handler, the tools calling the service's API."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from agent_memory_client import Client
from agent_memory_client.lambda_handler import base_url, handler
from infra.cfn_yaml import load_template
from tests.clients.conftest import LocalService
from tests.clients.test_mcp import TOOLS

ROOT = Path(__file__).resolve().parents[2]


def _event(token: str | None, body: dict[str, Any], stage: str = "$default") -> dict[str, Any]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18",
        "host": "abc123.execute-api.eu-west-1.amazonaws.com",
    }
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return {
        "version": "2.0",
        "routeKey": "ANY /mcp",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.eu-west-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": "POST",
                "path": "/mcp",
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.9",
                "userAgent": "test",
            },
            "requestId": "r-1",
            "routeKey": "ANY /mcp",
            "stage": stage,
            "time": "01/Dec/2026:12:00:00 +0000",
            "timeEpoch": 1796126400000,
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def _rpc(method: str, params: dict[str, Any], n: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": method, "params": params}


def test_the_tools_answer_through_the_lambda_handler(
    local_service: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEMORY_URL", local_service.url)
    _org, _user, token = local_service.user()
    call = _rpc("tools/call", {"name": "remember", "arguments": {"content": "Uses Lambda."}})
    answer = handler(_event(token, call), None)
    assert answer["statusCode"] == 200, answer
    result = json.loads(answer["body"])["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["content"] == "Uses Lambda."
    # A second invocation reuses the endpoint (Lambda keeps the process warm).
    listed = json.loads(handler(_event(token, _rpc("tools/list", {}, 2)), None)["body"])
    assert {t["name"] for t in listed["result"]["tools"]} == TOOLS
    with Client(base_url=local_service.url, token=token) as rest:
        assert [m.content for m in rest.iter_agent_memories()] == ["Uses Lambda."]


def test_the_lambda_handler_refuses_a_wrong_token(
    local_service: LocalService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MEMORY_URL", local_service.url)
    for token in (None, "amk_not_a_token"):
        answer = handler(_event(token, _rpc("tools/list", {})), None)
        assert answer["statusCode"] == 401
        assert json.loads(answer["body"])["error"]["_tag"] == "Unauthorized"


def test_the_api_is_the_one_the_request_came_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MEMORY_URL", raising=False)
    assert base_url(_event("t", {})) == "https://abc123.execute-api.eu-west-1.amazonaws.com"
    assert base_url(_event("t", {}, stage="prod")).endswith(".amazonaws.com/prod")
    monkeypatch.setenv("AGENT_MEMORY_URL", "")  # as the template declares it
    assert base_url(_event("t", {})) == "https://abc123.execute-api.eu-west-1.amazonaws.com"
    monkeypatch.setenv("AGENT_MEMORY_URL", "http://host.docker.internal:8080/")
    assert base_url(_event("t", {})) == "http://host.docker.internal:8080"


def test_the_template_routes_mcp_to_a_function_without_data_permissions() -> None:
    template = load_template(ROOT / "template.yaml")
    function = template["Resources"]["McpFunction"]["Properties"]
    assert function["CodeUri"] == "clients/python/"
    assert function["Handler"] == "agent_memory_client.lambda_handler.handler"
    events = [e["Properties"] for e in function["Events"].values()]
    assert [(e["Path"], e["Method"], e["ApiId"]) for e in events] == [
        ("/mcp", "ANY", {"Ref": "HttpApi"})
    ]
    # It reaches the service only through the API, as its callers would: no policy at all.
    assert "Policies" not in function
    assert "Layers" not in function
    assert function["Environment"]["Variables"] == {"AGENT_MEMORY_URL": ""}


def test_the_lambda_requirements_pin_what_the_service_pins() -> None:
    pins = {
        line.split("==")[0]: line
        for line in (ROOT / "clients/python/requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    service = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    client = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]
    assert pins["mcp"] in client["optional-dependencies"]["lambda"]
    assert pins["mangum"] in service
    assert pins["httpx"] in service
    assert pins["pydantic"] in service
