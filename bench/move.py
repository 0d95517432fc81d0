"""Moving a deployment (`agent-memory-admin export | import`, ADR 0085): rows a second and
peak memory of the export and of the import, for one-machine deployments of 10,000 and
100,000 rows (2,500 and 25,000 agent memories: each a sealed head row with its list and
index rows).

Each phase runs in a process of its own, so its peak RSS is its own; `baselineMb` is the
peak of a process that loads the same modules and moves nothing. Memory stays flat when the
phases' peaks above the baseline do not grow with the deployment (the archive is streamed
both ways, the import reads it twice and holds one batch of rows).

    python -m bench.move                       # prints JSON; `run()` returns it
    MOVE_BENCH_SIZES=500,2000 python -m bench.move   # agent memories
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIZES = (2_500, 25_000)  # agent memories: 10,000 and 100,000 rows
SEED = 32
BATCH = 25


def _populate(data_dir: Path, memories: int) -> int:
    """`memories` agent memories of one organization, sealed and written as the service
    writes them (rows in transactions of 25); answers the rows written."""
    from agent_memory.adapters.local_cipher import LocalCipher
    from agent_memory.adapters.sqlite_store import SqliteStore
    from agent_memory.bootstrap import KEY_FILE, STORE_FILE
    from agent_memory.domain.memory_objects import Entity, NewMemory, create_memory
    from agent_memory.persistence.memory_objects import MemoryObjectRepository
    from agent_memory.ports import Put

    store = SqliteStore(data_dir / STORE_FILE)
    repo = MemoryObjectRepository(store, LocalCipher(data_dir / KEY_FILE))
    rng = random.Random(SEED)
    now = int(time.time() * 1000)
    batch: list[Put] = []
    rows = 0
    for n in range(memories):
        new = NewMemory(
            category=("preference", "fact", "instruction")[n % 3],
            content=f"Memory {n}: the customer prefers option {rng.randrange(100)}.",
            metadata=None,
            entity=Entity(id=f"cus_{n % 50}", type="account", name=None) if n % 3 == 0 else None,
            importance=round(rng.random(), 3),
            expires_at=None,
        )
        memory = create_memory(f"mem_{n:012d}", "org_bench", new, now - memories + n)
        for row in repo.rows(memory):
            batch.append(Put(row))
            if len(batch) == BATCH:
                store.write(batch)
                rows += len(batch)
                batch = []
    if batch:
        store.write(batch)
        rows += len(batch)
    store.close()
    return rows


def _phase(argv: list[str]) -> dict[str, Any]:
    """One phase in this process: `idle`, `recipient DIR`, `export DIR PUBLIC ARCHIVE`,
    `import DIR ARCHIVE`; its seconds, rows and peak RSS."""
    from agent_memory.adapters.local_cipher import LocalCipher
    from agent_memory.adapters.sqlite_store import SqliteStore
    from agent_memory.bootstrap import KEY_FILE, STORE_FILE
    from agent_memory.move import export_archive, import_archive, make_recipient

    started = time.perf_counter()
    answer: dict[str, Any] = {}
    if argv[0] != "idle":
        root = Path(argv[1])
        store, cipher = SqliteStore(root / STORE_FILE), LocalCipher(root / KEY_FILE)
        if argv[0] == "recipient":
            answer["public"] = make_recipient(store, cipher, int(time.time() * 1000))
        elif argv[0] == "export":
            with open(argv[3], "wb") as out:
                answer["rows"] = export_archive(store, cipher, argv[2], out).rows
        else:

            def lines() -> Any:
                with open(argv[2], "rb") as archive:
                    yield from archive

            answer["rows"] = import_archive(lines(), lines(), store, cipher).rows
        store.close()
    answer["seconds"] = time.perf_counter() - started
    # Linux reports KiB.
    answer["peakMb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return answer


def _child(*argv: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'layers/core'}:{ROOT}")
    done = subprocess.run(
        [sys.executable, "-m", "bench.move", "--phase", *argv],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=ROOT,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _size(memories: int, baseline: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        source, target, archive = Path(tmp, "source"), Path(tmp, "target"), Path(tmp, "archive")
        source.mkdir()
        target.mkdir()
        rows = _populate(source, memories)
        public = _child("recipient", str(target))["public"]
        exported = _child("export", str(source), public, str(archive))
        size = archive.stat().st_size
        imported = _child("import", str(target), str(archive))

    def figures(phase: dict[str, Any]) -> dict[str, Any]:
        return {
            "rows": phase["rows"],
            "rowsPerSecond": round(phase["rows"] / phase["seconds"]),
            "seconds": round(phase["seconds"], 1),
            "peakMb": round(phase["peakMb"], 1),
            "aboveBaselineMb": round(phase["peakMb"] - baseline, 1),
        }

    return {
        "memories": memories,
        "rowsWritten": rows,
        "archiveMb": round(size / 1e6, 1),
        "export": figures(exported),
        "import": figures(imported),
    }


def run() -> dict[str, Any]:
    sizes = [int(s) for s in os.environ.get("MOVE_BENCH_SIZES", "").split(",") if s] or SIZES
    baseline = _child("idle")["peakMb"]
    by_size = [_size(n, baseline) for n in sizes]
    first, last = by_size[0], by_size[-1]
    return {
        "baselineMb": round(baseline, 1),
        "sizes": by_size,
        # Peak memory of the largest against the smallest, above the baseline: ~1 is flat.
        "exportMemoryGrowth": round(
            last["export"]["aboveBaselineMb"] / max(first["export"]["aboveBaselineMb"], 1), 2
        ),
        "importMemoryGrowth": round(
            last["import"]["aboveBaselineMb"] / max(first["import"]["aboveBaselineMb"], 1), 2
        ),
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--phase"]:
        print(json.dumps(_phase(sys.argv[2:])))
    else:
        print(json.dumps(run(), indent=2))
