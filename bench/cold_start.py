"""Cold start: fresh-process import-and-init time of each Lambda handler against a bare
`import boto3` in the same run (median of N), and what dominates (`-X importtime`).

Also, for the function layout (docs/decisions.md, "Function layout for the cold-start
goal"): the framework floors (an empty FastAPI app under Mangum with the Powertools Logger;
Powertools' own HTTP resolver), one app per route family (one router module, as one
function per family would import it), and what the optional libraries would add on top of
the API handler's imports. Each figure has the wall-clock median (`median_ms`, the number
the README quotes) and the minimum CPU time (`cpu_min_ms`), which a busy machine moves far
less; compare ratios only within one run.

    python -m bench.cold_start          # prints JSON
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNS = 7
TARGETS = {
    "api": "import functions.api.handler",
    "learning_steps": "import functions.learning_steps.handler",
    "baseline_boto3": "import boto3",
}
FRAMEWORK = (
    "import fastapi, mangum; import agent_memory.observability; "
    "mangum.Mangum(fastapi.FastAPI(), lifespan='off')"
)
# One app with one router module: what a function serving only that family imports today.
FAMILY = (
    "import fastapi, mangum; from agent_memory.api.errors import install_error_handlers; "
    "from agent_memory.api.routers import {family} as family; app = fastapi.FastAPI(); "
    "app.include_router(family.router); install_error_handlers(app); "
    "mangum.Mangum(app, lifespan='off')"
)
# Imported after the API handler: their own cost, for what is kept off the cold path.
OPTIONAL = {
    "aws_xray_sdk": "aws_xray_sdk.core",
    "pydantic_settings": "pydantic_settings",
    "powertools_parameters": "aws_lambda_powertools.utilities.parameters",
}
# The floor of the other framework the layout decision weighs (already a dependency).
RESOLVER = (
    "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; "
    "APIGatewayHttpResolver(enable_validation=True)"
)
# Wall and CPU milliseconds: CPU time moves much less than wall time on a busy machine.
_PROBE = (
    "import time; t = time.perf_counter(); c = time.process_time(); {statement}; "
    "print((time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000)"
)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'layers/core'}:{ROOT}"
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    return env


def _once(statement: str) -> tuple[float, float] | None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        return None
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def _importtime(statement: str) -> list[tuple[str, int]]:
    """(module, cumulative microseconds) of every import `statement` makes."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=ROOT,
        check=False,
    )
    found = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _self, cumulative, name = (part.strip() for part in line[12:].split("|"))
        if cumulative.isdigit():
            found.append((name, int(cumulative)))
    return found


def dominant_imports(statement: str, top: int = 8) -> list[dict[str, Any]]:
    """The slowest top-level packages by cumulative import time."""
    packages: dict[str, int] = {}
    for name, cumulative in _importtime(statement):
        top_level = name.split(".")[0]
        if top_level not in {"functions", "agent_memory"}:
            packages[top_level] = max(packages.get(top_level, 0), cumulative)
    ranked = sorted(packages.items(), key=lambda kv: -kv[1])[:top]
    return [{"module": name, "cumulative_ms": round(us / 1000, 1)} for name, us in ranked]


def optional_import_ms() -> dict[str, float | None]:
    """What each optional library adds once the API handler is imported (`-X importtime`)."""
    costs: dict[str, float | None] = {}
    for name, module in OPTIONAL.items():
        found = dict(_importtime(f"{TARGETS['api']}; import {module}"))
        costs[name] = round(found[module] / 1000, 1) if module in found else None
    return costs


def _median(statement: str, runs: int) -> dict[str, Any]:
    _once(statement)  # the .pyc files of this statement's modules exist before measuring
    measured = [s for s in (_once(statement) for _ in range(runs)) if s is not None]
    if not measured:
        return {"median_ms": None, "error": "import failed"}
    samples = [wall for wall, _cpu in measured]
    return {
        "median_ms": round(statistics.median(samples), 1),
        "samples_ms": [round(s, 1) for s in samples],
        "cpu_min_ms": round(min(cpu for _wall, cpu in measured), 1),
    }


def _families() -> list[str]:
    routers = ROOT / "layers/core/agent_memory/api/routers"
    return sorted(p.stem for p in routers.glob("*.py") if not p.stem.startswith("_"))


def _ratio(ms: float | None, baseline: float | None) -> float | None:
    return round(ms / baseline, 2) if ms and baseline else None


def run(runs: int = RUNS) -> dict[str, Any]:
    _once("import boto3")  # warm the page cache and .pyc files before measuring
    results: dict[str, Any] = {name: _median(s, runs) for name, s in TARGETS.items()}
    baseline = results["baseline_boto3"]["median_ms"]
    cpu = results["baseline_boto3"].get("cpu_min_ms")
    results["ratio"] = _ratio(results["api"]["median_ms"], baseline)
    results["learning_steps_ratio"] = _ratio(results["learning_steps"]["median_ms"], baseline)
    results["cpu_ratio"] = _ratio(results["api"].get("cpu_min_ms"), cpu)
    results["learning_steps_cpu_ratio"] = _ratio(results["learning_steps"].get("cpu_min_ms"), cpu)
    floors = {"fastapi_mangum": FRAMEWORK, "powertools_resolver": RESOLVER}
    results["framework_floor"] = {}
    for name, statement in floors.items():
        measured = _median(statement, runs)
        results["framework_floor"][name] = {
            **measured,
            "ratio": _ratio(measured["median_ms"], baseline),
            "cpu_ratio": _ratio(measured.get("cpu_min_ms"), cpu),
        }
    families = {}
    for family in _families():
        measured = _median(FAMILY.format(family=family), runs)
        families[family] = {
            "median_ms": measured["median_ms"],
            "ratio": _ratio(measured["median_ms"], baseline),
            "cpu_ratio": _ratio(measured.get("cpu_min_ms"), cpu),
        }
    results["route_families"] = families
    results["optional_import_ms"] = optional_import_ms()
    results["dominant_imports_api"] = dominant_imports(TARGETS["api"])
    return results


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
