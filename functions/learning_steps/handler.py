"""Lambda entry points of the learning state machine's tasks (infra/statemachines).

Each handler is one call into `LearningService`; the event is the task payload documented in
infra/statemachines/README.md and the return value lands at the task's ResultPath. An
exception is the task's error: `Retryable` is retried by the state machine, anything else
goes to RecordFailure.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from agent_memory.bootstrap import step_services

logger = Logger(service="agent-memory")
metrics = Metrics(namespace="AgentMemory", service="agent-memory")
# Built once per cold start from the environment; tests call `services.reset()` / `.use()`.
services = step_services


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def load_evidence(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.load_evidence(event)
    metrics.add_metric(name="EvidenceItems", unit=MetricUnit.Count, value=result.get("items", 0))
    return result


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def call_model(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.call_model(event)
    name = "ModelCallsReused" if result.get("reused") else "ModelCalls"
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=int(result["status"] == "answered"))
    return result


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def apply_learning(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.apply_learning(event)
    metrics.add_metric(name="ChangesApplied", unit=MetricUnit.Count, value=result.get("applied", 0))
    return result


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def record_failure(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.record_failure(event)
    logger.warning("learning failed", extra={"error": result.get("type")})
    metrics.add_metric(name="LearningFailed", unit=MetricUnit.Count, value=1)
    return result
