"""The request middleware: correlation id and request metrics.

The Logger and Metrics are agent_memory.observability's, shared with the learning steps, which
must not import FastAPI.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from agent_memory.observability import logger, metrics, set_correlation_id

CORRELATION_HEADER = b"x-correlation-id"


def _request_correlation_id(scope: dict[str, Any]) -> str:
    for name, value in scope.get("headers", []):
        if name == CORRELATION_HEADER and 0 < len(value) <= 128:
            return str(value.decode("latin-1"))
    event = scope.get("aws.event") or {}
    request_id = (event.get("requestContext") or {}).get("requestId")
    return str(request_id) if request_id else uuid.uuid4().hex


class RequestContext:
    """ASGI middleware: correlation id on every log line and answer, request metrics."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        correlation_id = _request_correlation_id(scope)
        set_correlation_id(correlation_id)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = list(message.get("headers", []))
                headers.append((CORRELATION_HEADER, correlation_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            route = scope.get("route")
            route_path = getattr(route, "path", scope.get("path", ""))
            logger.info(
                "request",
                extra={
                    "method": scope.get("method"),
                    "route": route_path,
                    "status": status,
                    "ms": round(elapsed_ms, 2),
                },
            )
            metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
            metrics.add_metric(name="Latency", unit=MetricUnit.Milliseconds, value=elapsed_ms)
            if status >= 500:
                metrics.add_metric(name="ServerErrors", unit=MetricUnit.Count, value=1)
            elif status == 429:
                metrics.add_metric(name="Throttled", unit=MetricUnit.Count, value=1)
