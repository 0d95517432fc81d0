"""schemathesis as an outside client: its CLI, every check (`--checks all`), every phase
(examples, coverage, fuzzing and stateful), against the local server (`make run`'s) from the
document it serves (`/openapi.json`: infra/openapi.json with the model names this deployment
runs and allows).

The in-process suite (test_schemathesis.py) reaches the use cases with real ids; this one
asks what a generated client would: does the document tell the truth? A request the schema
allows must not be refused for a reason the schema does not state, one it forbids must be
refused with a 4xx the check expects (a 400, never a 413 for a schema limit), a 405 must list
the documented methods, every answer must be a documented status, header and shape, and an
object created must then be reachable by its creator (the stateful phase's links).

schemathesis.toml allows no status for any operation: every failure fails the test.
schemathesis_hooks.py only keeps generation to requests HTTP can send and the service reads
(bodies of 1 MiB at most, query arrays of strings).

Budget: 25 examples per operation and phase, a fixed seed, one worker: about 35 s of
schemathesis on a quiet 2-core machine, 130 s of wall time (48 s of CPU with the server's)
on a busy one. `--run-slow` runs 100 examples per operation as well (280 s of wall time,
140 s of CPU, on a busy machine); `SCHEMATHESIS_HTTP_EXAMPLES=n` raises the default budget.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, cast

import pytest

from tests.support.local_server import local_server

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Keeps generation to what HTTP sends and the service reads; allows no status.
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
EXAMPLES = max(25, int(os.environ.get("SCHEMATHESIS_HTTP_EXAMPLES", "25")))
SLOW_EXAMPLES = 100
SEED = 17


def _run(tmp_path: Path, examples: int) -> dict[str, object]:
    # Thousands of requests from one token, and the missing-header checks' requests without
    # one: rate limits and failed-authentication throttling are the limits suite's business.
    # One BLAS thread for the local embedder (numpy): on a busy 2-core machine its default
    # thread pool made one short embedding 450-1250 ms instead of 25-40 ms.
    with local_server(
        tmp_path,
        RATE_LIMIT_PER_MINUTE="0",
        AUTH_FAILURES_PER_MINUTE="0",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
    ) as server:
        org = server.post("/v1/admin/organizations", {"name": "Acme"})["id"]
        admin = server.post("/v1/admin/users", {"organizationId": org, "role": "admin"})
        report = tmp_path / "report.json"
        command = [
            str(Path(sys.executable).with_name("schemathesis")),
            "--config-file",
            str(CONFIG),
            "run",
            f"{server.url}/openapi.json",
            "--url",
            server.url,
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {admin['token']}",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            str(examples),
            "--seed",
            str(SEED),
            # One worker: with two, Hypothesis describes filters by parsing their source in
            # both threads at once, and CPython 3.11's `ast.parse` is not safe for that
            # ("AST constructor recursion depth mismatch": an error of the tool, not ours).
            "--workers",
            "1",
            "--report-json-path",
            str(report),
        ]
        # Run in the test's directory: the tool keeps its example database in `.schemathesis/`.
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
            cwd=tmp_path,
            env={**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS)},
        )
        (tmp_path / "schemathesis.txt").write_text(done.stdout + done.stderr)
        if os.environ.get("SCHEMATHESIS_LOG"):
            Path(os.environ["SCHEMATHESIS_LOG"]).write_text(done.stdout + done.stderr)
        assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
        return dict(json.loads(report.read_text()))


def _summary(log: str) -> str:
    """Each failing operation's checks, answers and reproducing curl, cut short."""
    sections = re.split(r"\n_{5,} (.+?) _{5,}\n", log)
    lines: list[str] = []
    for name, body in zip(sections[1::2], sections[2::2], strict=True):
        lines.append(f"== {name}")
        lines += [
            line[:300]
            for line in body.splitlines()
            if line.startswith("- ST") or '"error"' in line or "curl" in line
        ][:6]
    return "\n".join(lines)


def _passes(tmp_path: Path, examples: int) -> None:
    report = _run(tmp_path, examples)
    failures = cast("list[dict[str, Any]]", report.get("failures") or [])
    found = sorted({(str(f["code"]), str(op)) for f in failures for op in f["operations"]})
    log = (tmp_path / "schemathesis.txt").read_text()
    errors = report.get("errors") or []
    assert not found, f"contract mismatches {found}:\n{_summary(log)}"
    assert not errors, f"schemathesis errors {errors}:\n{log[-5000:]}"
    phases = cast("dict[str, dict[str, Any]]", report["phases"])
    ran = {name: phases[name]["status"] for name in ("coverage", "fuzzing", "stateful")}
    assert ran == dict.fromkeys(ran, "success"), ran


def _allowances(config: object) -> list[str]:
    """Where a schemathesis configuration allows a status or narrows an operation."""
    found: list[str] = []
    if isinstance(config, dict):
        for key, value in config.items():
            if key in ("expected-statuses", "operations"):
                found.append(key)
            found += _allowances(value)
    elif isinstance(config, list):
        for value in config:
            found += _allowances(value)
    return found


def test_the_configuration_allows_no_status_for_any_operation() -> None:
    assert _allowances(tomllib.loads(CONFIG.read_text())) == []


def test_every_check_passes_over_http(tmp_path: Path) -> None:
    _passes(tmp_path, EXAMPLES)


@pytest.mark.slow
def test_every_check_passes_over_http_with_a_large_budget(tmp_path: Path) -> None:
    _passes(tmp_path, SLOW_EXAMPLES)
