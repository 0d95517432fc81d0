"""A sentence encoder run on onnxruntime with a `tokenizers` tokenizer, no torch, no network.

The model file comes from an installed package and is checked against its pinned SHA-256
before its first use (a wrong or truncated file fails the embeddings, never the start).
Pooling and normalisation follow sentence-transformers: the token states averaged over the
attention mask (or the [CLS] state), then L2-normalised.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent_memory.ports.vectors import EmbeddingFailure, Vector

# Texts per run, similar lengths together (sorted): padding costs more than a run's overhead.
# CPU per LoCoMo message (with the one before it) on one thread: 9.7 ms at 4, 10.4 at 8,
# 12.0 at 16, 15.6 at 32, 10.3 at 1.
BATCH = 4


@dataclass(frozen=True)
class OnnxModel:
    """Where one encoder's files are and how its output becomes one vector per text."""

    name: str
    dimension: int
    # The directories of the installed packages: (the .onnx file, the tokenizer.json).
    files: Callable[[], tuple[Path, Path]]
    sha256: str
    max_tokens: int
    pooling: Literal["mean", "cls"] = "mean"
    # Prefixed to every text (a query/passage instruction); empty for MiniLM.
    prefix: str = ""


def _threads() -> int:
    """onnxruntime's intra-op threads: the process's OMP_NUM_THREADS when set (the suite and
    the benchmarks run one per worker, as numpy did), else onnxruntime's own choice (0)."""
    configured = os.environ.get("OMP_NUM_THREADS", "")
    return int(configured) if configured.isdigit() else 0


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class OnnxEmbedder:
    """One encoder; `embed` is thread-safe (onnxruntime's `run` is)."""

    def __init__(self, spec: OnnxModel) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()

    @property
    def model(self) -> str:
        return self.spec.name

    @property
    def dimension(self) -> int:
        return self.spec.dimension

    def load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime  # type: ignore[import-untyped]
            from tokenizers import Tokenizer

            onnx_file, tokenizer_file = self.spec.files()
            if file_sha256(onnx_file) != self.spec.sha256:
                raise EmbeddingFailure(
                    f"{self.spec.name}: {onnx_file} is not the pinned model file",
                    retryable=False,
                )
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(max_length=self.spec.max_tokens)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = _threads()
            options.inter_op_num_threads = 1
            # The basic rewrites only: they fold the int8 weights back to fp32 once, and the
            # graph runs in fp32 (its MatMuls are 84% of the CPU); the extended fusions ran
            # it 3-12% slower here. Quantizing the activations too (dynamic int8 MatMuls)
            # halves the CPU but moves the vectors to cosine 0.993 of these, so it is not done.
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
            session = onnxruntime.InferenceSession(
                str(onnx_file), options, providers=["CPUExecutionProvider"]
            )
            self._inputs = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        self.load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[Vector] = [[] for _ in texts]
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            vectors = self._run([self.spec.prefix + texts[i] for i in chunk])
            for i, vector in zip(chunk, vectors, strict=True):
                out[i] = [float(v) for v in vector]
        return out

    def _run(self, texts: list[str]) -> Any:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        states = self._session.run(None, feed)[0]
        if self.spec.pooling == "cls":
            pooled = states[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)
