"""Moving a deployment (`agent-memory-admin export | import`, ADR 0085): rows a second and
peak memory of the export and of the import, for one-machine deployments of 10,000 and
100,000 learned entries (session memory facts, 100 a session: each a sealed entry row and
its recency copy), and how fast the import embeds agent memories again for semantic recall.

Each phase runs in a process of its own, so its peak RSS is its own; `baselineMb` is the
peak of a process that loads the same modules and moves nothing. Memory stays flat when the
phases' peaks above the baseline do not grow with the deployment (the archive is streamed
both ways, the import reads it twice and holds one batch of rows). The entries are written
in bulk as the service seals and lays them out (setup, not measured).

    python -m bench.move                       # prints JSON; `run()` returns it
    MOVE_BENCH_SIZES=1000,5000 python -m bench.move   # entries
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
SIZES = (10_000, 100_000)  # learned entries
SEED = 32
BATCH = 25
ENTRIES_A_SESSION = 100
# Agent memories embedded again (local/minilm) to measure the import's recall rate.
REEMBEDDED = 200
ORG = "org_bench"


def _populate(data_dir: Path, entries: int) -> int:
    """`entries` session memory facts of one organization, sealed and laid out as session
    learning writes them, in transactions of 25 rows; answers the rows written."""
    from agent_memory.adapters.local_cipher import LocalCipher
    from agent_memory.adapters.sqlite_store import SqliteStore
    from agent_memory.bootstrap import KEY_FILE, STORE_FILE
    from agent_memory.domain.session_memory import fact, item_sources
    from agent_memory.domain.sessions import Session
    from agent_memory.persistence.sessions import SessionRepository
    from agent_memory.ports import Action

    store = SqliteStore(data_dir / STORE_FILE)
    repo = SessionRepository(store, LocalCipher(data_dir / KEY_FILE))
    rng = random.Random(SEED)
    now = int(time.time() * 1000)
    batch: list[Action] = []
    rows = 0
    for n in range(entries):
        number = n // ENTRIES_A_SESSION
        session = Session(
            f"ses_{number:08d}", ORG, "agt_bench", "usr_bench", "chat", None, "i-00", 0, 0, 0
        )
        content = f"Fact {n}: the customer prefers option {rng.randrange(100)}. " + "detail " * (
            rng.randrange(2, 30)
        )
        meta = fact(f"fact-{n:06d}", "fact", content, item_sources(["i-01"]), now - entries + n, 1)
        for action in repo.entry_put(session, meta, content, None):
            batch.append(action)
            if len(batch) == BATCH:
                store.write(batch)
                rows += len(batch)
                batch = []
    if batch:
        store.write(batch)
        rows += len(batch)
    store.close()
    return rows


def _reembedding(memories: int) -> dict[str, Any]:
    """Agent memories written to a deployment, then embedded again as an import does
    (infra.move.recall.RecallRebuilt over their rows, the local embedding model): a second."""
    from agent_memory.bootstrap import local_adapters
    from agent_memory.config import load_settings
    from agent_memory.domain.memory_objects import NewMemory, create_memory
    from agent_memory.persistence.memory_objects import MemoryObjectRepository
    from agent_memory.ports import Put
    from agent_memory.wiring import Wiring
    from infra.move.recall import RecallRebuilt

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings()
        deployment = Wiring(settings, local_adapters(settings, Path(tmp)))
        repo = MemoryObjectRepository(deployment.store, deployment.cipher)
        rows = []
        for n in range(memories):
            new = NewMemory("fact", f"Memory {n}: the customer prefers option {n % 97}.")
            rows.extend(repo.rows(create_memory(f"mem_{n:012d}", ORG, new, 1_700_000_000_000)))
        for first in range(0, len(rows), BATCH):
            deployment.store.write([Put(r) for r in rows[first : first + BATCH]])
        rebuilt = RecallRebuilt(deployment.thread_repo, repo, deployment.recall)
        rebuilt.of_archive([ORG]).written(rows[:1])  # the model loads: not measured
        started = time.perf_counter()
        rebuilt.written(rows)
        seconds = time.perf_counter() - started
    return {
        "memories": rebuilt.memories - 1,
        "memoriesPerSecond": round((rebuilt.memories - 1) / seconds),
        "model": settings.embedding_model,
    }


def _phase(argv: list[str]) -> dict[str, Any]:
    """One phase in this process: `idle`, `recipient DIR`, `export DIR PUBLIC ARCHIVE`,
    `import DIR ARCHIVE` (its seconds, rows and peak RSS), or `reembed COUNT`."""
    from agent_memory.adapters.local_cipher import LocalCipher
    from agent_memory.adapters.sqlite_store import SqliteStore
    from agent_memory.bootstrap import KEY_FILE, STORE_FILE
    from infra.move.archive import export_archive, import_archive, make_recipient

    started = time.perf_counter()
    answer: dict[str, Any] = {}
    if argv[0] == "reembed":
        return _reembedding(int(argv[1]))
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


def _size(entries: int, baseline: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        source, target, archive = Path(tmp, "source"), Path(tmp, "target"), Path(tmp, "archive")
        source.mkdir()
        target.mkdir()
        rows = _populate(source, entries)
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
        "entries": entries,
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
        "recallReembedding": _child("reembed", str(REEMBEDDED)),
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
