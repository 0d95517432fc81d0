"""What a cold start of the API function imports: no AWS SDK, no Encryption SDK, no
pydantic v1 (docs/decisions.md, "Lazy wiring"). Checked in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import functions.api.handler as h
from fastapi.testclient import TestClient
before = sorted(m for m in ("boto3", "aws_encryption_sdk", "pydantic.v1") if m in sys.modules)
answer = TestClient(h.app).get("/healthz")
after = sorted(m for m in ("boto3", "aws_encryption_sdk", "pydantic.v1") if m in sys.modules)
print(json.dumps({"status": answer.status_code, "at_import": before, "after_health": after}))
"""


def test_a_cold_start_imports_only_what_it_needs() -> None:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers/core'}:{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"status": 200, "at_import": [], "after_health": []}
