"""The memory Bot's confide (seed 002) on the embedded AWS, through the HTTP app, with a
zero-latency model (what is measured is the service, not a provider):

- `latency`: `POST /v1/chats/{id}/turns/{turn}/confide` wall and own (outside the emulator)
  milliseconds, p50 and p99 over `CONFIDES` confides on warm services, each in a fresh open
  Turn (so each saves its learning wait).
- `per_confide`: AWS calls of one confide (the token lookup and its rate-limit write, the
  chat and turn, settings and spend, the confession, the encrypted call log, the charge and
  the learning wait), request units (estimated from item sizes) and the model's request and
  answer in characters.
- `per_learned_turn`: AWS calls of `POST .../complete` of a confided Turn plus every call of
  the learning steps it releases (LoadEvidence -> CallModel -> ApplyLearning run by moto's
  Step Functions in this process, on their own boto3 session), the model calls, the state
  transitions and the Lambda tasks, one turn after the other (each run ends before the
  next turn completes). Warm: one turn is learned before the measurement.
- `cost`: USD per million confides (bench/cost_model.py), with and without their learned turn.

    python -m bench.confide      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from bench.support import AwsCalls, Emulator, timed

CONFIDES = 200
LEARNED = 20
MODEL = "openai/bench-memory-bot"
# Per million tokens in micro-USD, as MODEL_PRICES names them (Claude Haiku 4.5's list price,
# bench/cost_model.py): the charge path runs as a deployment's would.
PRICES = json.dumps({MODEL: [1_000_000, 5_000_000]})
DEADLINE_S = 60.0


@dataclass
class ZeroLatencyMemoryBot:
    """Answers every memory Bot task at once, with a usage of about 4 characters a token."""

    name: str = MODEL
    calls: int = 0
    prompt_chars: int = 0
    reply_chars: int = 0

    def propose(self, request: Any) -> Any:
        from agent_memory.ports import ModelReply, Usage

        self.calls += 1
        if request.task == "confide_answer":
            answer: dict[str, Any] = {"answer": "I hear you. Tell the person plainly and fix it."}
        elif request.task == "learning_changes":
            lines = [json.loads(x) for x in request.user.splitlines() if x.startswith("{")]
            person = [x["id"] for x in lines if x.get("role") == "user"][:1]
            fact = {"op": "fact", "content": "Ana takes the 8:10 train.", "topics": ["commute"]}
            answer = {"changes": [fact | {"sources": person}] if person else []}
        else:
            answer = {"input": None, "used": []}
        text = json.dumps(answer)
        asked = len(request.system) + len(request.user)
        self.prompt_chars += asked
        self.reply_chars += len(text)
        usage = Usage(input_tokens=asked // 4, output_tokens=len(text) // 4)
        return ModelReply(text=text, model=self.name, usage=usage)


@dataclass
class OneModel:
    model: Any

    def resolve(self, name: str | None) -> Any:
        return self.model if name == MODEL else None


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 2)


def _wait(sfn: Any, machine_arn: str) -> list[dict[str, Any]]:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        listed = sfn.list_executions(stateMachineArn=machine_arn)["executions"]
        if all(e["status"] != "RUNNING" for e in listed):
            return list(listed)
        time.sleep(0.05)
    raise RuntimeError(f"executions still running after {DEADLINE_S} s")


def _transitions(sfn: Any, arn: str) -> int:
    events = sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
    return sum(1 for e in events if str(e["type"]).endswith("StateEntered"))


def run(confides: int = CONFIDES, learned: int = LEARNED) -> dict[str, Any]:
    import boto3
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters, build_services, step_services
    from agent_memory.config import load_settings
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal
    from bench.learning import _dispatch_hook
    from infra.local import aws

    with aws.embedded_aws() as root:
        local = aws.provision(root)
        Emulator.install()  # own time: outside moto
        environment = {**local.environment(), "DEFAULT_MODEL": "local/rules"}
        settings = load_settings(environment | {"MODEL_PRICES": PRICES})
        model = ZeroLatencyMemoryBot()
        api_calls, step_calls = AwsCalls(), AwsCalls()
        api_session = boto3.session.Session(region_name=aws.REGION)
        step_session = boto3.session.Session(region_name=aws.REGION)
        api_calls.install(api_session._session)
        step_calls.install(step_session._session)
        catalog = OneModel(model)
        api = build_services(settings, replace(aws_adapters(settings, api_session), models=catalog))
        steps = build_services(
            settings, replace(aws_adapters(settings, step_session), models=catalog)
        )
        step_services.use(steps)
        tasks = [0]
        aws._invoke_hooks.insert(0, _dispatch_hook(tasks))
        sfn = root.client("stepfunctions")
        try:
            api.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
            api.org_settings.patch(SERVICE_ADMIN, "bench", {"botMemoryModel": MODEL})
            created = api.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
            headers = {"Authorization": f"Bearer {created.token.secret}"}
            ana = Principal("ana", "bench", "member")
            bot = api.bots.create_bot(ana, "Bench", {})["id"]
            chat = api.bots.create_chat(ana, bot, None, "chat")["id"]
            base = f"/v1/chats/{chat}/turns"

            def open_turn(n: int) -> str:
                text = f"Note {n}: I take the 8:10 train on day {n}."
                return str(api.bots.start_turn(ana, chat, text)["turn"]["id"])

            with TestClient(create_app(lambda: api), raise_server_exceptions=False) as http:

                def confide(turn_id: str) -> Any:
                    body = {"text": "I booked the wrong day and did not say so."}
                    answer = http.post(f"{base}/{turn_id}/confide", json=body, headers=headers)
                    assert answer.status_code == 200, answer.text
                    assert answer.json()["calm"] is False, answer.text
                    return answer

                # Warm: a confide and its learned turn before anything is measured.
                first = open_turn(0)
                confide(first)
                http.post(f"{base}/{first}/complete", json={}, headers=headers)
                _wait(sfn, local.state_machine_arn)

                turns = [open_turn(n) for n in range(1, confides + 1)]
                walls: list[float] = []
                owns: list[float] = []
                api_calls.reset()
                model.calls = model.prompt_chars = model.reply_chars = 0
                for turn_id in turns:
                    _answer, spent = timed(lambda t=turn_id: confide(t))
                    walls.append(spent.ms)
                    owns.append(spent.own_ms)
                shot = api_calls.snapshot()
                per_confide = {
                    "dynamodb": round(shot["dynamodb"] / confides, 2),
                    "kms": round(shot["kms"] / confides, 2),
                    "by_operation": {
                        k: round(v / confides, 2) for k, v in shot["by_operation"].items()
                    },
                    "rru_estimate": round(shot["rru_estimate"] / confides, 2),
                    "wru_estimate": round(shot["wru_estimate"] / confides, 2),
                    "model": round(model.calls / confides, 2),
                    "prompt_chars": round(model.prompt_chars / confides, 1),
                    "reply_chars": round(model.reply_chars / confides, 1),
                    "own_ms": round(sum(owns) / confides, 2),
                }

                # Learned turns: complete the first `learned` confided turns, in order.
                before = {e["executionArn"] for e in _wait(sfn, local.state_machine_arn)}
                api_calls.reset()
                step_calls.reset()
                model.calls = model.prompt_chars = model.reply_chars = 0
                tasks[0] = 0
                # One at a time, as one chat's turns end: runs racing on one chat's read
                # position would count their re-reads, not a learned turn.
                for turn_id in turns[:learned]:
                    done = http.post(f"{base}/{turn_id}/complete", json={}, headers=headers)
                    assert done.status_code == 200, done.text
                    _wait(sfn, local.state_machine_arn)
                runs = [
                    e
                    for e in _wait(sfn, local.state_machine_arn)
                    if e["executionArn"] not in before
                ]
            succeeded = sum(1 for e in runs if e["status"] == "SUCCEEDED")
            api_shot, step_shot = api_calls.snapshot(), step_calls.snapshot()
            n = max(1, len(runs))
            per_learned_turn = {
                "dynamodb": round((api_shot["dynamodb"] + step_shot["dynamodb"]) / n, 2),
                "kms": round((api_shot["kms"] + step_shot["kms"]) / n, 2),
                "stepfunctions": round(api_shot["stepfunctions"] / n, 2),
                "complete_request": {"dynamodb": round(api_shot["dynamodb"] / n, 2)},
                "workflow_by_operation": {
                    k: round(v / n, 2) for k, v in step_shot["by_operation"].items()
                },
                "rru_estimate": round(
                    (api_shot["rru_estimate"] + step_shot["rru_estimate"]) / n, 2
                ),
                "wru_estimate": round(
                    (api_shot["wru_estimate"] + step_shot["wru_estimate"]) / n, 2
                ),
                "model": round(model.calls / n, 2),
                "prompt_chars": round(model.prompt_chars / n, 1),
                "reply_chars": round(model.reply_chars / n, 1),
                "lambda_invocations": round(tasks[0] / n, 2),
                "state_transitions": round(
                    sum(_transitions(sfn, e["executionArn"]) for e in runs) / n, 2
                ),
            }
            spent = api.memory_bot.bot_settings(ana, bot)["spentMicros"]
        finally:
            aws._invoke_hooks.clear()
            step_services.reset()
    report: dict[str, Any] = {
        "confides": confides,
        "latency": {
            "wall_p50_ms": _percentile(walls, 0.5),
            "wall_p99_ms": _percentile(walls, 0.99),
            "own_p50_ms": _percentile(owns, 0.5),
            "own_p99_ms": _percentile(owns, 0.99),
        },
        "per_confide": per_confide,
        "learned_turns": {"completed": learned, "runs": len(runs), "succeeded": succeeded},
        "per_learned_turn": per_learned_turn,
        "spent_micros": spent,
        "targets": {
            "one_model_call_per_confide": per_confide["model"] == 1.0,
            "no_kms_call_per_warm_confide": per_confide["kms"] == 0.0,
            "every_completed_turn_learned": succeeded == len(runs) == learned,
            "model_calls_charged": spent > 0,
        },
        "note": "through HTTP (token lookup and rate-limit write included); zero-latency model",
    }
    from bench.cost_model import cost_per_million_confides

    report["cost"] = cost_per_million_confides(report)
    return report


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
