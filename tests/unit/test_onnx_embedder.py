"""The local encoder runs only the model file it pins: another file fails its embeddings,
never the process's start."""

from __future__ import annotations

import pytest

from agent_memory.adapters.local_embedder import (
    ONNX_SHA256,
    OnnxEmbedder,
    file_sha256,
    model_files,
)
from agent_memory.ports.vectors import EmbeddingFailure


def test_the_installed_model_file_is_the_pinned_one() -> None:
    onnx_file, tokenizer_file = model_files()
    assert file_sha256(onnx_file) == ONNX_SHA256
    assert tokenizer_file.name == "tokenizer.json"


def test_a_model_file_of_another_hash_fails_the_embedding_not_the_start() -> None:
    embedder = OnnxEmbedder(sha256="0" * 64)
    assert embedder.dimension == 384
    with pytest.raises(EmbeddingFailure, match="pinned"):
        embedder.embed(["I moved to Lisbon in May."])


def test_texts_of_any_length_come_back_in_order() -> None:
    from agent_memory.adapters.local_embedder import shared_minilm

    model = shared_minilm()
    texts = ["ok", "I moved to Lisbon in May. " * 80, "We adopted a dog called Rex.", "ok"]
    vectors = model.embed(texts)
    alone = [model.embed([t])[0] for t in texts]
    for batched, single in zip(vectors, alone, strict=True):
        assert batched == pytest.approx(single, abs=1e-4)
    assert vectors[0] == pytest.approx(vectors[3], abs=1e-6)
