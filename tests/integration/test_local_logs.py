"""`make run`'s log, as an operator reads it: each request logged once, as one JSON line that
names the function serving its path in AWS (not whichever handler ran last in the process),
also after the MCP endpoint has been used, and no metrics dump (CloudWatch's format) in it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.support.local_server import local_server


def _request_lines(log: Path) -> list[dict[str, object]]:
    lines = []
    for line in log.read_text().splitlines():
        if line.startswith("{") and '"message":"request"' in line:
            lines.append(json.loads(line))
        else:
            assert " request " not in f" {line} ", f"a request logged as plain text: {line}"
    return lines


def test_each_request_is_logged_once_naming_the_function_that_serves_it(tmp_path: Path) -> None:
    with local_server(tmp_path, LOG_LEVEL="INFO", POWERTOOLS_LOG_LEVEL="INFO") as server:
        admin = {"Authorization": f"Bearer {server.admin_token}"}
        calls = [
            ("GET", "/v1/me", None),
            ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            ("GET", "/v1/agents", None),
            ("GET", "/v1/me", None),
        ]
        mcp = {"Accept": "application/json, text/event-stream"}
        with httpx.Client(base_url=server.url, headers=admin, timeout=30) as http:
            for method, path, body in calls:
                http.request(method, path, json=body, headers=mcp if body else None)
    lines = _request_lines(tmp_path / "server.log")  # complete once the server stopped
    assert '"_aws"' not in (tmp_path / "server.log").read_text(), "a metrics dump in the log"
    # The start's wait polled /healthz; then the calls above, in order.
    served = [
        (line["route"], line["function_name"]) for line in lines if line["route"] != "/healthz"
    ]
    assert served == [
        ("/v1/me", "ApiFunction"),
        # The MCP endpoint checks the caller with the API in process: its function's line.
        ("/v1/me", "McpFunction"),
        ("/v1/agents", "ApiAgentsFunction"),
        ("/v1/me", "ApiFunction"),
    ]
