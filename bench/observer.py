"""Observational memory (seed 003, "The observer"): how good its token count is, what it
costs to count, and the shape of the observer's model calls.

- `tokens`: `domain/observation.count_tokens` against o200k_base (`bpe-openai`, offline) and
  against chars/4, on LoCoMo's turns (`../shared/bench-data/locomo/locomo10.json`, read in
  place, never copied) when present, on this repository's docs and Python source always:
  total and per-message error (median, p90), and the count's time per message.
- `aws_calls`: the context and a save with the observer on, cold and warm.
- `calls`: observer, reflector and title calls per conversation and their cost per million
  conversations (bench/cost_model.observer_calls), with the seed's defaults and with
  `bufferOnIdle`.

    python -m bench.observer      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "bench-data" / "locomo" / "locomo10.json"


def _locomo() -> list[str]:
    if not LOCOMO.exists():
        return []
    turns: list[str] = []
    for conversation in json.loads(LOCOMO.read_text()):
        for value in conversation["conversation"].values():
            if isinstance(value, list):
                turns += [t["text"] for t in value if isinstance(t, dict) and "text" in t]
    return turns


def _corpora() -> dict[str, list[str]]:
    docs = "".join(p.read_text() for p in sorted((ROOT / "docs" / "adr").glob("*.md")))
    code = "".join(p.read_text() for p in sorted((ROOT / "layers/core/agent_memory").rglob("*.py")))
    found = {
        "docs": [docs[i : i + 3000] for i in range(0, len(docs), 3000)],
        "code": [code[i : i + 3000] for i in range(0, min(len(code), 300_000), 3000)],
    }
    chat = _locomo()
    if chat:
        found["locomo_turns"] = chat
    return found


def _errors(estimated: list[int], real: list[int]) -> dict[str, float]:
    per = sorted(abs(e - r) / r for e, r in zip(estimated, real, strict=True) if r >= 5)
    return {
        "total": round((sum(estimated) - sum(real)) / sum(real), 4),
        "median_abs": round(statistics.median(per), 4),
        "p90_abs": round(per[int(len(per) * 0.9)], 4),
    }


def tokens() -> dict[str, Any]:
    import bpe_openai  # type: ignore[import-untyped]

    from agent_memory.domain.observation import count_tokens

    encoding = bpe_openai.get_encoding("o200k_base")
    report: dict[str, Any] = {"reference": "o200k_base (bpe-openai 0.1.4)"}
    for name, texts in _corpora().items():
        real = [len(encoding.encode(t)) for t in texts]
        started = time.perf_counter()
        estimated = [count_tokens(t) for t in texts]
        spent = time.perf_counter() - started
        quarter = [math.ceil(len(t) / 4) for t in texts]
        report[name] = {
            "texts": len(texts),
            "tokens": sum(real),
            "estimate": _errors(estimated, real),
            "chars_over_4": _errors(quarter, real),
            "us_per_text": round(spent / len(texts) * 1e6, 2),
        }
    return report


def aws_calls() -> dict[str, Any]:
    """The context and a save of a thread whose version has the observer on (messageTokens
    1,000; local/rules observes), after its first activation: the steady state."""
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal
    from bench.rigs import cold_warm, embedded

    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        token = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        ana = Principal("ana", "bench", "member")
        agent = setup.agents.create(ana, "Bench")
        options = {
            "workingMemory": True,
            "observationalMemory": {"observation": {"messageTokens": 1000}},
        }
        setup.agent_versions.edit_draft(ana, agent.id, {"options": options})
        setup.agent_versions.publish(ana, agent.id)
        setup.agent_versions.activate(ana, agent.id, 1)
        thread = setup.threads.create(ana, agent.id, None)
        setup.threads.repo.set_title(thread, "Bench", thread.created_at)
        text = " ".join(["word"] * 96)
        for _ in range(2):
            setup.threads.save(ana, thread.id, [{"role": "user", "content": text}] * 20)
        # 4,000 tokens: past blockAfter, so this context observes and activates.
        setup.threads.context(ana, thread.id)
        base = f"/v1/threads/{thread.id}"
        turn = {"message": {"role": "user", "content": "And now?"}}
        pair = {
            "messages": [
                {"role": "user", "content": "What is next?"},
                {"role": "assistant", "content": "The report."},
            ]
        }
        secret = token.token.secret
        return {
            "thread.context.observer": cold_warm(
                env, secret, lambda: ("POST", f"{base}/context", turn)
            ),
            "thread.messages.observer": cold_warm(
                env, secret, lambda: ("POST", f"{base}/messages", pair)
            ),
        }


def run() -> dict[str, Any]:
    from bench.cost_model import cost_per_million_conversations_observer

    return {
        "tokens": tokens(),
        "aws_calls": aws_calls(),
        "calls": cost_per_million_conversations_observer(),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
