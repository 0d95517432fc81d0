"""Memory text and memory read at 100, 1,000 and 10,000 entries, through the HTTP app.

One session grows from 100 to 10,000 entries; its entries are sealed as the service seals
them and written in bulk (BatchWriteItem) between measurements, which is setup only. At each
size: wall time, the part of it spent inside the embedded AWS (moto, whose Query answers
cost about 1-2 ms per item here and nothing like it on AWS) and the rest (`own_ms`),
DynamoDB requests, items read, decrypts, and what the answer holds (`rendered`: keys in the
memory text, entries in the read). Each request includes the token lookup (one GetItem).

    python -m bench.scaling      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
from typing import Any

from bench.counting import AwsCalls
from bench.rigs import counted_services, embedded, seed_entries
from bench.timing import scaling_row, timed

SIZES = (100, 1_000, 10_000)
# Repetitions per size (median); the largest size is measured once: moto takes ~20 s there.
REPS = {100: 3, 1_000: 3, 10_000: 1}


def _measure(http: Any, path: str, headers: dict[str, str], calls: AwsCalls, cipher: Any) -> Any:
    calls.reset()
    cipher.opens = 0
    answer, spent = timed(lambda: http.get(path, headers=headers))
    assert answer.status_code == 200, answer.text
    snapshot = calls.snapshot()
    return answer.json(), scaling_row(spent, snapshot, cipher.opens) | {
        "emulator_ms": round(spent.emulator_ms, 1),
        "kms": snapshot["kms"],
    }


def _median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row with the median wall time (its counts are the same in every repetition)."""
    return sorted(rows, key=lambda r: r["ms"])[len(rows) // 2]


def run() -> dict[str, Any]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    text_rows: list[dict[str, Any]] = []
    read_rows: list[dict[str, Any]] = []
    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        user = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        ana = Principal("ana", "bench", "member")
        session_id = setup.sessions.create(ana, setup.agents.create(ana, "Bench").id).id
        services, calls, ciphers = counted_services(env)
        headers = {"Authorization": f"Bearer {user.token.secret}"}
        base = f"/v1/sessions/{session_id}/memory"
        seeded = 0
        with TestClient(create_app(lambda: services)) as http:
            for size in SIZES:
                seed_entries(setup, env, session_id, seeded, size - seeded)
                seeded = size
                if size == SIZES[0]:
                    http.get(f"{base}/text", headers=headers)  # warm clients and key cache
                texts, reads = [], []
                for _ in range(REPS[size]):
                    text, row = _measure(http, f"{base}/text", headers, calls, ciphers[0])
                    texts.append({**row, "rendered": len(text["keys"]), "length": text["length"]})
                    read, row = _measure(http, base, headers, calls, ciphers[0])
                    reads.append({**row, "rendered": len(read["entries"])})
                text_rows.append({"entries": size, **_median_row(texts)})
                read_rows.append({"entries": size, **_median_row(reads)})
    return {
        "memory_text": text_rows,
        "memory_read": read_rows,
        "reps": {str(k): v for k, v in REPS.items()},
        "note": (
            "through HTTP (token lookup included); ms includes moto answering the Query "
            "(emulator_ms); own_ms is the service's own time"
        ),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
