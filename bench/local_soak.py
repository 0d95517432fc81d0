"""`make bench` -> `local_soak`: the single-machine service's memory under a long mixed load.

1. Starts `python -m infra.local.serve` (what `make run` runs) on a free loopback port with
   its own data directory in a temporary folder, rate limits off, learning by `local/rules`.
2. 8 clients (one user, agent and session each, their own keep-alive httpx connection)
   send mixed requests: turns that learn ("My <topic> is ..."), memory reads, memory text,
   agent_memories writes and recall. First 150 each (the 8 x 150 soak), then on until
   LOCAL_SOAK_REQUESTS in all (default 20,000; LOCAL_SOAK_QUICK=1: 3,000).
3. Samples the server's RSS (`/proc/<pid>/status` VmRSS) while it runs, then once learning
   is idle. Prints and returns the figures: RSS before, after the 8 x 150 soak, at 1,000
   and at the last request, the growths, status counts, and the two targets (the 8 x 150
   soak grows RSS by less than 300 MB; the long soak grows it, after the first 1,000
   requests, by no more than those 1,000 did).

    python -m bench.local_soak
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = 8
BURST = 150
TOPICS = ("budget", "hotel", "airline", "seat", "city", "cuisine", "train", "museum")
MIX = (("turn", 30), ("read", 20), ("text", 20), ("write", 15), ("recall", 15))
ADMIN = "amk_admin_" + "local-soak-admin-token-0123456789"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_mb(pid: int) -> float:
    """Resident set size of `pid`, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for {pid}")


class Server:
    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.log_path = workdir / "server.log"
        env = {
            **os.environ,
            "PORT": str(self.port),
            "MEMORY_DATA_DIR": str(workdir / "data"),
            "MEMORY_ADMIN_TOKEN": ADMIN,
            "DEFAULT_MODEL": "local/rules",
            "RATE_LIMIT_PER_MINUTE": "0",
            "ORG_MODEL_CALLS_PER_MINUTE": "0",
            "PYTHONPATH": f"{ROOT / 'layers/core'}:{ROOT}",
            "LOG_LEVEL": "WARNING",
        }
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "infra.local.serve"],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 90
        with httpx.Client(base_url=self.url, timeout=5) as probe:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited: {self.tail()}")
                try:
                    if probe.get("/healthz").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no /healthz: {self.tail()}")
                time.sleep(0.2)

    def tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-20:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


class Load:
    """The clients, a shared request counter and the status counts."""

    def __init__(self, url: str, users: list[dict[str, str]], total: int) -> None:
        self.url, self.users, self.total = url, users, total
        self.sent = 0
        self.statuses: Counter[str] = Counter()
        self.by_op: Counter[str] = Counter()
        self.learning: Counter[str] = Counter()  # a turn's "learning": started or skipped
        self._lock = threading.Lock()

    def _take(self) -> bool:
        with self._lock:
            if self.sent >= self.total:
                return False
            self.sent += 1
            return True

    def client(self, number: int, limit: int) -> None:
        user = self.users[number]
        rng = random.Random(number)
        ops, weights = zip(*MIX, strict=True)
        headers = {"Authorization": f"Bearer {user['token']}"}
        sid, done = user["session"], 0
        with httpx.Client(base_url=self.url, headers=headers, timeout=60) as http:
            while done < limit and self._take():
                op = rng.choices(ops, weights)[0]
                try:
                    status = self._request(http, op, sid, rng)
                except httpx.TransportError as error:
                    status = type(error).__name__
                with self._lock:
                    self.statuses[str(status)] += 1
                    self.by_op[op] += 1
                done += 1

    def _request(self, http: httpx.Client, op: str, sid: str, rng: random.Random) -> int:
        if op == "turn":
            place = rng.choice(("Oslo", "Kyoto", "Quito"))
            text = f"My {rng.choice(TOPICS)} is {place} {rng.randrange(99)}."
            items = [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
            answer = http.post(f"/v1/sessions/{sid}/turns", json={"items": items})
            if answer.status_code == 200:
                self.learning[answer.json()["turn"]["learning"]] += 1
            return answer.status_code
        if op == "read":
            return http.get(f"/v1/sessions/{sid}/memory").status_code
        if op == "text":
            return http.get(f"/v1/sessions/{sid}/memory/text").status_code
        if op == "write":
            body = {
                "category": "fact",
                "content": f"Orders {rng.randrange(1000)} pallets of {rng.choice(TOPICS)}.",
                "importance": round(rng.random(), 2),
            }
            return http.post("/v1/agent_memories", json=body).status_code
        return http.post("/v1/agent_memories/recall", json={"limit": 10}).status_code

    def run(self, limit: int) -> None:
        threads = [
            threading.Thread(target=self.client, args=(n, limit)) for n in range(len(self.users))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def _provision(url: str) -> list[dict[str, str]]:
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=url, timeout=30) as http:
        org = http.post("/v1/admin/organizations", json={"name": "Soak"}, headers=admin).json()
        users = []
        for n in range(CLIENTS):
            user = http.post(
                "/v1/admin/users", json={"organizationId": org["id"]}, headers=admin
            ).json()
            auth = {"Authorization": f"Bearer {user['token']}"}
            agent = http.post("/v1/agents", json={"name": f"Soak {n}"}, headers=auth).json()
            session = http.post(
                "/v1/sessions", json={"agentId": agent["agent"]["id"]}, headers=auth
            ).json()
            users.append({"token": user["token"], "session": session["session"]["id"]})
        return users


def _learning_idle(url: str, users: list[dict[str, str]], timeout: float = 300) -> Counter[str]:
    """The newest executions' statuses once none of them runs (or at the time limit)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=url, timeout=30) as http:
        while True:
            statuses: Counter[str] = Counter()
            for user in users:
                answer = http.get(
                    f"/v1/sessions/{user['session']}/learning",
                    headers={"Authorization": f"Bearer {user['token']}"},
                ).json()
                statuses.update(e["status"] for e in answer["executions"])
            if not statuses["running"] or time.monotonic() > deadline:
                return statuses
            time.sleep(0.5)


@dataclass
class Soak:
    """The resident memory as the load went, and what learning did once it stopped."""

    load: Load
    samples: list[tuple[int, float]]
    burst: tuple[int, float, float]  # requests, resident MB and seconds after the 8 x 150
    seconds: float
    end_rss: float
    idle: Counter[str]
    idle_seconds: float
    idle_rss: float

    def at(self, count: int) -> float:
        return next((rss for sent, rss in self.samples if sent >= count), self.end_rss)


def _soak(server: Server, total: int) -> Soak:
    users = _provision(server.url)
    pid = server.proc.pid
    samples: list[tuple[int, float]] = [(0, rss_mb(pid))]
    load = Load(server.url, users, total)
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.25):
            samples.append((load.sent, rss_mb(pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    load.run(BURST)  # the 8 x 150 soak
    burst = (load.sent, rss_mb(pid), time.monotonic() - started)
    load.run(total)  # on to the total
    seconds = time.monotonic() - started
    stop.set()
    sampler.join()
    end_rss = rss_mb(pid)
    load_ended = time.monotonic()
    idle = _learning_idle(server.url, users)
    idle_seconds = time.monotonic() - load_ended
    return Soak(load, samples, burst, seconds, end_rss, idle, idle_seconds, rss_mb(pid))


def _report(soak: Soak) -> dict[str, Any]:
    load, (burst_requests, burst_rss, burst_seconds) = soak.load, soak.burst
    before, at_1000 = soak.samples[0][1], soak.at(1000)
    first_1000 = round(at_1000 - before, 1)
    after_1000 = round(soak.end_rss - at_1000, 1)
    return {
        "requests": load.sent,
        "clients": CLIENTS,
        "mix": dict(MIX),
        "rss_mb": {
            "before": before,
            "after_8x150": burst_rss,
            "at_1000": at_1000,
            f"at_{load.sent}": soak.end_rss,
            "after_learning_idle": soak.idle_rss,
        },
        "growth_mb": {
            "8x150": round(burst_rss - before, 1),
            "first_1000": first_1000,
            f"1000_to_{load.sent}": after_1000,
        },
        "statuses": dict(load.statuses),
        "requests_by_op": dict(load.by_op),
        "seconds": round(soak.seconds, 1),
        "rps": round(load.sent / soak.seconds, 1) if soak.seconds else None,
        "burst": {"requests": burst_requests, "seconds": round(burst_seconds, 1)},
        "turn_learning": dict(load.learning),
        # The newest 100 executions of each session, once learning is idle.
        "newest_executions": dict(soak.idle),
        "learning_caught_up_seconds": round(soak.idle_seconds, 1),
        "rss_samples": soak.samples[:: max(1, len(soak.samples) // 40)],
        "targets": {
            "8x150_under_300_mb": burst_rss - before < 300,
            "long_no_more_than_first_1000": after_1000 <= max(first_1000, 0.0),
        },
    }


def run() -> dict[str, Any]:
    quick = os.environ.get("LOCAL_SOAK_QUICK") == "1"
    total = int(os.environ.get("LOCAL_SOAK_REQUESTS", "3000" if quick else "20000"))
    with tempfile.TemporaryDirectory(prefix="local-soak-") as tmp:
        server = Server(Path(tmp))
        try:
            soak = _soak(server, total)
        finally:
            server.stop()
    return _report(soak)


def main() -> None:
    print(json.dumps(run(), indent=2))


if __name__ == "__main__":
    main()
