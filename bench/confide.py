"""The memory Bot's confide (seed 002) on the embedded AWS, through the HTTP app, with a
zero-latency model (what is measured is the service, not a provider):

- `latency`: `POST /v1/chats/{id}/turns/{turn}/confide` wall and own (outside the emulator)
  milliseconds, p50 and p99 over `CONFIDES` confides on warm services, each in a fresh open
  Turn (so each saves its learning wait).
- `per_confide`: AWS calls of one confide (the token lookup and its rate-limit write, the
  chat and turn, settings and spend, the confession with its encrypted call log, the charge
  and the learning wait), request units (estimated from item sizes) and the model's request and
  answer in characters.
- `per_learned_turn`: AWS calls of `POST .../complete` of a confided Turn plus every call of
  the learning steps it releases (LoadEvidence -> CallModel -> ApplyLearning run by moto's
  Step Functions in this process, on their own boto3 session), the model calls, the state
  transitions and the Lambda tasks, one turn after the other (each run ends before the
  next turn completes). Warm: one turn is learned before the measurement.
- `bot_turn`: whole chat turns (POST turns with enrichment, one confide while the Bot's
  model works, complete with the Bot's answer as `items`, the learning run it releases) in
  a chat of their own, per component: what bench/cost_model.py prices as
  `cost.per_million_turns_usd.by_turn.bot`; `bot_turn_items_apart` the same turns with the
  answer in a request of its own before `complete` (`by_turn.bot_items_apart`).
- `cost`: USD per million confides (bench/cost_model.py), with and without their learned turn.

    python -m bench.confide      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.rigs import LearningRig, learning_rig
from bench.timing import served, timed

CONFIDES = 200
LEARNED = 20
MODEL = "openai/bench-memory-bot"
# Per million tokens in micro-USD, as MODEL_PRICES names them (Claude Haiku 4.5's list price,
# bench/cost_model.py): the charge path runs as a deployment's would.
PRICES = json.dumps({MODEL: [1_000_000, 5_000_000]})
# Whole chat turns (turn, the Bot's answer, a confide, complete, its learning run).
BOT_TURNS = 10
BOT_ANSWER = {"role": "assistant", "content": "The 8:10, as every day."}


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
        elif request.task == "enrichment":
            # The first entry shown helps: the input is written again with it.
            lines = [json.loads(x) for x in request.user.splitlines() if x.startswith("{")]
            said = request.user.rsplit("\n", 1)[-1]
            answer = {"input": None, "used": []}
            if lines:
                used = lines[0]
                answer = {"input": f"{said} (I know: {used['content']})", "used": [used["id"]]}
        else:
            answer = {"input": None, "used": []}
        text = json.dumps(answer)
        asked = len(request.system) + len(request.user)
        self.prompt_chars += asked
        self.reply_chars += len(text)
        usage = Usage(input_tokens=asked // 4, output_tokens=len(text) // 4)
        return ModelReply(text=text, model=self.name, usage=usage)

    def reset(self) -> None:
        self.calls = self.prompt_chars = self.reply_chars = 0


@dataclass
class OneModel:
    model: Any

    def resolve(self, name: str | None) -> Any:
        return self.model if name == MODEL else None


def _percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 2)


def _per(shot: dict[str, Any], n: int, model: ZeroLatencyMemoryBot) -> dict[str, Any]:
    """Counts of `n` requests (an `AwsCalls.snapshot()` and the model's), per request."""
    return {
        "dynamodb": round(shot["dynamodb"] / n, 2),
        "kms": round(shot["kms"] / n, 2),
        "stepfunctions": round(shot["stepfunctions"] / n, 2),
        "by_operation": {k: round(v / n, 2) for k, v in shot["by_operation"].items()},
        "rru_estimate": round(shot["rru_estimate"] / n, 2),
        "wru_estimate": round(shot["wru_estimate"] / n, 2),
        "model": round(model.calls / n, 2),
        "prompt_chars": round(model.prompt_chars / n, 1),
        "reply_chars": round(model.reply_chars / n, 1),
    }


def _learned(rig: LearningRig, runs: list[dict[str, Any]], model: ZeroLatencyMemoryBot) -> Any:
    """The workflow's share of the learned turns whose executions are `runs`, per run."""
    step_shot = rig.step_calls.snapshot()
    n = max(1, len(runs))
    return {
        **_per(step_shot, n, model),
        "workflow_by_operation": {k: round(v / n, 2) for k, v in step_shot["by_operation"].items()},
        "lambda_invocations": round(rig.tasks[0] / n, 2),
        "task_own_ms": round(rig.task_ms[0] / n, 2),
        "state_transitions": round(sum(rig.transitions(e["executionArn"]) for e in runs) / n, 2),
        "executions": round(len(runs) / n, 2),
    }


@dataclass
class _Chat:
    """The served app over the learning rig, and one person's chat with a Bot."""

    rig: Any
    model: ZeroLatencyMemoryBot
    api: Any
    ana: Any
    bot: str
    chat: str
    http: Any
    headers: dict[str, str]

    def post(self, path: str, body: dict[str, Any], status: int = 200, at: str = "") -> Any:
        url = f"{at or f'/v1/chats/{self.chat}/turns'}{path}"
        answer = self.http.post(url, json=body, headers=self.headers)
        assert answer.status_code == status, answer.text
        return answer.json()

    def open_turn(self, n: int) -> str:
        text = f"Note {n}: I take the 8:10 train on day {n}."
        return str(self.api.bots.begin_turn(self.ana, self.chat, text)[1].id)

    def confide(self, turn_id: str) -> Any:
        body = {"text": "I booked the wrong day and did not say so."}
        answer = self.post(f"/{turn_id}/confide", body)
        assert answer["calm"] is False, answer
        return answer


@contextmanager
def _served_chat() -> Iterator[_Chat]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    model = ZeroLatencyMemoryBot()
    with learning_rig(OneModel(model), {"MODEL_PRICES": PRICES}) as rig:
        api = rig.api
        api.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        api.org_settings.patch(SERVICE_ADMIN, "bench", {"botMemoryModel": MODEL})
        created = api.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        headers = {"Authorization": f"Bearer {created.token.secret}"}
        ana = Principal("ana", "bench", "member")
        bot = api.bots.create_bot(ana, "Bench", {}).id
        chat = api.bots.create_chat(ana, bot, None, "chat").id
        with TestClient(served(create_app(lambda: api)), raise_server_exceptions=False) as http:
            yield _Chat(rig, model, api, ana, bot, chat, http, headers)


def _confides(c: _Chat, confides: int) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """`confides` confided turns left open: (their ids, latency, calls per confide)."""
    # Warm: a confide and its learned turn before anything is measured.
    first = c.open_turn(0)
    c.confide(first)
    c.post(f"/{first}/complete", {})
    c.rig.executions()
    opened = [c.open_turn(n) for n in range(1, confides + 1)]
    walls: list[float] = []
    owns: list[float] = []
    c.rig.reset()
    c.model.reset()
    for turn_id in opened:
        _answer, spent = timed(lambda t=turn_id: c.confide(t))
        walls.append(spent.ms)
        owns.append(spent.own_ms)
    per_confide = _per(c.rig.api_calls.snapshot(), confides, c.model) | {
        "own_ms": round(sum(owns) / confides, 2)
    }
    latency = {
        "wall_p50_ms": _percentile(walls, 0.5),
        "wall_p99_ms": _percentile(walls, 0.99),
        "own_p50_ms": _percentile(owns, 0.5),
        "own_p99_ms": _percentile(owns, 0.99),
    }
    return opened, latency, per_confide


def _learned_turns(c: _Chat, turn_ids: list[str]) -> tuple[dict[str, Any], list[Any]]:
    """Complete the confided turns in order: (calls per learned turn, the runs)."""
    before = c.rig.reset()
    c.model.reset()
    # One at a time, as one chat's turns end: runs racing on one chat's read position would
    # count their re-reads, not a learned turn.
    for turn_id in turn_ids:
        c.post(f"/{turn_id}/complete", {})
        c.rig.executions()
    runs = [e for e in c.rig.executions() if e["executionArn"] not in before]
    api_shot = c.rig.api_calls.snapshot()
    per_learned_turn = _learned(c.rig, runs, c.model)
    per_learned_turn["complete_request"] = {"dynamodb": api_shot["dynamodb"] / len(runs)}
    for name in ("dynamodb", "kms", "rru_estimate", "wru_estimate", "stepfunctions"):
        per_learned_turn[name] = round(
            per_learned_turn[name] + api_shot[name] / max(1, len(runs)), 2
        )
    return per_learned_turn, runs


def _whole_bot_turns(c: _Chat, turns: int) -> dict[str, Any]:
    # Whole turns in a chat of their own: the confided turns above stay open, and a chat
    # learns its turns in order.
    whole = c.api.bots.create_chat(c.ana, c.bot, None, "chat").id
    apart = c.api.bots.create_chat(c.ana, c.bot, None, "chat").id

    def at(chat_id: str) -> Any:
        return lambda *a, **k: c.post(*a, **k, at=f"/v1/chats/{chat_id}/turns")

    shapes = {
        "bot_turn": _TurnShape(at(whole), answer_apart=False),
        # The same turns with the Bot's answer in a request of its own.
        "bot_turn_items_apart": _TurnShape(at(apart), answer_apart=True),
    }
    return _bot_turns(c.rig, c.model, shapes, turns)


def run(confides: int = CONFIDES, learned: int = LEARNED, turns: int = BOT_TURNS) -> dict[str, Any]:
    with _served_chat() as c:
        opened, latency, per_confide = _confides(c, confides)
        per_learned_turn, runs = _learned_turns(c, opened[:learned])
        measured_turns = _whole_bot_turns(c, turns)
        _settings, spent = c.api.memory_bot.bot_settings(c.ana, c.bot)
    succeeded = sum(1 for e in runs if e["status"] == "SUCCEEDED")
    bot_turn = measured_turns["bot_turn"]
    report: dict[str, Any] = {
        "confides": confides,
        "latency": latency,
        "per_confide": per_confide,
        "learned_turns": {"completed": learned, "runs": len(runs), "succeeded": succeeded},
        "per_learned_turn": per_learned_turn,
        "bot_turn": bot_turn,
        "bot_turn_items_apart": measured_turns["bot_turn_items_apart"],
        "spent_micros": spent,
        "targets": {
            "one_model_call_per_confide": per_confide["model"] == 1.0,
            "no_kms_call_per_warm_confide": per_confide["kms"] == 0.0,
            "every_completed_turn_learned": succeeded == len(runs) == learned,
            "every_bot_turn_enriched": bot_turn["enriched"] == turns,
            "model_calls_charged": spent > 0,
            # The confide reads its chat, turn, settings and spend in batches and writes the
            # confession as its own call log (ADR 0055): 8.1 calls today.
            "confide_at_most_9_dynamodb_calls": per_confide["dynamodb"] <= 9,
            # LoadEvidence reads the chat with its read position in one batch, then the pool
            # as its Chat's readers see it (the head with the audience marks, then their
            # audience rows: ADR 0083); CallModel and ApplyLearning read the execution row
            # with its evidence in one batch, the apply the pool as LoadEvidence: 16 reads
            # per learned turn today, each proportional to what the Chat's readers see.
            "learned_turn_at_most_16_reads": _reads(per_learned_turn) <= 16,
        },
        "note": "through HTTP (token lookup and rate-limit write included); zero-latency model",
    }
    from bench.cost_model import cost_per_million_confides

    report["cost"] = cost_per_million_confides(report)
    return report


def _reads(per: dict[str, Any]) -> float:
    reads = ("dynamodb.GetItem", "dynamodb.BatchGetItem", "dynamodb.Query")
    return sum(per["by_operation"].get(op, 0.0) for op in reads)


@dataclass
class _TurnShape:
    """One way of driving a bot turn, and what its turns measured."""

    post: Any
    # The Bot's answer in a request of its own (`items`, then `complete`).
    answer_apart: bool
    shots: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    owns: dict[str, float] = field(default_factory=dict)
    enriched: int = 0

    @property
    def parts(self) -> tuple[str, ...]:
        if self.answer_apart:
            return ("turn_start", "bot_items", "confide", "complete")
        return ("turn_start", "confide", "complete")

    def reset(self) -> None:
        self.shots = {name: [] for name in (*self.parts, "learning")}
        self.owns = dict.fromkeys(self.parts, 0.0)
        self.enriched = 0


def _bot_turns(
    rig: LearningRig, model: ZeroLatencyMemoryBot, shapes: dict[str, _TurnShape], turns: int
) -> dict[str, dict[str, Any]]:
    """`turns` whole chat turns of each shape, as a platform drives one (seed 002): start it
    (the memory Bot enriches the input), the Bot's model confides once while it works on
    the answer, then the answer is saved with the Turn's end (`complete` with `items`; with
    `answer_apart`, `items` first and then `complete`); its learning run goes on. The
    shapes take turns in one pool (each in a chat of its own), so both see it grow alike.
    Every request and the run counted apart, per turn."""

    def measured(
        shape: _TurnShape, name: str, path: str, body: dict[str, Any], status: int = 200
    ) -> Any:
        rig.api_calls.reset()
        model.reset()
        answer, spent = timed(lambda: shape.post(path, body, status))
        shape.shots[name].append(_per(rig.api_calls.snapshot(), 1, model))
        shape.owns[name] += spent.own_ms
        return answer

    for n in range(-1, turns):
        for shape in shapes.values():
            if n <= 0:
                shape.reset()  # the first turn of each chat is not measured
            body = {"input": f"Which train do I take on day {n}?"}
            started = measured(shape, "turn_start", "", body, status=201)
            shape.enriched += bool(started["enriched"])
            turn_id = started["turn"]["id"]
            if shape.answer_apart:
                measured(shape, "bot_items", f"/{turn_id}/items", {"items": [BOT_ANSWER]})
            text = {"text": "I missed the train and hid it."}
            measured(shape, "confide", f"/{turn_id}/confide", text)
            before = rig.reset()
            model.reset()
            ending = {} if shape.answer_apart else {"items": [BOT_ANSWER]}
            with rig.held():  # the run it releases is counted apart, as "learning"
                measured(shape, "complete", f"/{turn_id}/complete", ending)
            runs = [e for e in rig.executions() if e["executionArn"] not in before]
            shape.shots["learning"].append(_learned(rig, runs, model))

    def mean(rows: list[dict[str, Any]]) -> dict[str, Any]:
        keys = [k for k, v in rows[0].items() if isinstance(v, int | float)]
        return {k: round(sum(float(r.get(k, 0)) for r in rows) / len(rows), 2) for k in keys} | {
            "by_operation": rows[-1].get("by_operation", rows[-1].get("workflow_by_operation"))
        }

    found: dict[str, dict[str, Any]] = {}
    for key, shape in shapes.items():
        components = {name: mean(rows) for name, rows in shape.shots.items()}
        for name in shape.parts:
            components[name]["own_ms"] = round(shape.owns[name] / turns, 2)
            components[name]["requests"] = 1.0
        found[key] = {"turns": turns, "enriched": shape.enriched, "per_component": components}
    return found


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
