"""The operator's dashboard (template.yaml's OperatorDashboard): every widget asks what an
operator asks, every metric of the service's namespace is one the code emits, AWS's metrics
are ones AWS publishes, and every alarm of the template is on it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from infra.cfn_yaml import load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = load_template(ROOT / "template.yaml")
NAMESPACE = "AgentMemory"
# The metrics AWS publishes that the dashboard reads (each service's CloudWatch docs).
AWS_METRICS = {
    "AWS/Lambda": {"Invocations", "Errors", "Duration", "Throttles"},
    "AWS/ApiGateway": {"4xx", "5xx"},
    "AWS/States": {"ExecutionsStarted", "ExecutionsTimedOut"},
    "AWS/DynamoDB": {
        "ConsumedReadCapacityUnits",
        "ConsumedWriteCapacityUnits",
        "ConditionalCheckFailedRequests",
        "TransactionConflict",
        "ThrottledRequests",
    },
}
_SEARCH = re.compile(r"\{(?P<namespace>[^,}]+)[^}]*\} MetricName=\"(?P<name>\w+)\"")


def _body() -> dict[str, Any]:
    resource = TEMPLATE["Resources"]["OperatorDashboard"]
    text = resource["Properties"]["DashboardBody"]["Fn::Sub"]
    return dict(json.loads(re.sub(r"\$\{[^}]+\}", "x", text)))


def _metrics(widget: dict[str, Any]) -> list[tuple[str, str]]:
    """(namespace, name) of each metric a widget reads, in lists and in SEARCH expressions."""
    found = []
    for metric in widget["properties"]["metrics"]:
        if isinstance(metric[0], dict):
            found += [
                (m["namespace"], m["name"]) for m in _SEARCH.finditer(metric[0]["expression"])
            ]
        else:
            found.append((metric[0], metric[1]))
    return found


def _emitted() -> set[str]:
    code = [*(ROOT / "functions").rglob("*.py"), *(ROOT / "layers/core").rglob("*.py")]
    call = re.compile(r"(?:add_metric|single_metric)\(\s*name=\"(\w+)\"")
    return {name for path in code for name in call.findall(path.read_text())}


def test_each_widget_is_titled_by_the_question_it_answers() -> None:
    widgets = _body()["widgets"]
    assert len(widgets) >= 10
    assert all(
        w["properties"]["title"].rstrip(")").split("(")[0].strip().endswith("?") for w in widgets
    )


def test_every_metric_is_one_the_code_or_aws_emits() -> None:
    emitted = _emitted()
    assert {"Requests", "LearningSkipped", "ModelInputTokens"} <= emitted
    read = [m for w in _body()["widgets"] if w["type"] == "metric" for m in _metrics(w)]
    ours = {name for namespace, name in read if namespace == NAMESPACE}
    assert ours, "the dashboard reads the service's own metrics"
    assert ours <= emitted, f"not emitted by the code: {sorted(ours - emitted)}"
    for namespace, name in read:
        if namespace != NAMESPACE:
            assert name in AWS_METRICS[namespace], (namespace, name)
    # Learning's outcomes are all there: applied, skipped (by reason), failed.
    assert {"LearningSucceeded", "LearningSkipped", "LearningFailed"} <= ours


def test_every_alarm_is_on_the_dashboard() -> None:
    resources = TEMPLATE["Resources"]
    alarms = {name for name, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    text = resources["OperatorDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    shown = set(re.findall(r"\$\{(\w+)\.Arn\}", text))
    assert alarms == shown
