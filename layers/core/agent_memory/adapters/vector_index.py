"""The in-process vector index: exact cosine search in numpy (`make run`, tests, benchmarks).

Given a file, every batch is appended as one JSON line and replayed on start; it holds
vectors and ids only, never text, like S3 Vectors.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_memory.ports.vectors import (
    MAX_DELETE_BATCH,
    MAX_KEY_LENGTH,
    MAX_PUT_BATCH,
    Vector,
    VectorHit,
    VectorRecord,
    VectorScope,
    check_query,
)

_GROWTH = 1024


class InProcessVectorIndex:
    def __init__(self, dimension: int | None, path: Path | None = None) -> None:
        import numpy as np

        self._np = np
        # None until the first vector (put or replayed) sets it.
        self.dimension = dimension
        self._path = path
        self._lock = threading.Lock()
        self._matrix = np.zeros((0, dimension or 0), dtype=np.float32)
        # Row i of the matrix is entry i: (key, scope); `_rows` finds a key's row.
        self._entries: list[tuple[str, VectorScope]] = []
        self._rows: dict[str, int] = {}
        self._logged = 0
        if path is not None and path.exists():
            self._replay(path)

    def put(self, records: Sequence[VectorRecord]) -> None:
        if len(records) > MAX_PUT_BATCH:
            raise ValueError(f"at most {MAX_PUT_BATCH} vectors a put")
        with self._lock:
            if records and self.dimension is None:
                self._made(len(records[0].vector))
            for record in records:
                self._check(record)
            for record in records:
                self._put(record)
            self._log([{"put": [self._encode(r) for r in records]}], len(records))

    def delete(self, keys: Sequence[str]) -> None:
        if len(keys) > MAX_DELETE_BATCH:
            raise ValueError(f"at most {MAX_DELETE_BATCH} keys a delete")
        with self._lock:
            for key in keys:
                self._delete(key)
            self._log([{"delete": list(keys)}], len(keys))

    def _made(self, dimension: int) -> None:
        if dimension < 1:
            raise ValueError("a vector has at least one dimension")
        self.dimension = dimension
        self._matrix = self._np.zeros((0, dimension), dtype=self._np.float32)

    def _check(self, record: VectorRecord) -> None:
        if not record.key or len(record.key) > MAX_KEY_LENGTH:
            raise ValueError("a vector key is 1..1024 characters")
        self._sized(record.vector)
        if not record.scope.org or not record.scope.owner:
            raise ValueError("a vector belongs to an organization and an owner")

    def _sized(self, vector: Vector) -> None:
        if len(vector) != self.dimension:
            raise ValueError(
                f"this index holds vectors of {self.dimension} dimensions, not {len(vector)} "
                "(was the embedding model changed?)"
            )

    def _put(self, record: VectorRecord) -> None:
        np = self._np
        entry = (record.key, record.scope)
        row = self._rows.get(record.key)
        if row is None:
            row = len(self._entries)
            if row == len(self._matrix):
                grown = np.zeros((row + _GROWTH, self.dimension), dtype=np.float32)
                grown[:row] = self._matrix[:row]
                self._matrix = grown
            self._entries.append(entry)
            self._rows[record.key] = row
        else:
            self._entries[row] = entry
        self._matrix[row] = np.asarray(record.vector, dtype=np.float32)

    def _delete(self, key: str) -> None:
        row = self._rows.pop(key, None)
        if row is None:
            return
        last = len(self._entries) - 1
        if row != last:
            # The last row moves into the hole: rows stay dense.
            self._matrix[row] = self._matrix[last]
            self._entries[row] = self._entries[last]
            self._rows[self._entries[row][0]] = row
        self._entries.pop()

    def query(
        self,
        vector: Vector,
        top_k: int,
        *,
        org: str,
        owner: str,
        group: str | None = None,
        thread: str | None = None,
    ) -> list[VectorHit]:
        check_query(top_k, org, owner)
        np = self._np
        with self._lock:
            if self.dimension is None:
                return []  # nothing was ever put
            self._sized(vector)
            rows = [
                i
                for i, (_key, s) in enumerate(self._entries)
                if s.org == org
                and s.owner == owner
                and (group is None or s.group == group)
                and (thread is None or s.thread == thread)
            ]
            if not rows:
                return []
            candidates = self._matrix[rows]
            scores = candidates @ np.asarray(vector, dtype=np.float32)
            count = min(top_k, len(rows))
            best = np.argpartition(-scores, count - 1)[:count]
            best = best[np.argsort(-scores[best], kind="stable")]
            hits = []
            for i in best:
                key, scope = self._entries[rows[i]]
                hits.append(VectorHit(key, float(scores[i]), scope))
            return hits

    def _encode(self, record: VectorRecord) -> dict[str, Any]:
        data = self._np.asarray(record.vector, dtype="<f4").tobytes()
        s = record.scope
        return {
            "k": record.key,
            "v": base64.b64encode(data).decode(),
            "s": [s.org, s.owner, s.group, s.thread],
        }

    def _decode(self, raw: dict[str, Any]) -> VectorRecord:
        vector = self._np.frombuffer(base64.b64decode(raw["v"]), dtype="<f4")
        org, owner, group, thread = raw["s"]
        return VectorRecord(raw["k"], vector.tolist(), VectorScope(org, owner, group, thread))

    def _log(self, lines: list[dict[str, Any]], count: int) -> None:
        if self._path is None:
            return
        self._logged += count
        if self._logged > 2 * max(len(self._entries), _GROWTH):
            self._compact()
            return
        with self._path.open("a", encoding="utf-8") as log:
            for line in lines:
                log.write(json.dumps(line, separators=(",", ":")) + "\n")

    def _compact(self) -> None:
        assert self._path is not None
        temporary = self._path.with_suffix(".tmp")
        with temporary.open("w", encoding="utf-8") as log:
            for start in range(0, len(self._entries), MAX_PUT_BATCH):
                batch = [
                    VectorRecord(key, self._matrix[i].tolist(), scope)
                    for i, (key, scope) in enumerate(
                        self._entries[start : start + MAX_PUT_BATCH], start
                    )
                ]
                log.write(json.dumps({"put": [self._encode(r) for r in batch]}) + "\n")
        os.replace(temporary, self._path)
        self._logged = len(self._entries)

    def _replay(self, path: Path) -> None:
        with path.open(encoding="utf-8") as log:
            for text in log:
                try:
                    line = json.loads(text)
                except ValueError:
                    # A line cut by a crash mid-write: the batch was never acknowledged.
                    continue
                for raw in line.get("put", []):
                    record = self._decode(raw)
                    if self.dimension is None:
                        self._made(len(record.vector))
                    self._sized(record.vector)
                    self._put(record)
                    self._logged += 1
                for key in line.get("delete", []):
                    self._delete(key)
                    self._logged += 1
