"""Memory text and memory read at 100, 1,000 and 10,000 entries, through the HTTP app; and a
person's bot memory read in a pool of 10,000 and 100,000 entries (`bot_memory_read`).

One session grows from 100 to 10,000 entries; its entries are sealed as the service seals
them and written in bulk (BatchWriteItem) between measurements, which is setup only. At each
size: wall time, the part of it spent inside the embedded AWS (moto, whose Query answers
cost about 1-2 ms per item here and nothing like it on AWS) and the rest (`own_ms`),
DynamoDB requests, items read, decrypts, and what the answer holds (`rendered`: keys in the
memory text, entries in the read). Each request includes the token lookup (one GetItem).

The bot memory pool holds `OWN` entries of the reader and the rest of other people (each
with its base row, recency copy and audience row, sealed as the service seals them, written
in bulk): the read goes through the reader's audience rows (ADR 0083), so what it reads
follows what the reader sees, not the pool (`pool_rows` is what a whole-pool read reads).

    python -m bench.scaling      # prints JSON; `run()` returns it
"""

from __future__ import annotations

import json
from typing import Any

from bench.counting import AwsCalls
from bench.rigs import batch_put, bot_fact, counted_services, embedded, seed_entries
from bench.timing import scaling_row, timed

SIZES = (100, 1_000, 10_000)
BOT_POOL_SIZES = (10_000, 100_000)
# Repetitions per pool size (median): moto answers a Query by walking the partition's items
# (about 50 s at 300,000 rows here), which AWS does not; the largest size is read once.
BOT_REPS = {10_000: 3, 100_000: 1}
# The reader's own entries in the bot memory pool; the others are other people's.
OWN = 20
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
        "bot_memory_read": bot_memory_read(),
        "reps": {str(k): v for k, v in REPS.items()},
        "bot_memory_reps": {str(k): v for k, v in BOT_REPS.items()},
        "note": (
            "through HTTP (token lookup included); ms includes moto answering the Query "
            "(emulator_ms); own_ms is the service's own time"
        ),
    }


def _seed_bot_pool(services: Any, env: Any, bot_id: str, org: str, numbers: range) -> None:
    """Entries of the pool in bulk (setup only): the first `OWN` are Ana's, the others each
    of one of 5,000 other people."""
    from agent_memory.adapters.dynamodb.items import serialize
    from agent_memory.persistence.bot_memory import bot_pool

    repo = services.bot_memory.repo
    pool = bot_pool(bot_id, org)
    client, table = env.root.client("dynamodb"), env.settings.table_name
    items: list[dict[str, Any]] = []
    for n in numbers:
        person = "ana" if n < OWN else f"u{n % 5_000:04d}"
        content = f"Fact {n}: " + "detail " * (2 + n % 28)
        meta = bot_fact(f"mem_{n:07d}", person, org, (f"i-{n % 50 + 1}", f"c{n % 997}"), content, n)
        for action in repo.pools.put(pool, meta, content):
            items.append({"PutRequest": {"Item": serialize(action.record)}})
        if len(items) >= 2_500 or n == numbers[-1]:
            batch_put(client, table, items)
            items = []


def bot_memory_read() -> list[dict[str, Any]]:
    """Ana's GET /v1/bots/{id}/memory at each pool size: what it reads and returns."""
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.domain.identity import SERVICE_ADMIN, Principal

    rows: list[dict[str, Any]] = []
    with embedded() as env:
        setup = env.services(learning=False)
        setup.identity.create_org(SERVICE_ADMIN, "bench", "Bench")
        user = setup.identity.create_user(SERVICE_ADMIN, "bench", "ana", "Ana", "member")
        bot_id = setup.bots.create_bot(Principal("ana", "bench", "member"), "Helper", {}).id
        services, calls, ciphers = counted_services(env)
        headers = {"Authorization": f"Bearer {user.token.secret}"}
        path = f"/v1/bots/{bot_id}/memory"
        seeded = 0
        with TestClient(create_app(lambda: services)) as http:
            for size in BOT_POOL_SIZES:
                _seed_bot_pool(setup, env, bot_id, "bench", range(seeded, size))
                if seeded == 0:
                    http.get(path, headers=headers)  # warm clients and key cache
                seeded = size
                reads = []
                for _ in range(BOT_REPS[size]):
                    read, row = _measure(http, path, headers, calls, ciphers[0])
                    reads.append({**row, "rendered": len(read["entries"])})
                # Base row, recency copy and audience row of every entry, and the head.
                rows.append({"entries": size, "pool_rows": 3 * size + 1, **_median_row(reads)})
    return rows


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
