"""Embeddings kept on disk between runs, so a ranking change is re-scored without the model."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_memory.adapters.local_embedder import (
    DIMENSION,
    MODEL_NAME,
    ONNX_SHA256,
    OnnxEmbedder,
)
from agent_memory.ports.vectors import Embedder, EmbeddingFailure

ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = ROOT / ".cache" / "bench"
# The vectors' file names the model file too: a new export of the same model is a new cache.
DEFAULT_CACHE = f"{MODEL_NAME.replace('/', '_')}-{ONNX_SHA256[:12]}"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class CachedEmbedder:
    """An embedder behind a file of the vectors it made: a text embedded once, in any run,
    is answered from the file; the model is loaded only when a text is new. `model=None`
    reads the file only (the vectors of an embedder no longer installed, for comparison)."""

    def __init__(
        self,
        name: str,
        reuse: bool,
        cache_dir: Path = CACHE_DIR,
        *,
        cache: str = DEFAULT_CACHE,
        model: Callable[[], Embedder] | None = OnnxEmbedder,
        model_name: str = MODEL_NAME,
        dimension: int = DIMENSION,
    ) -> None:
        self.path = cache_dir / f"{name}-{cache}.json"
        self._vectors: dict[str, list[float]] = (
            json.loads(self.path.read_text()) if reuse and self.path.exists() else {}
        )
        self._make = model
        self._model: Embedder | None = None
        self.model = model_name
        self.dimension = dimension
        self.embedded = 0

    def load(self) -> None:
        """Loads the model now unless the vectors come from the file (it loads on a new text)."""
        if not self._vectors:
            self._load()

    def _load(self) -> Embedder:
        if self._model is None:
            if self._make is None:
                raise EmbeddingFailure(f"{self.path} holds no vector for a text")
            self._model = self._make()
            load = getattr(self._model, "load", None)
            if load is not None:
                load()
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
