"""The local server (`make run`: `python -m infra.local.serve`) as a subprocess that a test
kills with SIGKILL (itself, at a step boundary `MEMORY_KILL_AT` names: infra/local/crash.py,
or from outside) and starts again on the same data directory and port, while clients keep
calling it through `Host`, which waits out the restarts."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.local_server import free_port, spawn

ADMIN_TOKEN = "amk_admin_killable-server-test-token-0123456789"


class Down(Exception):
    """The server did not answer (it was killed, or is starting again)."""


@dataclass
class Life:
    """One run of the server process, from its start to its end."""

    proc: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def ended(self, timeout_s: float) -> int | None:
        """The exit status once the process ended within `timeout_s`, else None."""
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)


@dataclass
class Host:
    """The server at one data directory and port, started again as often as a test asks."""

    workdir: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    lives: list[Life] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, **extra: str) -> Life:
        """Start the server (with `extra` environment) and wait for /healthz, or for its
        end by SIGKILL (a kill point reached by a resumed run before it serves)."""
        env = self.env | extra
        env |= {
            "PORT": str(self.port),
            "MEMORY_DATA_DIR": str(self.workdir / "data"),
            "MEMORY_ADMIN_TOKEN": ADMIN_TOKEN,
        }
        log = self.workdir / f"server-{len(self.lives)}.log"
        proc = spawn(env, log)
        life = Life(proc, log)
        self.lives.append(life)
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return life
            except httpx.TransportError:
                pass
            ended = proc.poll()
            if ended == -signal.SIGKILL:
                return life
            if ended is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the local server did not start:\n{life.output()}")
            time.sleep(0.05)

    def close(self) -> None:
        for life in self.lives:
            life.kill()

    def request(
        self, token: str, method: str, path: str, body: Any = None, timeout_s: float = 10
    ) -> httpx.Response:
        """One request; Down when the server did not answer."""
        try:
            return httpx.request(
                method,
                f"{self.url}{path}",
                json=body,
                headers={"Authorization": f"Bearer {token}"},
                timeout=timeout_s,
            )
        except httpx.TransportError as error:
            raise Down(str(error)) from error

    def call(self, token: str, method: str, path: str, body: Any = None, ok: int = 200) -> Any:
        """A request that must answer `ok` (the server must be up)."""
        answer = self.request(token, method, path, body)
        assert answer.status_code == ok, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer.json() if answer.content else None

    def until_answered(
        self,
        token: str,
        method: str,
        path: str,
        body: Any = None,
        stop: threading.Event | None = None,
        wait_s: float = 120,
    ) -> httpx.Response | None:
        """The answer to a request repeated while the server is down or restarting (None:
        `stop` was set first). Every other answer is returned, whatever its status."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                answer = self.request(token, method, path, body)
                if answer.status_code != 503:
                    return answer
            except Down:
                pass
            if stop is not None and stop.is_set():
                return None
            assert time.monotonic() < deadline, f"{method} {path}: the server stayed down"
            time.sleep(0.05)
