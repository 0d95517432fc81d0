"""Lambda entry points of the learning state machine's tasks (infra/statemachines).

Each handler is one call into `LearningService`; the event is the task payload documented in
infra/statemachines/README.md and the return value lands at the task's ResultPath. An
exception is the task's error: `Retryable` is retried by the state machine, anything else
goes to RecordFailure. Every line logged during a step (the services' too) carries the
execution's name as its correlation id.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from agent_memory.process import built_for_good

# What the import builds (every service module, Powertools) lives as long as the process.
with built_for_good():
    from aws_lambda_powertools.metrics import MetricUnit

    from agent_memory.bootstrap import step_services
    from agent_memory.observability import logger, metrics, set_correlation_id

Step = Callable[[dict[str, Any], Any], dict[str, Any]]
# Built once per cold start from the environment; tests call `services.reset()` / `.use()`.
services = step_services


def _step(run: Step) -> Step:
    """Metrics flushed, the Lambda context on every line, the execution name as the
    correlation id (set after `clear_state` has cleared the previous invocation's)."""

    @functools.wraps(run)
    def with_correlation_id(event: dict[str, Any], context: Any) -> dict[str, Any]:
        set_correlation_id((event.get("context") or {}).get("executionName"))
        return run(event, context)

    wrapped: Step = metrics.log_metrics(
        logger.inject_lambda_context(clear_state=True)(with_correlation_id)
    )
    return wrapped


@_step
def load_evidence(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.load_evidence(event)
    metrics.add_metric(name="EvidenceItems", unit=MetricUnit.Count, value=result.get("items", 0))
    return result


@_step
def call_model(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.call_model(event)
    name = "ModelCallsReused" if result.get("reused") else "ModelCalls"
    metrics.add_metric(name=name, unit=MetricUnit.Count, value=int(result["status"] == "answered"))
    return result


@_step
def apply_learning(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.apply_learning(event)
    metrics.add_metric(name="ChangesApplied", unit=MetricUnit.Count, value=result.get("applied", 0))
    return result


@_step
def record_failure(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.record_failure(event)
    logger.warning("learning failed", extra={"error": result.get("type")})
    metrics.add_metric(name="LearningFailed", unit=MetricUnit.Count, value=1)
    return result


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def wake_learning(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The budget tick (an EventBridge schedule, template.yaml's BudgetTickFunction): learning
    skipped while a memory Bot's budget was spent starts once its next period has begun;
    semantic recall indexes the tail of threads gone idle (service/recall.py)."""
    started = services().memory_bot.wake_learning()
    metrics.add_metric(name="LearningWoken", unit=MetricUnit.Count, value=started)
    flushed = services().threads.background.flush_idle()
    metrics.add_metric(name="RecallFlushed", unit=MetricUnit.Count, value=flushed)
    return {"started": started, "flushed": flushed}
