"""Observational memory (seed 003, "The observer"): how good its token count is, what it
costs to count, and the shape of the observer's model calls.

- `tokens`: `domain/observation.count_tokens` against o200k_base (`bpe-openai`, offline) and
  against chars/4, on LoCoMo's turns (`../shared/bench-data/locomo/locomo10.json`, read in
  place, never copied) when present, on this repository's docs and Python source always:
  total and per-message error (median, p90), and the count's time per message.
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
    docs = (ROOT / "docs" / "decisions.md").read_text()
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


def run() -> dict[str, Any]:
    from bench.cost_model import cost_per_million_conversations_observer

    return {"tokens": tokens(), "calls": cost_per_million_conversations_observer()}


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
