"""Cold start: fresh-process import-and-init time of each Lambda handler against a bare
`import boto3` in the same run (median of N), and what dominates (`-X importtime`).

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
_PROBE = (
    "import time; t = time.perf_counter(); {statement}; print((time.perf_counter() - t) * 1000)"
)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'layers/core'}:{ROOT}"
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    return env


def _once(statement: str) -> float | None:
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
    return float(done.stdout.strip().splitlines()[-1])


def dominant_imports(statement: str, top: int = 8) -> list[dict[str, Any]]:
    """The slowest top-level packages by cumulative import time."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=ROOT,
        check=False,
    )
    packages: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        _self, cumulative, name = (part.strip() for part in line[12:].split("|"))
        top_level = name.split(".")[0]
        if cumulative.isdigit() and top_level not in {"functions", "agent_memory"}:
            packages[top_level] = max(packages.get(top_level, 0), int(cumulative))
    ranked = sorted(packages.items(), key=lambda kv: -kv[1])[:top]
    return [{"module": name, "cumulative_ms": round(us / 1000, 1)} for name, us in ranked]


def run(runs: int = RUNS) -> dict[str, Any]:
    _once("import boto3")  # warm the page cache and .pyc files before measuring
    results: dict[str, Any] = {}
    for name, statement in TARGETS.items():
        _once(statement)
        samples = [s for s in (_once(statement) for _ in range(runs)) if s is not None]
        if not samples:
            results[name] = {"median_ms": None, "error": "import failed"}
            continue
        results[name] = {
            "median_ms": round(statistics.median(samples), 1),
            "samples_ms": [round(s, 1) for s in samples],
        }
    baseline = results["baseline_boto3"]["median_ms"]
    api = results["api"]["median_ms"]
    results["ratio"] = round(api / baseline, 2) if api and baseline else None
    steps = results["learning_steps"]["median_ms"]
    results["learning_steps_ratio"] = round(steps / baseline, 2) if steps and baseline else None
    results["dominant_imports_api"] = dominant_imports(TARGETS["api"])
    return results


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
