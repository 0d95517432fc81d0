"""schemathesis as an outside client: its CLI, every check (`--checks all`), against the
local server (`make run`'s) from the checked-in infra/openapi.json (issue 17).

The in-process suite (test_schemathesis.py) reaches the use cases with real ids; this one
asks what a generated client would: does the document tell the truth? A request the schema
allows must not be refused for a reason the schema does not state, a 405 must list the
documented methods, every answer must be a documented status, header and shape.

Budget: the examples, coverage and fuzzing phases, 5 examples per operation, a fixed seed,
one worker (about 56 s here at load 8, 45 s of it the run; 108 s before the embedder's
single BLAS thread). `SCHEMATHESIS_HTTP_EXAMPLES=n` changes the budget.

Every failure fails the test. Rules on stored data that no schema can state are
configured, not pinned: schemathesis.toml lets three operations answer 400 to valid data,
and schemathesis_hooks.py (a check loaded by the CLI) fails such a 400 unless it names the
rule's field. Ids that name nobody answer 404 as API.md's "unknown object".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

from infra.gen_openapi import OPENAPI_PATH
from tests.local_server import local_server

CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES = int(os.environ.get("SCHEMATHESIS_HTTP_EXAMPLES", "5"))
SEED = 17

HOOKS = Path(__file__).with_name("schemathesis_hooks.py")


def _run(tmp_path: Path) -> dict[str, object]:
    # Thousands of requests from one token: the rate limit is the limits suite's business.
    # One BLAS thread for the local embedder (numpy): on a busy 2-core machine its default
    # thread pool made one short embedding 450-1250 ms instead of 25-40 ms.
    with local_server(
        tmp_path, RATE_LIMIT_PER_MINUTE="0", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"
    ) as server:
        org = server.post("/v1/admin/organizations", {"name": "Acme"})["id"]
        admin = server.post("/v1/admin/users", {"organizationId": org, "role": "admin"})
        report = tmp_path / "report.json"
        command = [
            str(Path(sys.executable).with_name("schemathesis")),
            "--config-file",
            str(CONFIG),
            "run",
            str(OPENAPI_PATH),
            "--url",
            server.url,
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {admin['token']}",
            "--phases",
            "examples,coverage,fuzzing",
            "--max-examples",
            str(EXAMPLES),
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
            timeout=600,
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


def test_every_check_passes_over_http(tmp_path: Path) -> None:
    report = _run(tmp_path)
    failures = cast("list[dict[str, Any]]", report.get("failures") or [])
    found = sorted({(str(f["code"]), str(op)) for f in failures for op in f["operations"]})
    log = (tmp_path / "schemathesis.txt").read_text()
    errors = report.get("errors") or []
    assert not found, f"contract mismatches {found}:\n{_summary(log)}"
    assert not errors, f"schemathesis errors {errors}:\n{log[-5000:]}"
