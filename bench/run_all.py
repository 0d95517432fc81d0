"""`make bench`: every benchmark, offline, into bench/results/results.json and a readable table.

Each benchmark runs in its own process (a fresh embedded AWS, no state shared between
them) with a time limit (BENCH_TIMEOUT seconds, default 600). A benchmark that is missing,
fails or runs out of time is recorded as such and printed, never skipped silently. The
`load` key of an earlier `make load` is kept. Benchmarks print figures; nothing here fails
the build on a timing: compare ratios measured side by side in one run.

    python -m bench.run_all                      # everything
    BENCH_ONLY=aws_calls,overhead python -m bench.run_all   # a subset, merged into the rest
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "results.json"
TABLE = ROOT / "bench" / "results" / "results.md"
# (results key, module); the first five hold the keys readers rely on.
BENCHMARKS = (
    ("cold_start", "bench.cold_start"),
    ("aws_calls", "bench.aws_calls"),
    ("overhead", "bench.overhead"),
    ("scaling", "bench.scaling"),
    # One Bot's memory pool at its peak hour, simulated from AWS's limits (docs/scale.md).
    ("pool_sim", "bench.pool_sim"),
    ("learning", "bench.learning"),
    ("session_memory", "bench.session_memory"),
    ("agent_memory", "bench.agent_memory"),
    ("agent_memories", "bench.memory_objects"),
    ("bot_memory", "bench.bot_memory"),
    # The memory Bot's confide: latency (zero-latency model), calls, cost per million.
    ("confide", "bench.confide"),
    ("threads", "bench.threads"),
    # Semantic recall on LoCoMo: recall.locomo.
    ("recall", "bench.locomo"),
    # The observer's token count against o200k, and its model calls per conversation.
    ("observer", "bench.observer"),
    ("events", "bench.events"),
    # `make run`'s RSS under 20,000 mixed requests (LOCAL_SOAK_QUICK=1: 3,000).
    ("local_soak", "bench.local_soak"),
    # Moving a deployment: export and import rows a second and peak memory (ADR 0085).
    ("move", "bench.move"),
)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'layers/core'}:{ROOT}"
    env.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    env.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    env.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    return env


def _child(module: str, out: str) -> None:
    """Run one benchmark in this process and write its JSON to `out`."""
    report = importlib.import_module(module).run()
    Path(out).write_text(json.dumps(report, default=str))


def _run_one(key: str, module: str, timeout: float) -> dict[str, Any]:
    if importlib.util.find_spec(module) is None:
        print(f"!! {module} is missing: {key} is not measured in this run", flush=True)
        return {"missing": f"{module} does not exist in this checkout"}
    print(f"-- {key} ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "bench.run_all", "--one", module, str(out)],
                cwd=ROOT,
                env=_environment(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            print(f"!! {key} did not finish in {timeout:.0f} s (BENCH_TIMEOUT)", flush=True)
            return {"error": f"timed out after {timeout:.0f} s", "seconds": timeout}
        seconds = round(time.monotonic() - started, 1)
        if done.returncode != 0 or not out.exists():
            tail = "\n".join(done.stderr.strip().splitlines()[-12:])
            print(f"!! {key} failed (exit {done.returncode}):\n{tail}", flush=True)
            return {"error": f"exit {done.returncode}", "stderr_tail": tail, "seconds": seconds}
        report = json.loads(out.read_text())
    print(f"   {key}: {seconds} s", flush=True)
    return {**report, "bench_seconds": seconds} if isinstance(report, dict) else report


def _git_commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def run() -> dict[str, Any]:
    only = {k for k in os.environ.get("BENCH_ONLY", "").split(",") if k}
    timeout = float(os.environ.get("BENCH_TIMEOUT", "600"))
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    started = time.monotonic()
    for key, module in BENCHMARKS:
        if not only or key in only:
            results[key] = _run_one(key, module, timeout)
    aws_calls = results.get("aws_calls") or {}
    if "learning.turn" in aws_calls:
        from bench.cost_model import cost_per_million_turns

        results["cost"] = cost_per_million_turns(results)
    results["meta"] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _git_commit(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "seconds": round(time.monotonic() - started, 1),
        "subset": sorted(only) or None,
    }
    return results


# --- The readable table ---------------------------------------------------------------


def _f(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _problem(section: Any) -> str | None:
    if not isinstance(section, dict):
        return "not run"
    for kind in ("missing", "error"):
        if isinstance(section.get(kind), str):
            return f"{kind}: {section[kind]}"
    return None


def _cold_start(r: dict[str, Any]) -> list[str]:
    base = r["baseline_boto3"]["median_ms"]
    rows = ["| handler | median ms (7 runs) | x bare `import boto3` |", "|---|---:|---:|"]
    for name in ("api", "learning_steps", "baseline_boto3"):
        ms = r[name]["median_ms"]
        rows.append(f"| {name} | {_f(ms)} | {_f(ms / base if ms and base else None, 2)} |")
    # One function per API family, each against boto3 samples interleaved with its own.
    for name, figure in (r.get("functions") or {}).items():
        rows.append(f"| api_{name} | {_f(figure['median_ms'])} | {_f(figure['ratio'], 2)} |")
    if "quiet_machine" in r:
        rows.append(f"\nquiet machine: {r['quiet_machine']} (load average {r['load_average']})")
    return rows


def _aws_calls(r: dict[str, Any]) -> list[str]:
    rows = [
        "| operation | DynamoDB warm/cold | KMS warm/cold | Step Functions | model | "
        "RRU/WRU warm (est.) | own ms warm |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in r.items():
        if not isinstance(entry, dict):
            continue
        if "warm" not in entry:
            rows.append(f"| {name} | {_problem(entry)} | | | | | |")
            continue
        w, c = entry["warm"], entry["cold"]
        own = w.get("own_ms", sum((w.get("task_own_ms") or {}).values()))
        rows.append(
            f"| {name} | {w['dynamodb']}/{c['dynamodb']} | {w['kms']}/{c['kms']} | "
            f"{w['stepfunctions']} | {w['model']} | {_f(w['rru_estimate'])}/"
            f"{_f(w['wru_estimate'])} | {_f(own)} |"
        )
    return rows


def _scaling(r: dict[str, Any]) -> list[str]:
    rows = [
        "| read | entries | ms (own) | DynamoDB requests | items read | decrypts | rendered |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("memory_text", "memory_read"):
        for row in r[name]:
            rows.append(
                f"| {name} | {row['entries']:,} | {_f(row['ms'])} ({_f(row['own_ms'])}) | "
                f"{row['dynamodb_requests']} | {row['items_read']:,} | {row['decrypts']:,} | "
                f"{row['rendered']:,} |"
            )
    for row in r.get("bot_memory_read") or ():
        rows.append(
            f"| bot_memory_read (of {row['pool_rows']:,} rows) | {row['entries']:,} | "
            f"{_f(row['ms'])} ({_f(row['own_ms'])}) | {row['dynamodb_requests']} | "
            f"{row['items_read']:,} | {row['decrypts']:,} | {row['rendered']:,} |"
        )
    return rows


def _pool_sim(r: dict[str, Any]) -> list[str]:
    rows = [
        "| people | design | days | pool entries | applies | committed | failed | unfinished | "
        "conflict retries | lag p99 s | GET p99 s | request reads past 15 s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in r["rows"]:
        rows.append(
            f"| {row['people']:,} | {row['design']} | {_f(row['days_of_growth'], 2)} | "
            f"{row['pool_entries']:,} | {row['applies']:,} | {row['committed']:,} | "
            f"{row['failed']:,} | {row['unfinished']:,} | {row['conflict_retries']:,} | "
            f"{_f(row['lag_p99_s'])} | {_f(row['read_p99_s'])} | "
            f"{row['request_reads_past_15s']:,} of {row['request_reads']:,} |"
        )
    return rows


def _threads(r: dict[str, Any]) -> list[str]:
    rows = _aws_calls(r["aws_calls"])
    rows += [
        "",
        "| thread_context | messages | ms (own) | DynamoDB requests | items read | decrypts |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in r["scaling"]["thread_context"]:
        rows.append(
            f"| | {row['messages']:,} | {_f(row['ms'])} ({_f(row['own_ms'])}) | "
            f"{row['dynamodb_requests']} | {row['items_read']:,} | {row['decrypts']:,} |"
        )
    return rows


def _load(r: dict[str, Any]) -> list[str]:
    return [
        "| requests | rps | p50 ms | p99 ms | errors by status | history violations |",
        "|---:|---:|---:|---:|---|---:|",
        f"| {r['requests']:,} | {_f(r['rps'])} | {_f(r['p50_ms'])} | {_f(r['p99_ms'])} | "
        f"{json.dumps(r['errors'])} | {r['history_violations']} |",
    ]


def _cost(r: dict[str, Any]) -> list[str]:
    rows = ["| line | USD per million turns |", "|---|---:|"]
    usd = r["per_million_turns_usd"]
    rows += [f"| {k} | {_f(v, 2)} |" for k, v in usd.items() if not isinstance(v, dict)]
    for name, turn in (usd.get("by_turn") or {}).items():
        if isinstance(turn, dict) and "total_without_model" in turn:
            total = _f(turn["total_without_model"], 2)
            rows.append(f"| by_turn.{name}: total_without_model | {total} |")
    alternatives = r.get("alternatives_per_million_turns_usd") or {}
    rows += [
        f"| managed: {k} | {_f(v, 2)} |" for k, v in alternatives.items() if isinstance(v, float)
    ]
    return rows


def _others(results: dict[str, Any]) -> list[str]:
    rows = []
    for key in (
        "session_memory",
        "agent_memory",
        "agent_memories",
        "events",
        "local_soak",
        "confide",
    ):
        section = results.get(key)
        problem = _problem(section)
        if problem:
            rows.append(f"- `{key}`: {problem}")
            continue
        checks = section.get("targets") or ({"ok": section["ok"]} if "ok" in section else {})
        rows.append(f"- `{key}`: {json.dumps(checks)} ({section.get('bench_seconds', '-')} s)")
    return rows


def table(results: dict[str, Any]) -> str:
    meta = results.get("meta", {})
    lines = [
        "# Benchmark results",
        "",
        f"{meta.get('date', '')}, commit {meta.get('commit', '')}, Python "
        f"{meta.get('python', '')}, {meta.get('machine', '')}. Offline, on the embedded AWS "
        "(moto); figures, not pass/fail. See docs/performance.md.",
    ]
    sections = (
        ("Cold start (fresh process, import and init)", "cold_start", _cold_start),
        ("AWS calls per request (warm/cold key cache)", "aws_calls", _aws_calls),
        ("Overhead of GET memory (100 entries) over the floor", "overhead", _overhead),
        ("Learning through the local workflow", "learning", _learning),
        ("Memory text and read at scale", "scaling", _scaling),
        ("One Bot's memory pool at its peak, simulated (docs/scale.md)", "pool_sim", _pool_sim),
        ("Threads (seed 003): AWS calls and the context at scale", "threads", _threads),
        ("Load test (`make load`)", "load", _load),
        ("Cost per million turns (estimate)", "cost", _cost),
    )
    for title, key, render in sections:
        lines += ["", f"## {title}", ""]
        problem = _problem(results.get(key))
        lines += [problem] if problem else render(results[key])
    lines += ["", "## Other benchmarks", "", *_others(results), ""]
    return "\n".join(lines)


def _overhead(r: dict[str, Any]) -> list[str]:
    return [
        "| | service (real handler) | floor (boto3 + SDK) | ratio |",
        "|---|---:|---:|---:|",
        f"| wall ms | {_f(r['service_ms'])} | {_f(r['floor_ms'])} | {_f(r['ratio'], 2)} |",
        f"| own ms (outside moto) | {_f(r['service_own_ms'])} | {_f(r['floor_own_ms'])} | "
        f"{_f(r['own_ratio'], 2)} |",
    ]


def _learning(r: dict[str, Any]) -> list[str]:
    calls = r["calls_per_turn"]
    return [
        "| learned turns/s | DynamoDB | KMS | Step Functions | model | (calls per learned turn) |",
        "|---:|---:|---:|---:|---:|---|",
        f"| {_f(r['turns_per_s'])} | {calls['dynamodb']} | {calls['kms']} | "
        f"{calls['stepfunctions']} | {calls['model']} | {r['learned_turns']} turns, "
        f"{r['sessions']} sessions |",
    ]


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        _child(sys.argv[2], sys.argv[3])
        return
    results = run()
    RESULTS.write_text(json.dumps(results, indent=2, default=str) + "\n")
    text = table(results)
    TABLE.write_text(text)
    print(text)
    missing = [k for k, _m in BENCHMARKS if _problem(results.get(k))]
    if missing:
        print(f"\nNot measured in this run: {', '.join(missing)} (see above)")


if __name__ == "__main__":
    main()
