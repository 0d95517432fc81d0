"""The local server (`make run`: `python -m infra.local.serve`, SQLite, local cipher) on a
free port with its own data directory, for tests that call it as an outside client does
(the browser tests, schemathesis over HTTP)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "amk_admin_local-server-test-token-0123456789"


@dataclass(frozen=True)
class LocalServer:
    url: str
    admin_token: str

    def post(self, path: str, body: Any, token: str | None = None) -> Any:
        """A JSON POST as the given token (the admin token by default); the answer's body."""
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {token or self.admin_token}",
                "Content-Type": "application/json",
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# What the server inherits from the test process: the machine's basics and the suite's quiet
# defaults, never a setting another test left in the environment (a model provider's URL
# changes the document it serves, and so what a generated client asks).
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
INHERITED_PREFIXES = ("POWERTOOLS_",)


def spawn(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`python -m infra.local.serve` in its own process group, its output in `log`: the
    machine's basics and the suite's defaults (`INHERITED`), plus `env`."""
    inherited = {
        k: v for k, v in os.environ.items() if k in INHERITED or k.startswith(INHERITED_PREFIXES)
    }
    path = {"PYTHONPATH": f"{ROOT / 'layers' / 'core'}{os.pathsep}{ROOT}"}
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "infra.local.serve"],
            cwd=ROOT,
            env=inherited | path | env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@contextmanager
def local_server(workdir: Path, **settings: str) -> Iterator[LocalServer]:
    """Start the server (with `settings` as extra environment), wait for /healthz, stop it
    afterwards."""
    port = free_port()
    env = settings | {
        "PORT": str(port),
        "MEMORY_DATA_DIR": str(workdir / "data"),
        "MEMORY_ADMIN_TOKEN": ADMIN_TOKEN,
    }
    log = workdir / "server.log"
    server = spawn(env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                    break
            except OSError as error:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the local server did not start:\n{log.read_text()}"
                    ) from error
                time.sleep(0.2)
        yield LocalServer(url, ADMIN_TOKEN)
    finally:
        server.terminate()
        server.wait(timeout=20)
