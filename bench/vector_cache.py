"""Embeddings kept on disk between runs, so a ranking change is re-scored without the model."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from agent_memory.adapters.local_embedder import DIMENSION, MODEL_NAME, MiniLM

ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = ROOT / ".cache" / "bench"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class CachedEmbedder:
    """The local embedder behind a file of the vectors it made: a text embedded once, in any
    run, is answered from the file; the model is loaded only when a text is new."""

    def __init__(self, name: str, reuse: bool, cache_dir: Path = CACHE_DIR) -> None:
        self.path = cache_dir / f"{name}-{MODEL_NAME.replace('/', '_')}.json"
        self._vectors: dict[str, list[float]] = (
            json.loads(self.path.read_text()) if reuse and self.path.exists() else {}
        )
        self._model: MiniLM | None = None
        self.model = MODEL_NAME
        self.dimension = DIMENSION
        self.embedded = 0

    def load(self) -> None:
        """Loads the model now unless the vectors come from the file (it loads on a new text)."""
        if not self._vectors:
            self._load()

    def _load(self) -> MiniLM:
        if self._model is None:
            self._model = MiniLM()
            self._model.load()
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if _key(t) not in self._vectors))
        if missing:
            for text, vector in zip(missing, self._load().embed(missing), strict=True):
                self._vectors[_key(text)] = [round(float(x), 6) for x in vector]
            self.embedded += len(missing)
        return [self._vectors[_key(t)] for t in texts]

    def save(self) -> None:
        """Writes the vectors when this run made new ones."""
        if self.embedded:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self._vectors))
