"""Powertools Logger and Metrics, one of each per process, and the correlation id of the
work in progress (an HTTP request, or a learning step: its execution name).

Every line the process logs is one JSON object from the Powertools handler, and a line
logged while a request or a step runs carries its `correlation_id`: the `agent_memory`
package logger, parent of each `logging.getLogger(__name__)` in service/, persistence/ and
adapters/, writes through the same handler, which stamps each record with the correlation id
of the context that logged it. Tracing is Lambda's active tracing (template.yaml
`Tracing: Active`): no X-Ray SDK is imported (ADR 0043).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from aws_lambda_powertools import Logger, Metrics

logger = Logger(service="agent-memory")
NAMESPACE = "AgentMemory"
SERVICE = "agent-memory"
metrics = Metrics(namespace=NAMESPACE, service=SERVICE)

# Per context (a request's asyncio task, and the worker threads anyio copies it into), so
# that concurrent requests of a local server do not stamp each other's id.
_correlation_id: ContextVar[str | None] = ContextVar("correlation_id", default=None)
# The function serving the work, where one process serves several (`make run`): the Lambda
# context's keys are the logger's, shared by every thread, so they name the last invoked.
_function_name: ContextVar[str | None] = ContextVar("function_name", default=None)


class _StampCorrelationId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        correlation_id = _correlation_id.get()
        if correlation_id is not None:
            record.correlation_id = correlation_id
        function_name = _function_name.get()
        if function_name is not None:
            record.function_name = function_name
        return True


def _log_package_lines_through_powertools() -> None:
    handler = logger.registered_handler
    if not any(isinstance(f, _StampCorrelationId) for f in handler.filters):
        handler.addFilter(_StampCorrelationId())
    package = logging.getLogger("agent_memory")
    if handler not in package.handlers:
        package.addHandler(handler)
    package.setLevel(logger.log_level)
    # Lambda's root handler (or one a library adds to the root, as the MCP SDK does) would
    # print each line a second time.
    package.propagate = False
    logging.getLogger(logger.name).propagate = False


_log_package_lines_through_powertools()


def set_correlation_id(correlation_id: str | None) -> None:
    """Stamp every line logged from now on in this context with `correlation_id`."""
    _correlation_id.set(correlation_id)
    logger.set_correlation_id(correlation_id)


@contextmanager
def serving(function_name: str | None) -> Iterator[None]:
    """Stamp every line logged inside with `function_name` (a process serving several)."""
    token = _function_name.set(function_name)
    try:
        yield
    finally:
        _function_name.reset(token)


def serve_as(function_name: str | None) -> None:
    """Stamp every line logged from now on in this context with `function_name`."""
    _function_name.set(function_name)
