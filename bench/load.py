"""`make load`: the local service under many concurrent clients, and a history check.

1. Starts `python -m infra.local.serve` (the API and the embedded AWS in one process, on
   free loopback ports), waits for /healthz, creates an organization, users, agents and
   sessions through the admin and session routes.
2. A second process runs LOAD_CLIENTS client threads for LOAD_SECONDS (default 16 and 20),
   each on its own keep-alive connection, mixing memory reads, memory text, session reads,
   Remember/Forget/Configure sent with `expected`/`revision` (re-read and retried on 409),
   and turns. Every request is recorded: operation, status, latency; for an acknowledged
   write the revision it answered and what it changed.
3. Learning runs on (the turns' facts are learned by `local/rules` in the server's workflow);
   once it is idle the final state is read and the history is checked:
   - no answer is a 5xx;
   - for every key, the final entry is what the acknowledged command with the highest
     revision made it (command keys and learned keys are disjoint, so consolidation never
     supersedes a command), and `use` is what the last acknowledged Configure set;
   - revisions rise strictly: a command answers the revision it was based on + 1, no two
     acknowledged writes of a session share a revision, a write acknowledged before another
     started has the lower revision, a read never sees a revision older than a write
     acknowledged before it started, and the final revision is not below any of them.
4. Writes `load` into bench/results/results.json; exits 1 on a 5xx or a history violation (never on
   a timing).

    python -m bench.load      # or: make load
"""

from __future__ import annotations

import http.client
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "results.json"
COMMAND_KEYS = tuple(f"cmd-{n}" for n in range(6))
# "My <topic> is ..." teaches local/rules a fact under the key <topic>: never a command key.
TOPICS = ("budget", "hotel", "airline", "seat", "city", "cuisine")
# Operation weights of a client's loop.
MIX = (("read", 30), ("text", 10), ("session", 5), ("command", 40), ("turn", 15))
ATTEMPTS = 6


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Client:
    """One keep-alive connection; every request is recorded."""

    def __init__(self, port: int, token: str, name: str, log: list[dict[str, Any]]) -> None:
        self.port, self.token, self.name, self.log = port, token, name, log
        self.conn: http.client.HTTPConnection | None = None

    def call(self, op: str, method: str, path: str, body: Any = None) -> tuple[int, Any, dict]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        started = time.monotonic()
        status, answer = 0, None
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            raw = response.read()
            status = response.status
            answer = json.loads(raw) if raw else None
        except (OSError, http.client.HTTPException, ValueError) as error:
            answer = {"transport_error": repr(error)}
            if self.conn is not None:
                self.conn.close()
            self.conn = None
        ended = time.monotonic()
        record = {"client": self.name, "op": op, "status": status, "t0": started, "t1": ended}
        record["ms"] = round((ended - started) * 1000, 2)
        self.log.append(record)
        return status, answer, record


def _session_of(answer: Any) -> dict[str, Any]:
    return (answer or {}).get("session") or {}


def _command(client: Client, sid: str, rng: random.Random) -> None:
    """Read the session, send one command against what was read; re-read on 409."""
    roll = rng.random()
    key = rng.choice(COMMAND_KEYS)
    if roll < 0.6:
        value = f"{client.name} says {secrets.token_hex(4)}"
        command, effect = {"_tag": "Remember", "key": key, "content": value, "kind": "fact"}, value
    elif roll < 0.85:
        command, effect = {"_tag": "Forget", "key": key}, None
    else:
        use = rng.random() < 0.5
        command, effect, key = {"_tag": "Configure", "use": use}, use, "use"
    for _ in range(ATTEMPTS):
        status, answer, seen = client.call("session", "GET", f"/v1/sessions/{sid}")
        if status != 200:
            return
        view = _session_of(answer)
        seen.update(session=sid, revision=view["revision"])
        body = {"expected": view["head"], "revision": view["revision"], "command": command}
        status, answer, record = client.call(
            command["_tag"].lower(), "POST", f"/v1/sessions/{sid}/memory", body
        )
        record.update(session=sid, key=key, effect=effect, based_on=view["revision"])
        if status == 200:
            record["revision"] = _session_of(answer)["revision"]
            return
        if status == 0:
            return  # no answer: it may or may not have applied (the check allows both)
        message = str(((answer or {}).get("error") or {}).get("message", ""))
        if status != 409 or "no fact has the key" in message:
            record["rejected"] = message[:120]
            return


def _turn(client: Client, sid: str, rng: random.Random) -> None:
    topic = rng.choice(TOPICS)
    text = f"My {topic} is {rng.choice(('Lisbon', 'Oslo', 'Kyoto', 'Quito'))} {rng.randrange(99)}."
    items = [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]
    status, answer, record = client.call(
        "turn", "POST", f"/v1/sessions/{sid}/turns", {"items": items}
    )
    record["session"] = sid
    if status == 200:
        record["revision"] = _session_of(answer)["revision"]


def _loop(client: Client, sessions: list[str], deadline: float, seed: int) -> None:
    rng = random.Random(seed)
    ops, weights = zip(*MIX, strict=True)
    while time.monotonic() < deadline:
        sid = rng.choice(sessions)
        op = rng.choices(ops, weights)[0]
        if op == "command":
            _command(client, sid, rng)
        elif op == "turn":
            _turn(client, sid, rng)
        else:
            path = {"read": "/memory", "text": "/memory/text", "session": ""}[op]
            status, answer, record = client.call(op, "GET", f"/v1/sessions/{sid}{path}")
            record["session"] = sid
            if op == "session" and status == 200:
                record["revision"] = _session_of(answer)["revision"]


def drive(config_path: str, out_path: str) -> None:
    """The client process: threads until the deadline, then every record to `out_path`."""
    config = json.loads(Path(config_path).read_text())
    started = time.monotonic()
    deadline = started + float(config["seconds"])
    logs: list[list[dict[str, Any]]] = []
    threads = []
    for n in range(int(config["clients"])):
        user = config["users"][n % len(config["users"])]
        log: list[dict[str, Any]] = []
        logs.append(log)
        client = Client(int(config["port"]), user["token"], f"c{n}", log)
        thread = threading.Thread(target=_loop, args=(client, user["sessions"], deadline, n))
        threads.append(thread)
        thread.start()
    for thread in threads:
        thread.join()
    records = [r for log in logs for r in log]
    seconds = time.monotonic() - started
    Path(out_path).write_text(json.dumps({"seconds": seconds, "records": records}))


# --- The orchestrating process ------------------------------------------------------------


class Server:
    """`python -m infra.local.serve` on free loopback ports, stopped by its own pid."""

    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.admin = f"amk_admin_{secrets.token_hex(16)}"
        self.log_path = workdir / "server.log"
        env = {
            **os.environ,
            "PORT": str(self.port),
            "AWS_LOCAL_PORT": str(_free_port()),
            "MEMORY_ADMIN_TOKEN": self.admin,
            # Its own data, never the checkout's `.data/` (which `make run` may hold).
            "MEMORY_DATA_DIR": str(workdir / "data"),
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

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"no /healthz after {timeout} s: {self.tail()}")

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._log.close()


def _api(port: int, token: str, method: str, path: str, body: Any = None) -> Any:
    log: list[dict[str, Any]] = []
    status, answer, _ = Client(port, token, "setup", log).call("setup", method, path, body)
    if status >= 300:
        raise RuntimeError(f"{method} {path}: {status} {answer}")
    return answer


def _provision(server: Server, users: int, sessions: int) -> list[dict[str, Any]]:
    port, admin = server.port, server.admin
    org = _api(port, admin, "POST", "/v1/admin/organizations", {"name": "Load"})["id"]
    made = []
    for n in range(users):
        user = _api(port, admin, "POST", "/v1/admin/users", {"organizationId": org})
        token = user["token"]
        agent = _api(port, token, "POST", "/v1/agents", {"name": f"Agent {n}"})["agent"]["id"]
        ids = [
            _session_of(_api(port, token, "POST", "/v1/sessions", {"agentId": agent}))["id"]
            for _ in range(sessions)
        ]
        made.append({"token": token, "sessions": ids})
    return made


def _drain_learning(server: Server, users: list[dict[str, Any]], timeout: float) -> Counter:
    """Wait until no learning run is running; the statuses of every run."""
    deadline = time.monotonic() + timeout
    while True:
        statuses: Counter = Counter()
        for user in users:
            for sid in user["sessions"]:
                runs = _api(server.port, user["token"], "GET", f"/v1/sessions/{sid}/learning")
                statuses.update(e["status"] for e in runs["executions"])
        if not statuses["running"] or time.monotonic() > deadline:
            return statuses
        time.sleep(1.0)


def _final_state(server: Server, users: list[dict[str, Any]]) -> dict[str, Any]:
    final = {}
    for user in users:
        for sid in user["sessions"]:
            view = _session_of(_api(server.port, user["token"], "GET", f"/v1/sessions/{sid}"))
            memory = _api(server.port, user["token"], "GET", f"/v1/sessions/{sid}/memory")
            final[sid] = {"revision": view["revision"], "memory": memory}
    return final


def check_history(records: list[dict[str, Any]], final: dict[str, Any]) -> list[str]:
    """Every way the recorded history contradicts itself or the final state."""
    violations = [f"{r['op']} answered {r['status']}" for r in records if r["status"] >= 500]
    by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if "session" in r:
            by_session[r["session"]].append(r)
    for sid, rows in by_session.items():
        writes = [
            r for r in rows if r["status"] == 200 and r["op"] != "session" and "revision" in r
        ]
        seen = Counter(r["revision"] for r in writes)
        violations += [
            f"{sid}: {n} acknowledged writes at revision {v}" for v, n in seen.items() if n > 1
        ]
        for r in writes:
            if "based_on" in r and r["revision"] != r["based_on"] + 1:
                violations.append(
                    f"{sid}: {r['op']} on revision {r['based_on']} answered {r['revision']}"
                )
            if r["revision"] > final[sid]["revision"]:
                violations.append(
                    f"{sid}: final revision {final[sid]['revision']} < acknowledged {r['revision']}"
                )
        violations += _real_time_order(sid, writes, rows)
        violations += _final_entries(sid, [r for r in writes if "key" in r], rows, final[sid])
    return violations


def _real_time_order(
    sid: str, writes: list[dict[str, Any]], rows: list[dict[str, Any]]
) -> list[str]:
    """A write acknowledged before a request started is visible to it: a later write
    answers a higher revision, a later read at least that revision."""
    out = []
    observed = [(r, r["op"] != "session") for r in rows if r["status"] == 200 and "revision" in r]
    for w in writes:
        for later, is_write in observed:
            if later["t0"] > w["t1"] and later["revision"] < w["revision"] + int(is_write):
                out.append(
                    f"{sid}: {later['op']} started after revision {w['revision']} was "
                    f"acknowledged but answered revision {later['revision']}"
                )
    return out


def _final_entries(
    sid: str, acked: list[dict[str, Any]], rows: list[dict[str, Any]], state: dict
) -> list[str]:
    """The final entry of each key (and `use`) is the newest acknowledged command's effect,
    or that of a command whose answer never came (it may have applied later)."""
    out = []
    memory = state["memory"]
    for key in {r["key"] for r in acked}:
        latest = max((r for r in acked if r["key"] == key), key=lambda r: r["revision"])
        unanswered = [r for r in rows if r.get("key") == key and r["status"] == 0]
        allowed = [latest, *unanswered]
        if key == "use":
            actual = memory["overrides"].get("use")
            ok = any(actual == r["effect"] for r in allowed)
        else:
            entry = memory["entries"].get(key)
            ok = entry is not None and any(
                (r["effect"] is None and entry["status"] == "retracted")
                or (entry["status"] == "active" and entry["content"] == r["effect"])
                for r in allowed
            )
            actual = entry and {"status": entry["status"], "content": entry["content"]}
        if not ok:
            out.append(
                f"{sid}: {key} is {actual!r}; the last acknowledged command "
                f"(revision {latest['revision']}) made it {latest['effect']!r}"
            )
    return out


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def summarize(records: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    latencies = [r["ms"] for r in records]
    by_op = defaultdict(list)
    for r in records:
        by_op[r["op"]].append(r["ms"])
    commands = [r for r in records if "based_on" in r]
    return {
        "requests": len(records),
        "seconds": round(seconds, 1),
        "rps": round(len(records) / seconds, 1),
        "p50_ms": _percentile(latencies, 0.50),
        "p99_ms": _percentile(latencies, 0.99),
        "mean_ms": round(statistics.fmean(latencies), 1) if latencies else 0.0,
        "errors": dict(Counter(str(r["status"]) for r in records if not 200 <= r["status"] < 300)),
        "by_op": {
            op: {"count": len(v), "p50_ms": _percentile(v, 0.5), "p99_ms": _percentile(v, 0.99)}
            for op, v in sorted(by_op.items())
        },
        "commands": {
            "sent": len(commands),
            "acknowledged": sum(1 for r in commands if r["status"] == 200),
            "conflicts": sum(1 for r in commands if r["status"] == 409 and "rejected" not in r),
            "rejected": sum(1 for r in commands if "rejected" in r),
        },
        "turns_acknowledged": sum(1 for r in records if r["op"] == "turn" and r["status"] == 200),
    }


def run() -> dict[str, Any]:
    seconds = float(os.environ.get("LOAD_SECONDS", "20"))
    clients = int(os.environ.get("LOAD_CLIENTS", "16"))
    sessions = int(os.environ.get("LOAD_SESSIONS", "4"))
    with tempfile.TemporaryDirectory(prefix="agent-memory-load-") as tmp:
        workdir = Path(tmp)
        server = Server(workdir)
        try:
            server.wait_ready()
            users = _provision(server, 2, sessions)
            config = {"port": server.port, "seconds": seconds, "clients": clients, "users": users}
            (workdir / "config.json").write_text(json.dumps(config))
            files = [str(workdir / "config.json"), str(workdir / "records.json")]
            subprocess.run(
                [sys.executable, "-m", "bench.load", "client", *files],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": f"{ROOT / 'layers/core'}:{ROOT}"},
                check=True,
            )
            driven = json.loads((workdir / "records.json").read_text())
            records, elapsed = driven["records"], driven["seconds"]
            learning = _drain_learning(server, users, timeout=120)
            final = _final_state(server, users)
            violations = check_history(records, final)
            server_log = server.tail() if any(r["status"] >= 500 for r in records) else ""
        finally:
            server.stop()
    report = summarize(records, elapsed)
    report.update(
        clients=clients,
        sessions=2 * sessions,
        learning_runs=dict(learning),
        history_violations=len(violations),
        violations=violations[:20],
    )
    if server_log:
        report["server_log_tail"] = server_log
    return report


def write(report: dict[str, Any]) -> None:
    """`load` into bench/results/results.json, and the readable table brought up to date."""
    from bench.run_all import TABLE, table

    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results["load"] = report
    RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
    TABLE.write_text(table(results))


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "client":
        drive(sys.argv[2], sys.argv[3])
        return
    report = run()
    write(report)
    print(json.dumps(report, indent=2))
    fivexx = sum(n for status, n in report["errors"].items() if status.startswith("5"))
    if fivexx or report["history_violations"]:
        raise SystemExit(f"load: {fivexx} 5xx answers, {report['history_violations']} violations")


if __name__ == "__main__":
    main()
