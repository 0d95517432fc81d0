"""Cost per million turns on AWS, computed from the measured call counts.

A turn, as an agent platform drives the service: one GET memory/text at the start of the
turn, one POST turns at its end, and the learning run that turn starts. The counts are the
benchmark's (`aws_calls`, warm, with a share of cold starts); what the benchmark cannot
measure offline is an assumption, named in ASSUMPTIONS and in the output. Prices are
published list prices (us-east-1), each with its source and the date it was read or
published: docs/performance.md discusses them.

`cost_by_turn` prices two more turns the same way, by component, from the counts their
benchmarks measure in the same run: the seed-002 chat turn (`by_turn.bot`, bench/confide.py
`bot_turn`) and the seed-003 thread turn (`by_turn.thread`, bench/threads.py `turn`).
"""

from __future__ import annotations

import math
from typing import Any

# (price in USD per unit, unit, source, date)
PRICES: dict[str, tuple[float, str, str, str]] = {
    "lambda_request": (
        0.20 / 1e6,
        "request",
        "aws.amazon.com/lambda/pricing (requests, x86 and arm64 alike), as quoted by "
        "cloudchipr.com/blog/aws-lambda-pricing",
        "2024",
    ),
    "lambda_gb_s_arm64": (
        0.0000133334,
        "GB-second",
        "aws.amazon.com/lambda/pricing (arm64, first 7.5 billion GB-s a month), as quoted by "
        "cloudchipr.com/blog/aws-lambda-pricing and artillery's lambda prices table",
        "2024",
    ),
    "api_gateway_http_request": (
        1.00 / 1e6,
        "request",
        "aws.amazon.com/api-gateway/pricing (HTTP API, first 300 million a month), as quoted "
        "by awsforengineers.com/blog/aws-api-gateway-pricing-explained",
        "2025-05-19",
    ),
    "dynamodb_wru": (
        0.625 / 1e6,
        "write request unit",
        "aws.amazon.com/dynamodb/pricing/on-demand (after the November 2024 cut), as quoted by "
        "airbyte.com/data-engineering-resources/dynamodb-pricing; a transactional write is 2 "
        "units per 1 KB (same page)",
        "2025-07-21",
    ),
    "dynamodb_rru": (
        0.125 / 1e6,
        "read request unit",
        "aws.amazon.com/dynamodb/pricing/on-demand, as quoted by airbyte.com (as above); a "
        "strongly consistent read is 1 unit per 4 KB, a transactional read 2",
        "2025-07-21",
    ),
    "kms_request": (
        0.03 / 10_000,
        "request",
        "aws.amazon.com/kms/pricing (symmetric requests), as quoted by "
        "wring.co/blog/aws-kms-pricing-guide and factualminds.com (us-east-1, June 2026)",
        "2026-06-13",
    ),
    "sfn_transition": (
        0.025 / 1000,
        "state transition",
        "aws.amazon.com/step-functions/pricing (Standard, US East (N. Virginia))",
        "read 2026",
    ),
    "sfn_express_request": (
        1.00 / 1e6,
        "Express execution started",
        "aws.amazon.com/step-functions/pricing (Express Workflows, US East (N. Virginia)), as "
        "quoted by wring.co/blog/aws-step-functions-pricing-guide",
        "2026-03-14",
    ),
    "sfn_express_gb_s": (
        0.00001667,
        "Express GB-second (64 MB chunks, 100 ms steps; first 1,000 hours)",
        "as above",
        "2026-03-14",
    ),
    "haiku_input_token": (
        1.00 / 1e6,
        "input token",
        "Claude Haiku 4.5 on Amazon Bedrock (global endpoint; regional +10%), as quoted by "
        "clauder-navi.com/en/bedrock-claude-cost",
        "2026",
    ),
    "haiku_output_token": (
        5.00 / 1e6,
        "output token",
        "as above",
        "2026",
    ),
}

ASSUMPTIONS: dict[str, Any] = {
    "latency_ms": {"dynamodb": 5.0, "kms": 8.0, "stepfunctions": 20.0},
    "model_latency_ms": 1500.0,
    "cold_share": 0.01,
    "chars_per_token": 4.0,
    "notes": [
        "Lambda duration = the measured own CPU time (the serving thread's, outside the "
        "emulator) at the function's CPU share (memory / 1,769 MB of a vCPU) + the counted "
        "AWS calls x the assumed latency of each; CallModel also waits for the model",
        "1% of invocations are cold starts: cold counts, plus the measured import time "
        "as billed INIT duration",
        "tokens = characters of the Bedrock Converse request (system, evidence, tool "
        "schema) and of the answer, / 4",
        "request units are estimated from item sizes (see bench/sizes.py); an Update is "
        "counted on what it writes",
        "each of the three step functions keeps its own key cache in AWS; the benchmark "
        "shares one, so warm KMS counts of learning are a lower bound",
    ],
}

PER_TURN = ("session_memory.text", "session.turn")

# An Express execution of the learning ASL carries ids only: the smallest memory chunk.
EXPRESS_MEMORY_GB = 64 / 1024


def workflow_type() -> str:
    """The learning state machine's type in template.yaml: what the cost model charges."""
    from infra.local.aws import state_machine_type

    return state_machine_type()


def workflow_usd(executions: float, transitions: float, seconds_per_execution: float) -> float:
    """Step Functions' charge for learning runs of the template's workflow type: Standard
    per state transition, Express per execution and its duration (64 MB, 100 ms steps)."""
    price = {name: value[0] for name, value in PRICES.items()}
    if workflow_type() != "EXPRESS":
        return transitions * price["sfn_transition"]
    billed_s = math.ceil(max(seconds_per_execution, 0.0) * 10) / 10
    per_run = (
        price["sfn_express_request"] + billed_s * EXPRESS_MEMORY_GB * price["sfn_express_gb_s"]
    )
    return executions * per_run


def _run_seconds(task_ms: float, transitions: float, executions: float) -> float:
    """An execution lasts as long as its tasks, plus the assumed latency of each step."""
    if executions <= 0:
        return 0.0
    per_step = float(ASSUMPTIONS["latency_ms"]["stepfunctions"])
    return (task_ms + transitions * per_step) / executions / 1000


# Managed alternatives, for one turn = 2 events written (the user's and the agent's
# message) and 1 retrieval of long-term memory. (price, unit, source, date)
ALTERNATIVES: dict[str, tuple[float, str, str, str]] = {
    "agentcore_event_before_2026_10_06": (
        0.25 / 1000,
        "new short-term event",
        "aws.amazon.com/bedrock/agentcore/pricing, as quoted by several AgentCore cost notes "
        "(accessed 2026-08-11)",
        "until 2026-10-05",
    ),
    "agentcore_ingested_gb": (
        1.00,
        "GB of short-term events ingested (each event counted as at least 12 KB)",
        "AWS Health notice and aws.amazon.com/bedrock/agentcore/pricing, as quoted by "
        "Yoonsoo Park, 'AgentCore Memory's New Pricing Is Cheaper Until Your Agent Rereads "
        "Its History'",
        "from 2026-10-06 (post of 2026-10-09)",
    ),
    "agentcore_retrieval": (
        0.50 / 1000,
        "long-term memory record retrieval",
        "aws.amazon.com/bedrock/agentcore/pricing, as quoted (accessed 2026-08-11)",
        "2026",
    ),
    "agentcore_record_month": (
        0.75 / 1000,
        "long-term record stored a month (built-in strategies; extraction model included)",
        "as above",
        "2026",
    ),
}
MEM0 = (
    "Mem0 Platform (mem0.ai/pricing, as quoted by third-party notes checked 2026-07-24 and "
    "2026-08-10): Hobby free (10,000 adds and 1,000 retrievals a month), Starter $19/month "
    "(50,000 adds, 5,000 retrievals), Growth $79, Pro $249, Enterprise custom. A million "
    "turns a month (a million adds and a million searches) is beyond the published plans."
)


def _mix(entry: dict[str, Any], field: str, cold: float) -> float:
    warm_value = float(entry["warm"].get(field) or 0)
    cold_value = float(entry["cold"].get(field) or 0)
    return (1 - cold) * warm_value + cold * cold_value


def _memory_gb(logical_id: str) -> float:
    from infra.local import aws

    resource = aws.template()["Resources"][logical_id]["Properties"]
    return float(resource.get("MemorySize", 128)) / 1024


# A Lambda function gets memory / 1,769 MB of a vCPU (one full vCPU at 1,769 MB: "Lambda
# allocates CPU power in proportion to the amount of memory configured", AWS Lambda
# Developer Guide, "Configure Lambda function memory", read 2026-12-02).
FULL_VCPU_GB = 1769 / 1024


def cpu_gb_s(cpu_ms: float, memory_gb: float) -> float:
    """GB-seconds of `cpu_ms` of CPU-bound work measured on one core here, on a function of
    `memory_gb`: below a full vCPU it runs memory/1,769 MB as fast, so it bills the same
    GB-seconds at any size up to 1,769 MB (half the memory, twice the time)."""
    return cpu_ms / 1000 * max(memory_gb, FULL_VCPU_GB)


def lambda_gb_s(memory_gb: float, *, cpu_ms: float, wait_ms: float) -> float:
    """GB-seconds of one invocation: its CPU-bound own time at its CPU share, and its waits
    (AWS calls, the model) at its memory."""
    return cpu_gb_s(cpu_ms, memory_gb) + wait_ms / 1000 * memory_gb


def cpu_wall_ms(cpu_ms: float, memory_gb: float) -> float:
    """How long `cpu_ms` of CPU-bound work (one core here) lasts on a function of
    `memory_gb`: memory / 1,769 MB of a vCPU, a full one at most for one thread."""
    return cpu_ms * max(1.0, FULL_VCPU_GB / memory_gb)


def _steps_memory_gb() -> float:
    return max(
        _memory_gb(name)
        for name in ("LoadEvidenceFunction", "ApplyLearningFunction", "RecordFailureFunction")
    )


def steps_wall_ms(cpu_ms: float, wait_ms: float) -> float:
    """How long a learning run's steps last on Lambda (what an Express run is billed for):
    their CPU at the steps' CPU share, plus their waits."""
    return cpu_wall_ms(cpu_ms, _steps_memory_gb()) + wait_ms


def steps_gb_s(cpu_ms: float, wait_ms: float, model_ms: float) -> float:
    """GB-seconds of a learning run's step Lambdas: the model wait on CallModelFunction's
    memory; the steps' own (CPU) time and AWS calls on the largest of the other steps'
    (CallModel's own part included: an upper bound)."""
    others = _steps_memory_gb()
    return lambda_gb_s(others, cpu_ms=cpu_ms, wait_ms=wait_ms) + model_ms / 1000 * _memory_gb(
        "CallModelFunction"
    )


def _duration_ms(entry: dict[str, Any], cold: float, own: float) -> float:
    latency = ASSUMPTIONS["latency_ms"]
    return own + sum(
        float(latency[s]) * _mix(entry, s, cold) for s in ("dynamodb", "kms", "stepfunctions")
    )


def per_turn_units(results: dict[str, Any]) -> dict[str, float]:
    """What one turn uses, from the measured counts and the assumptions."""
    calls = results["aws_calls"]
    cold = float(ASSUMPTIONS["cold_share"])
    init_ms = float(results.get("cold_start", {}).get("api", {}).get("median_ms") or 0)
    steps_init_ms = float(
        results.get("cold_start", {}).get("learning_steps", {}).get("median_ms") or 0
    )
    learning = calls["learning.turn"]
    api = [calls[name] for name in PER_TURN]
    units: dict[str, float] = {
        "api_requests": float(len(api)),
        "lambda_requests": len(api) + _mix(learning, "lambda_invocations", cold),
        "dynamodb_rru": sum(_mix(e, "rru_estimate", cold) for e in [*api, learning]),
        "dynamodb_wru": sum(_mix(e, "wru_estimate", cold) for e in [*api, learning]),
        "dynamodb_requests": sum(_mix(e, "dynamodb", cold) for e in [*api, learning]),
        "kms_requests": sum(_mix(e, "kms", cold) for e in [*api, learning]),
        "state_transitions": _mix(learning, "state_transitions", cold),
        "executions": _mix(learning, "executions", cold),
        "model_calls": _mix(learning, "model", cold),
    }
    api_cpu_ms = sum(_mix(e, "own_ms", cold) for e in api)
    api_ms = sum(_duration_ms(e, cold, _mix(e, "own_ms", cold)) + cold * init_ms for e in api)
    tasks = float(learning["warm"].get("lambda_invocations") or 3)
    steps_own = sum((learning["warm"].get("task_own_ms") or {}).values())
    steps_work_ms = _duration_ms(learning, cold, steps_own) + tasks * cold * steps_init_ms
    steps_model_ms = units["model_calls"] * ASSUMPTIONS["model_latency_ms"]
    units["api_lambda_ms"] = api_ms
    units["steps_lambda_ms"] = steps_wall_ms(steps_own, steps_work_ms - steps_own) + steps_model_ms
    units["lambda_gb_s"] = lambda_gb_s(
        _memory_gb("ApiFunction"), cpu_ms=api_cpu_ms, wait_ms=api_ms - api_cpu_ms
    ) + steps_gb_s(steps_own, steps_work_ms - steps_own, steps_model_ms)
    chars = ASSUMPTIONS["chars_per_token"]
    units["input_tokens"] = _mix(learning, "prompt_chars", cold) / chars
    units["output_tokens"] = _mix(learning, "reply_chars", cold) / chars
    return {k: round(v, 4) for k, v in units.items()}


def cost_per_million_turns(results: dict[str, Any]) -> dict[str, Any]:
    """USD per million turns, by line, from `per_turn_units` and PRICES."""
    units = per_turn_units(results)
    price = {name: value[0] for name, value in PRICES.items()}
    million = 1e6
    lines = {
        "lambda_requests": units["lambda_requests"] * price["lambda_request"],
        "lambda_gb_s": units["lambda_gb_s"] * price["lambda_gb_s_arm64"],
        "api_gateway": units["api_requests"] * price["api_gateway_http_request"],
        "dynamodb": units["dynamodb_rru"] * price["dynamodb_rru"]
        + units["dynamodb_wru"] * price["dynamodb_wru"],
        "kms": units["kms_requests"] * price["kms_request"],
        "stepfunctions": workflow_usd(
            units["executions"],
            units["state_transitions"],
            _run_seconds(units["steps_lambda_ms"], units["state_transitions"], units["executions"]),
        ),
        "model_tokens_haiku": units["input_tokens"] * price["haiku_input_token"]
        + units["output_tokens"] * price["haiku_output_token"],
    }
    usd = {k: round(v * million, 2) for k, v in lines.items()}
    usd["total"] = round(sum(lines.values()) * million, 2)
    usd["total_without_model"] = round(usd["total"] - usd["model_tokens_haiku"], 2)
    return {
        # by_turn: the seed-002 chat turn and the seed-003 thread turn.
        "per_million_turns_usd": usd | {"by_turn": cost_by_turn(results)},
        "alternatives_per_million_turns_usd": alternatives(),
        "units_per_turn": units,
        "assumptions": ASSUMPTIONS,
        "prices": {
            name: {"usd": value, "per": unit, "source": source, "date": date}
            for name, (value, unit, source, date) in PRICES.items()
        },
        "estimate": True,
    }


def alternatives() -> dict[str, Any]:
    """Managed memory services' list prices for the same million turns (memory only: the
    agent's own model calls are not included, as they are not in `total_without_model`)."""
    price = {name: value[0] for name, value in ALTERNATIVES.items()}
    event_gb = 12_000 / 1e9  # the 12 KB minimum per event, decimal GB as AWS bills
    before = 2 * price["agentcore_event_before_2026_10_06"] + price["agentcore_retrieval"]
    after = 2 * event_gb * price["agentcore_ingested_gb"] + price["agentcore_retrieval"]
    return {
        "agentcore_memory_until_2026_10_05": round(before * 1e6, 2),
        "agentcore_memory_from_2026_10_06": round(after * 1e6, 2),
        "agentcore_note": (
            "2 events and 1 long-term retrieval per turn; plus $0.75 per 1,000 long-term "
            "records a month, and short-term storage/retrieval by the GB after 2026-10-06"
        ),
        "mem0": MEM0,
        "prices": {
            name: {"usd": value, "per": unit, "source": source, "date": date}
            for name, (value, unit, source, date) in ALTERNATIVES.items()
        },
    }


# A confide (seed 002, bench/confide.py): the API Lambda waits for the memory Bot's model
# (at most the 15 s window); these are the figures the benchmark cannot measure offline.
CONFIDE_ASSUMPTIONS: dict[str, Any] = {
    "model_latency_ms": 1500.0,
    "notes": [
        "one confide is one API request (API Gateway + the ApiChatsFunction), its duration the "
        "measured own time + the counted AWS calls x ASSUMPTIONS' latencies + the model's",
        "its learned turn is the Step Functions run its Turn's completion releases: the "
        "step Lambdas (the model wait on CallModelFunction's memory size, their calls on "
        "the other steps'); the complete request itself is the platform's, only its calls "
        "count",
        "tokens = characters of the model's request and answer / 4, priced as Claude Haiku "
        "4.5 (PRICES); cold starts are not included (see cost_per_million_turns)",
    ],
}


def cost_per_million_confides(report: dict[str, Any]) -> dict[str, Any]:
    """USD per million confides, by line, from bench/confide.py's counts and PRICES: the
    confide request alone, and with the learned turn each confide saves."""
    price = {name: value[0] for name, value in PRICES.items()}
    latency = ASSUMPTIONS["latency_ms"]
    chars = ASSUMPTIONS["chars_per_token"]
    model_ms = float(CONFIDE_ASSUMPTIONS["model_latency_ms"])

    def lines(calls: dict[str, Any], *, api: bool) -> dict[str, float]:
        dynamodb, kms = float(calls["dynamodb"]), float(calls["kms"])
        calls_ms = dynamodb * latency["dynamodb"] + kms * latency["kms"]
        waited = model_ms * float(calls["model"])
        if api:
            own = float(calls.get("own_ms", 0.0))
            ms = own + calls_ms + waited
            gb_s = lambda_gb_s(
                _memory_gb("ApiChatsFunction"), cpu_ms=own, wait_ms=calls_ms + waited
            )
            requests = 1.0
        else:
            # The steps' own CPU, as `component_usd` bills a learning run.
            own = float(calls.get("task_own_ms", 0.0))
            ms = steps_wall_ms(own, calls_ms + waited)
            gb_s = steps_gb_s(own, calls_ms, waited)
            requests = float(calls["lambda_invocations"])
        return {
            "lambda_requests": requests * price["lambda_request"],
            "lambda_gb_s": gb_s * price["lambda_gb_s_arm64"],
            "api_gateway": (1.0 if api else 0.0) * price["api_gateway_http_request"],
            "dynamodb": float(calls["rru_estimate"]) * price["dynamodb_rru"]
            + float(calls["wru_estimate"]) * price["dynamodb_wru"],
            "kms": float(calls["kms"]) * price["kms_request"],
            "stepfunctions": workflow_usd(
                float(calls.get("executions", 1.0 if calls.get("state_transitions") else 0.0)),
                float(calls.get("state_transitions", 0.0)),
                _run_seconds(0.0 if api else ms, float(calls.get("state_transitions", 0.0)), 1.0),
            ),
            "model_tokens_haiku": float(calls["prompt_chars"]) / chars * price["haiku_input_token"]
            + float(calls["reply_chars"]) / chars * price["haiku_output_token"],
        }

    def usd(found: dict[str, float]) -> dict[str, float]:
        out = {k: round(v * 1e6, 2) for k, v in found.items()}
        out["total"] = round(sum(found.values()) * 1e6, 2)
        out["total_without_model"] = round(out["total"] - out["model_tokens_haiku"], 2)
        return out

    confide = lines(report["per_confide"], api=True)
    learned = lines(report["per_learned_turn"], api=False)
    both = {k: confide[k] + learned[k] for k in confide}
    return {
        "per_million_confides_usd": usd(confide),
        "per_million_confides_with_learning_usd": usd(both),
        "assumptions": {**CONFIDE_ASSUMPTIONS, "latency_ms": latency, "chars_per_token": chars},
        "estimate": True,
    }


# Observational memory (seed 003, "Cost"): the shape of its model calls over one
# conversation, simulated with the service's own rules (domain/observation.py).
OBSERVER_ASSUMPTIONS: dict[str, Any] = {
    "turns": 50,
    "turn_tokens": 400,
    "observation_ratio": 0.1,
    "reflection_ratio": 0.5,
    "prompt_overhead_tokens": 600,
    "transitions_per_run": 5,
    "notes": [
        "a turn is one user message and one answer, turn_tokens together",
        "the observer writes observation_ratio tokens per message token it reads; a "
        "reflection keeps reflection_ratio of the log",
        "each observer, reflector or title call is one learning execution "
        "(transitions_per_run Standard state transitions); a title rewrite is part of the "
        "observer's call, not an extra one",
        "the observer reads the new messages, its prompt (prompt_overhead_tokens) and the "
        "log so far (at most 10,000 tokens, service/observer.LOG_SHOWN_CHARS)",
    ],
}


def observer_calls(
    observational_memory: Any = True,
    *,
    turns: int | None = None,
    turn_tokens: int | None = None,
) -> dict[str, Any]:
    """Observer, reflector and title calls (and their tokens) over one conversation of
    `turns` turns: one observer call per `bufferTokens` of new messages (or per turn with
    `bufferOnIdle`), one reflector call each time the log reaches its threshold's share,
    one title call (generateTitle)."""
    from agent_memory.domain import observation as rules
    from agent_memory.domain.memory_options import effective

    a = OBSERVER_ASSUMPTIONS
    turns = int(turns if turns is not None else a["turns"])
    size = int(turn_tokens if turn_tokens is not None else a["turn_tokens"])
    options = effective({"options": {"observationalMemory": observational_memory}})["options"]
    t = rules.thresholds(options["observationalMemory"])
    pending = log = 0.0
    observed = reflected = 0
    read = written = 0.0
    for _turn in range(turns):
        pending += size
        if not rules.wants_observation(int(pending), t, turn_ended=True):
            continue
        observed += 1
        read += pending + a["prompt_overhead_tokens"] + min(log, 10_000)
        new = pending * a["observation_ratio"]
        written += new
        log += new
        pending = 0
        if log >= t.reflect_from:
            reflected += 1
            read += log + a["prompt_overhead_tokens"]
            log *= a["reflection_ratio"]
            written += log
    runs = observed + reflected + 1
    return {
        "observer_calls": observed,
        "reflector_calls": reflected,
        "title_calls": 1,
        "input_tokens": round(read),
        "output_tokens": round(written),
        "state_transitions": runs * a["transitions_per_run"],
        "buffer_every_tokens": t.buffer_every,
    }


def cost_per_million_conversations_observer(observational_memory: Any = True) -> dict[str, Any]:
    """USD per million conversations of the observer's model calls and their workflow runs
    (Haiku 4.5 prices), with the seed's defaults and with bufferOnIdle."""
    price = {name: value[0] for name, value in PRICES.items()}

    def usd(calls: dict[str, Any]) -> dict[str, float]:
        model = (
            calls["input_tokens"] * price["haiku_input_token"]
            + calls["output_tokens"] * price["haiku_output_token"]
        )
        runs = calls["state_transitions"] / OBSERVER_ASSUMPTIONS["transitions_per_run"]
        steps = workflow_usd(
            runs,
            calls["state_transitions"],
            _run_seconds(runs * ASSUMPTIONS["model_latency_ms"], calls["state_transitions"], runs),
        )
        return {
            "model_tokens_haiku": round(model * 1e6, 2),
            "stepfunctions": round(steps * 1e6, 2),
            "total": round((model + steps) * 1e6, 2),
        }

    shapes = {
        "defaults": observer_calls(observational_memory),
        "bufferOnIdle": observer_calls({"observation": {"bufferOnIdle": True}}),
    }
    return {
        "per_conversation": shapes,
        "per_million_conversations_usd": {k: usd(v) for k, v in shapes.items()},
        "assumptions": OBSERVER_ASSUMPTIONS,
        "estimate": True,
    }


# Semantic recall (seed 003 "Cost": one embedding per saved message and per turn), priced
# per million turns with the deployment's Titan v2 (1,024 dimensions) and S3 Vectors.
RECALL_PRICES: dict[str, tuple[float, str, str, str]] = {
    "titan_v2_input_token": (
        0.02 / 1e6,
        "input token",
        "Amazon Titan Text Embeddings V2 on Amazon Bedrock (on demand, us-east-1), "
        "aws.amazon.com/bedrock/pricing",
        "2026",
    ),
    "s3vectors_put_gb": (
        0.20,
        "GB written (each PutVectors billed at 128 KB at least)",
        "aws.amazon.com/s3/pricing (S3 Vectors), as quoted by caylent.com and "
        "exploreagentic.ai/insights/s3-vectors-enterprise-rag",
        "2026",
    ),
    "s3vectors_query": (
        2.50 / 1e6,
        "QueryVectors call (data processed not included)",
        "as above (oflight.co.jp S3 Vectors guide, us-east-1)",
        "2026-04",
    ),
    "s3vectors_storage_gb_month": (0.06, "GB-month", "as above", "2026"),
}
RECALL_ASSUMPTIONS: dict[str, Any] = {
    "messages_per_turn": 2,
    "tokens_per_embedded_message": 80,
    "tokens_per_query": 20,
    "vector_bytes": 1024 * 4 + 200,
    # The candidates and the message before each (LoCoMo's mean, bench/locomo.py).
    "candidates_read": 144,
    "notes": [
        "a turn saves one user message and one answer in one save; the messages are "
        "indexed in batches (service/recall.py RecallStep, domain/recall_batches.py): once "
        "a multiple of lastMessages is reached (with the observer on: of what fills one "
        "PutVectors' billed 128 KB, 30 vectors at 1,024 dimensions), one PutVectors a batch, "
        "riding in the observer's execution or a run of its own; an idle thread's tail (5 "
        "minutes without a save) by the schedule's flush, one run and one PutVectors; every "
        "save first puts a small pending row (1 WRU). by_turn.thread measures it (bench/"
        "threads.py: a 10-turn conversation, the flush shared by its turns); the "
        "per-million-turn lines below charge a turn its share of one full batch",
        "each message is embedded with the one before it (tokens_per_embedded_message)",
        "the context embeds the new message once, queries once (top 100) and reads the "
        "candidates' text and the message before each for the lexical re-ranking (two "
        "BatchGetItem calls, 144 rows on LoCoMo, strongly consistent, under 4 KB each: "
        "144 read units)",
        "the execution's state transitions are the observer's transitions_per_run",
    ],
}


def cost_per_million_turns_recall() -> dict[str, Any]:
    """USD per million turns of semantic recall's embeddings, vector writes and queries,
    the candidates' reads and the background step's workflow runs."""
    p = {name: value[0] for name, value in (PRICES | RECALL_PRICES).items()}
    a = RECALL_ASSUMPTIONS
    saved = a["messages_per_turn"] * a["tokens_per_embedded_message"]
    embed_tokens = saved + a["tokens_per_query"]
    # Messages are indexed in batches: with the observer on, as many vectors as fill one
    # PutVectors' billed minimum (domain/recall_batches.batch_size); a turn pays its share.
    from agent_memory.domain.recall_batches import PUT_MIN_BYTES, VECTOR_OVERHEAD_BYTES, batch_size

    batch = batch_size(None, (a["vector_bytes"] - VECTOR_OVERHEAD_BYTES) // 4)
    put_gb = a["messages_per_turn"] * max(PUT_MIN_BYTES, batch * a["vector_bytes"]) / batch
    put_gb /= 1024**3
    transitions = OBSERVER_ASSUMPTIONS["transitions_per_run"]
    lines = {
        "embeddings_titan_v2": embed_tokens * p["titan_v2_input_token"],
        "s3vectors_put": put_gb * p["s3vectors_put_gb"],
        "s3vectors_query": p["s3vectors_query"],
        "candidate_reads": a["candidates_read"] * p["dynamodb_rru"],
        # At most one execution per save (the observer's carries the indexing).
        "workflow_transitions": workflow_usd(
            1.0, transitions, _run_seconds(500.0, transitions, 1.0)
        ),
    }
    storage_gb_per_million_messages = 1e6 * a["vector_bytes"] / 1024**3
    return {
        "per_million_turns_usd": {k: round(v * 1e6, 2) for k, v in lines.items()}
        | {"total": round(sum(lines.values()) * 1e6, 2)},
        "storage_usd_per_million_messages_month": round(
            storage_gb_per_million_messages * p["s3vectors_storage_gb_month"], 3
        ),
        "prices": RECALL_PRICES,
        "assumptions": RECALL_ASSUMPTIONS,
        "estimate": True,
    }


# --- Cost by turn: the seed-002 chat turn and the seed-003 thread turn -------------------

# What the benchmarks cannot measure offline, for the two turns below (with ASSUMPTIONS).
BY_TURN_ASSUMPTIONS: dict[str, Any] = {
    "embedding_latency_ms": 30.0,
    "s3vectors_latency_ms": 15.0,
    "notes": [
        "each component is priced from the counts its benchmark measured in the same run "
        "(bench/confide.py `bot_turn`, bench/threads.py `turn`), warm, per turn",
        "an API request: API Gateway + one Lambda invocation of its route family's function "
        "(ApiChatsFunction, ApiThreadsFunction: template.yaml's memory size), its duration "
        "the measured own time + its AWS calls x ASSUMPTIONS' latencies (calls made side by "
        "side counted one after the other: an upper bound) + the model's when it waits on one",
        "a background run: its step Lambdas (the model wait on CallModelFunction's memory "
        "size, their own time and calls on the other steps'), and its workflow (Express: per "
        "execution and duration)",
        "own times are CPU-bound work as measured on one core here; a Lambda's CPU share is "
        "its memory / 1,769 MB, so below 1,769 MB they take 1,769 MB / memory as long and "
        "bill the GB-seconds of a full vCPU (cpu_gb_s); waits (AWS calls, the model) bill "
        "the function's memory",
        "model tokens = characters of the Bedrock Converse request and answer / 4, priced as "
        "Claude Haiku 4.5, reported apart (model_tokens_haiku); embeddings as Titan v2 "
        "tokens (characters / 4), S3 Vectors per PutVectors (128 KB at least) and per query",
        "cold starts are not included (the seed-000 figure charges 1%)",
    ],
}
TURN_TARGET_USD = 52.0
_TURNS = {
    # by_turn name: (results key, section, the API function serving its routes)
    "bot": ("confide", "bot_turn", "ApiChatsFunction"),
    # The same turn with the Bot's answer in its own request (`items`, then `complete`).
    "bot_items_apart": ("confide", "bot_turn_items_apart", "ApiChatsFunction"),
    "thread": ("threads", "turn", "ApiThreadsFunction"),
}


def component_usd(part: dict[str, Any], *, function: str) -> dict[str, float]:
    """USD of one component of a turn (one API request, or the background runs it
    starts), by line, from its measured counts: a request has `requests`, a run
    `lambda_invocations`."""
    p = {name: value[0] for name, value in (PRICES | RECALL_PRICES).items()}
    latency = ASSUMPTIONS["latency_ms"]
    extra = BY_TURN_ASSUMPTIONS
    chars = float(ASSUMPTIONS["chars_per_token"])

    def n(name: str) -> float:
        return float(part.get(name) or 0.0)

    api = "requests" in part
    calls_ms = (
        n("dynamodb") * latency["dynamodb"]
        + n("kms") * latency["kms"]
        + n("stepfunctions") * latency["stepfunctions"]
        + n("embed_calls") * extra["embedding_latency_ms"]
        + (n("vector_puts") + n("vector_queries")) * extra["s3vectors_latency_ms"]
        + n("model") * float(ASSUMPTIONS["model_latency_ms"])
    )
    own = n("own_ms") if api else n("task_own_ms")
    model_ms = n("model") * float(ASSUMPTIONS["model_latency_ms"])
    waits_ms = calls_ms - model_ms
    put_bytes = n("vectors_written") * RECALL_ASSUMPTIONS["vector_bytes"]
    put_gb = max(n("vector_puts") * 128 * 1024, put_bytes) / 1024**3 if n("vector_puts") else 0.0
    transitions = n("state_transitions")
    lines = {
        "lambda_requests": (n("requests") if api else n("lambda_invocations"))
        * p["lambda_request"],
        "lambda_gb_s": (
            lambda_gb_s(_memory_gb(function), cpu_ms=own, wait_ms=calls_ms)
            if api
            else steps_gb_s(own, waits_ms, model_ms)
        )
        * p["lambda_gb_s_arm64"],
        "api_gateway": n("requests") * p["api_gateway_http_request"],
        "dynamodb": n("rru_estimate") * p["dynamodb_rru"] + n("wru_estimate") * p["dynamodb_wru"],
        "kms": n("kms") * p["kms_request"],
        "stepfunctions": 0.0
        if api
        else workflow_usd(
            n("executions"),
            transitions,
            _run_seconds(steps_wall_ms(own, calls_ms), transitions, n("executions")),
        ),
        "embeddings": n("embedded_chars") / chars * p["titan_v2_input_token"],
        "s3vectors": put_gb * p["s3vectors_put_gb"] + n("vector_queries") * p["s3vectors_query"],
        "model_tokens_haiku": n("prompt_chars") / chars * p["haiku_input_token"]
        + n("reply_chars") / chars * p["haiku_output_token"],
    }
    return lines


def _per_million(lines: dict[str, float]) -> dict[str, float]:
    out = {k: round(v * 1e6, 2) for k, v in lines.items()}
    out["total"] = round(sum(lines.values()) * 1e6, 2)
    out["total_without_model"] = round(out["total"] - out["model_tokens_haiku"], 2)
    return out


def cost_by_turn(results: dict[str, Any]) -> dict[str, Any]:
    """USD per million turns of the seed-002 chat turn (`bot`) and the seed-003 thread turn
    (`thread`), by line and by component, from the counts measured in the same run; a turn
    whose benchmark did not run says so."""
    found: dict[str, Any] = {}
    for name, (key, section, function) in _TURNS.items():
        measured = (results.get(key) or {}).get(section)
        if not isinstance(measured, dict) or "per_component" not in measured:
            found[name] = {"missing": f"{key}.{section} is not in these results"}
            continue
        parts = {
            part: component_usd(counts, function=function)
            for part, counts in measured["per_component"].items()
        }
        total = {line: sum(p[line] for p in parts.values()) for line in next(iter(parts.values()))}
        usd = _per_million(total)
        found[name] = {
            **usd,
            "per_component": {part: _per_million(lines) for part, lines in parts.items()},
            "target_without_model": TURN_TARGET_USD,
            "within_target": usd["total_without_model"] <= TURN_TARGET_USD,
            "turns_measured": measured.get("turns"),
        }
    found["assumptions"] = BY_TURN_ASSUMPTIONS
    return found
