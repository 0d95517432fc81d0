"""Cold start: fresh-process import-and-init time of each Lambda handler against a bare
`import boto3` in the same run (median of N), and what dominates (`-X importtime`).

`functions`: one figure per API family function (api/families.py; `API_FAMILY` set as
template.yaml sets it), its samples interleaved with samples of `import boto3` so a busy
machine slows both alike: `ratio` is the median over the median of those boto3 samples;
`with_wiring_cpu_ratio` adds what the first request that needs services imports
(bootstrap, every service module). `first_request_ms` / `first_request_ratio` (next to
`ratio`, same interleaved boto3 samples) is the real cold start of one request: a fresh
process imports the handler and then serves one HTTP API event through `handler` (Mangum,
the Powertools decorators, routing, the route's validation, the services wired with boto3
clients, the error mapping): a GET of the family's first authenticated route without a token,
answered 401 before any AWS call (`first_request_route`, `first_request_status`).
`api` is the largest of them (the figure the cost model and the README use), `all_routes`
the handler serving every route (`make run`, no longer a Lambda function), `mcp` the MCP
function's own figure (not on the REST path), `quiet_machine` whether the 1-minute load
average stayed under the number of cores while measuring (`load_average`: before, after).

Also, for the function layout (ADR 0069): the framework floors (an empty FastAPI app under
Mangum with the Powertools Logger; Powertools' own HTTP resolver), one app per route family
(one router module, as one function per family would import it), and what the optional
libraries would add on top of the API handler's imports. Each figure has the wall-clock median
(`median_ms`, the number the README quotes) and the minimum CPU time (`cpu_min_ms`), which a
busy machine moves far less; compare ratios only within one run.

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
    "all_routes": "import functions.api.handler",
    "learning_steps": "import functions.learning_steps.handler",
    "baseline_boto3": "import boto3",
}
# With the API package's own cold-start measures first (api/_cold_start.py: FastAPI's OpenAPI
# models built on first use, no pydantic.v1 probe), as every family function has them.
FRAMEWORK = (
    "import agent_memory.api, fastapi, mangum; import agent_memory.observability; "
    "mangum.Mangum(fastapi.FastAPI(), lifespan='off')"
)
# One app with one router module: what a function serving only that family imports today.
FAMILY = (
    "import agent_memory.api, fastapi, mangum; "
    "from agent_memory.api.errors import install_error_handlers; "
    "from agent_memory.api.routers import {family} as family; app = fastapi.FastAPI(); "
    "app.include_router(family.router); install_error_handlers(app); "
    "mangum.Mangum(app, lifespan='off')"
)
# Imported after the API handler: their own cost, for what is kept off the cold path.
OPTIONAL = {
    "aws_xray_sdk": "aws_xray_sdk.core",
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


FUNCTION = "import functions.api.handler"
MCP = "import agent_memory_client.lambda_handler"
FUNCTION_RUNS = 15
WIRING = "import agent_memory.bootstrap"
WIRING_RUNS = 3
FIRST_REQUEST_RUNS = 7
# One request after the import, through the Lambda entry point: the family's first GET route
# that needs a token (its first GET route otherwise), path parameters filled in, no token.
FIRST_REQUEST = """import functions.api.handler as h
from fastapi.routing import APIRoute
from agent_memory.api import families
every = [r for router in families.routers(h.FAMILY) for r in router.routes]
routes = [r for r in every if isinstance(r, APIRoute) and "GET" in r.methods]
from agent_memory.api.deps import caller
def needs_token(dependant):
    return any(d.call is caller or needs_token(d) for d in dependant.dependencies)
secured = [r for r in routes if needs_token(r.dependant)]
import re
path = re.sub(r"{[^}]+}", "x-1", (secured or routes)[0].path)
class Context:
    function_name = "api"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:api"
    aws_request_id = "cold-start"
event = {"version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
    "headers": {"host": "api.example.com"}, "isBase64Encoded": False,
    "requestContext": {"http": {"method": "GET", "path": path, "protocol": "HTTP/1.1",
        "sourceIp": "192.0.2.1", "userAgent": "bench"}, "requestId": "cold-start",
        "stage": "$default", "routeKey": "$default", "accountId": "123456789012",
        "apiId": "api", "domainName": "api.example.com", "domainPrefix": "api",
        "time": "01/Dec/2026:00:00:00 +0000", "timeEpoch": 0}}
answer = h.handler(event, Context())
import sys
print(path, answer["statusCode"], file=sys.stderr)"""
# The function's environment as template.yaml sets it (so the services wire the adapters
# Lambda wires: S3 Vectors, Bedrock, Step Functions, KMS) and credentials from the
# environment as Lambda gives them; never used: the 401 is answered before any AWS call.
FIRST_REQUEST_ENV = {
    "AWS_ACCESS_KEY_ID": "cold-start",
    "AWS_SECRET_ACCESS_KEY": "cold-start",
    "TABLE_NAME": "agent-memory",
    "KMS_KEY_ID": "arn:aws:kms:us-east-1:123456789012:key/00000000-0000-0000-0000-000000000000",
    "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:agent-memory-learning",
    "DEFAULT_MODEL": "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0",
    "EMBEDDING_MODEL": "bedrock/amazon.titan-embed-text-v2:0",
    "VECTOR_BUCKET": "agent-memory-vectors-cold-start",
    "VECTOR_INDEX": "messages-1024",
    "POWERTOOLS_SERVICE_NAME": "agent-memory",
    "POWERTOOLS_METRICS_NAMESPACE": "AgentMemory",
    "LOG_LEVEL": "WARNING",
}


def _environment(family: str | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{ROOT / 'layers/core'}:{ROOT}"
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    env.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    # As template.yaml sets it for every function.
    env.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    env.pop("API_FAMILY", None)
    if family:
        env["API_FAMILY"] = family
    env.update(extra or {})
    return env


def _run_probe(
    statement: str, family: str | None = None, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PROBE.format(statement=statement)],
        capture_output=True,
        text=True,
        env=_environment(family, extra),
        cwd=ROOT,
        check=False,
    )


def _once(
    statement: str, family: str | None = None, extra: dict[str, str] | None = None
) -> tuple[float, float] | None:
    done = _run_probe(statement, family, extra)
    if done.returncode != 0:
        return None
    wall, cpu = done.stdout.strip().splitlines()[-1].split()
    return float(wall), float(cpu)


def _first_request(family: str) -> tuple[float, float] | None:
    return _once(_exec(FIRST_REQUEST), family, FIRST_REQUEST_ENV)


def _exec(source: str) -> str:
    """A multi-line probe as one statement of `_PROBE`."""
    return f"exec({source!r})"


def _first_route(family: str) -> tuple[str, int] | None:
    """The path the first-request probe asks for, and the status it was answered."""
    done = _run_probe(_exec(FIRST_REQUEST), family, FIRST_REQUEST_ENV)
    if done.returncode != 0:
        return None
    path, status = done.stderr.strip().splitlines()[-1].split()
    return path, int(status)


def _importtime(statement: str, family: str | None = None) -> list[tuple[str, int]]:
    """(module, cumulative microseconds) of every import `statement` makes."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        env=_environment(family),
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


def dominant_imports(
    statement: str, top: int = 8, family: str | None = None
) -> list[dict[str, Any]]:
    """The slowest top-level packages by cumulative import time."""
    packages: dict[str, int] = {}
    for name, cumulative in _importtime(statement, family):
        top_level = name.split(".")[0]
        if top_level not in {"functions", "agent_memory"}:
            packages[top_level] = max(packages.get(top_level, 0), cumulative)
    ranked = sorted(packages.items(), key=lambda kv: -kv[1])[:top]
    return [{"module": name, "cumulative_ms": round(us / 1000, 1)} for name, us in ranked]


def optional_import_ms() -> dict[str, float | None]:
    """What each optional library adds once the API handler is imported (`-X importtime`)."""
    costs: dict[str, float | None] = {}
    for name, module in OPTIONAL.items():
        found = dict(_importtime(f"{TARGETS['all_routes']}; import {module}"))
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


def _family_names() -> list[str]:
    sys.path.insert(0, str(ROOT / "layers/core"))
    from agent_memory.api.families import FAMILIES

    return [family.name for family in FAMILIES]


def functions(runs: int = FUNCTION_RUNS) -> dict[str, Any]:
    """Each family function's cold import, interleaved with `import boto3` (one sample of
    each in turn, `runs` rounds), so load that comes and goes weighs on all of them."""
    names = _family_names()
    for name in names:
        _once(FUNCTION, name)  # .pyc files exist before measuring
        _first_request(name)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in [*names, "boto3"]}
    first: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for round_ in range(runs):
        for name in [*names, "boto3"]:
            sample = _once("import boto3") if name == "boto3" else _once(FUNCTION, name)
            if sample is not None:
                samples[name].append(sample)
            if name != "boto3" and round_ < FIRST_REQUEST_RUNS:
                request = _first_request(name)
                if request is not None:
                    first[name].append(request)
    boto3 = samples.pop("boto3")
    baseline = statistics.median(wall for wall, _ in boto3) if boto3 else None
    cpu = min(c for _, c in boto3) if boto3 else None
    found: dict[str, Any] = {}
    for name, measured in samples.items():
        if not measured:
            found[name] = {"median_ms": None, "ratio": None, "error": "import failed"}
            continue
        median = round(statistics.median(wall for wall, _ in measured), 1)
        cpu_min = round(min(c for _, c in measured), 1)
        # The first request that needs services imports bootstrap (every service module):
        # import and wiring together, as a first request after a cold start pays them.
        wired = [_once(f"{FUNCTION}; {WIRING}", name) for _ in range(WIRING_RUNS)]
        wired_cpu = min((c for _, c in filter(None, wired)), default=None)
        served = first[name]
        first_ms = round(statistics.median(w for w, _ in served), 1) if served else None
        first_cpu = round(min(c for _, c in served), 1) if served else None
        route = _first_route(name)
        found[name] = {
            "median_ms": median,
            "ratio": _ratio(median, baseline),
            "first_request_ms": first_ms,
            "first_request_ratio": _ratio(first_ms, baseline),
            "first_request_route": route[0] if route else None,
            "first_request_status": route[1] if route else None,
            "cpu_min_ms": cpu_min,
            "cpu_ratio": _ratio(cpu_min, cpu),
            "first_request_cpu_min_ms": first_cpu,
            "first_request_cpu_ratio": _ratio(first_cpu, cpu),
            "with_wiring_cpu_min_ms": round(wired_cpu, 1) if wired_cpu else None,
            "with_wiring_cpu_ratio": _ratio(wired_cpu, cpu),
        }
    return {
        "functions": found,
        "baseline_boto3_interleaved": {
            "median_ms": round(baseline, 1) if baseline else None,
            "cpu_min_ms": round(cpu, 1) if cpu else None,
            "runs": len(boto3),
        },
    }


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def run(runs: int = RUNS) -> dict[str, Any]:
    _once("import boto3")  # warm the page cache and .pyc files before measuring
    load_before = _load()
    results: dict[str, Any] = functions()
    largest = max(
        (n for n, f in results["functions"].items() if f["median_ms"]),
        key=lambda n: results["functions"][n]["median_ms"],
        default=None,
    )
    results.update({name: _median(s, runs) for name, s in TARGETS.items()})
    baseline = results["baseline_boto3"]["median_ms"]
    cpu = results["baseline_boto3"].get("cpu_min_ms")
    if largest is not None:
        results["api"] = {"function": largest, **results["functions"][largest]}
        results["ratio"] = results["api"]["ratio"]
        results["cpu_ratio"] = results["api"]["cpu_ratio"]
    results["all_routes_ratio"] = _ratio(results["all_routes"]["median_ms"], baseline)
    results["learning_steps_ratio"] = _ratio(results["learning_steps"]["median_ms"], baseline)
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
    mcp = _median(MCP, max(3, runs // 2))
    results["mcp"] = {**mcp, "ratio": _ratio(mcp["median_ms"], baseline)}
    results["optional_import_ms"] = optional_import_ms()
    results["dominant_imports_api"] = dominant_imports(FUNCTION, family=largest)
    results["dominant_imports_all_routes"] = dominant_imports(TARGETS["all_routes"])
    load_after = _load()
    results["load_average"] = [load_before, load_after]
    results["quiet_machine"] = max(load_before, load_after) < (os.cpu_count() or 1)
    return results


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
