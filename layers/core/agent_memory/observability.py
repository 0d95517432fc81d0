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
from contextvars import ContextVar

from aws_lambda_powertools import Logger, Metrics

logger = Logger(service="agent-memory")
metrics = Metrics(namespace="AgentMemory", service="agent-memory")

# Per context (a request's asyncio task, and the worker threads anyio copies it into), so
# that concurrent requests of a local server do not stamp each other's id.
_correlation_id: ContextVar[str | None] = ContextVar("correlation_id", default=None)


class _StampCorrelationId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        correlation_id = _correlation_id.get()
        if correlation_id is not None:
            record.correlation_id = correlation_id
        return True


def _log_package_lines_through_powertools() -> None:
    handler = logger.registered_handler
    if not any(isinstance(f, _StampCorrelationId) for f in handler.filters):
        handler.addFilter(_StampCorrelationId())
    package = logging.getLogger("agent_memory")
    if handler not in package.handlers:
        package.addHandler(handler)
    package.setLevel(logger.log_level)
    # Lambda's root handler would print each line a second time, as plain text.
    package.propagate = False


_log_package_lines_through_powertools()


def set_correlation_id(correlation_id: str | None) -> None:
    """Stamp every line logged from now on in this context with `correlation_id`."""
    _correlation_id.set(correlation_id)
    logger.set_correlation_id(correlation_id)
