"""Lambda entry points of the learning state machine's tasks (infra/statemachines).

Each handler is one call into `LearningService`; the event is the task payload documented in
infra/statemachines/README.md and the return value lands at the task's ResultPath. An
exception is the task's error: `Retryable` is retried by the state machine, anything else
goes to RecordFailure. Every line logged during a step (the services' too) carries the
execution's name as its correlation id.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from agent_memory.process import built_for_good

# What the import builds (every service module, Powertools) lives as long as the process.
with built_for_good():
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    from agent_memory.bootstrap import step_services
    from agent_memory.observability import NAMESPACE, SERVICE, logger, metrics, set_correlation_id

METRICS_OFF = "POWERTOOLS_METRICS_DISABLED"
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


def _skipped(result: dict[str, Any]) -> None:
    """A run that ended learning nothing, counted by its reason (a short fixed sentence)."""
    # single_metric prints even when metrics are off (`make run` turns them off).
    if result.get("status") != "skipped" or os.environ.get(METRICS_OFF, "").lower() == "true":
        return
    reason = str(result.get("reason") or "nothing to learn")
    with single_metric(
        name="LearningSkipped",
        unit=MetricUnit.Count,
        value=1,
        namespace=NAMESPACE,
        default_dimensions={"service": SERVICE},
    ) as metric:
        metric.add_dimension(name="reason", value=reason[:250])


@_step
def load_evidence(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.load_evidence(event)
    metrics.add_metric(name="EvidenceItems", unit=MetricUnit.Count, value=result.get("items", 0))
    _skipped(result)
    return result


@_step
def call_model(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.call_model(event)
    answered, reused = result["status"] == "answered", bool(result.get("reused"))
    metrics.add_metric(name="ModelCalls", unit=MetricUnit.Count, value=answered and not reused)
    metrics.add_metric(name="ModelCallsReused", unit=MetricUnit.Count, value=answered and reused)
    tokens_in, tokens_out = result.get("tokens") or (0, 0)
    metrics.add_metric(name="ModelInputTokens", unit=MetricUnit.Count, value=tokens_in)
    metrics.add_metric(name="ModelOutputTokens", unit=MetricUnit.Count, value=tokens_out)
    return result


@_step
def apply_learning(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = services().learning.apply_learning(event)
    metrics.add_metric(name="ChangesApplied", unit=MetricUnit.Count, value=result.get("applied", 0))
    metrics.add_metric(
        name="ChangesRejected", unit=MetricUnit.Count, value=result.get("rejected", 0)
    )
    succeeded = int(result.get("status") == "succeeded")
    metrics.add_metric(name="LearningSucceeded", unit=MetricUnit.Count, value=succeeded)
    _skipped(result)
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
