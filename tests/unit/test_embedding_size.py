"""An embedding model of unknown size (an Ollama or vLLM model named `openai/<model>`): the
embedder takes the size of its first answer, a size named in `EMBEDDING_MODEL` wins, and
the in-process index is made once with the size of its first vector, which its log keeps.
Building either calls no model, so a model that cannot be reached never stops a start."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.adapters.embedders import OpenAIEmbedder, embedder_for
from agent_memory.adapters.vector_index import InProcessVectorIndex
from agent_memory.ports.vectors import EmbeddingFailure, VectorRecord, VectorScope
from tests.support.embedding_server import embedding_server
from tests.support.http_fake import Reply, fake_server

SCOPE = VectorScope("o1", "u1", "a1", "t1")


def test_the_size_comes_from_the_first_answer() -> None:
    with embedding_server(dimensions=24) as server:
        embedder = embedder_for("openai/nomic-embed-text", openai_base_url=server.url)
        assert (embedder.model, embedder.dimension) == ("openai/nomic-embed-text", None)
        [vector] = embedder.embed(["I moved to Lisbon."])
        assert len(vector) == 24
        assert embedder.dimension == 24
        assert server.asked == [None]  # no size is asked of a model whose size is unknown


def test_a_later_answer_of_another_size_is_refused() -> None:
    with fake_server("/v1") as server:
        embedder = OpenAIEmbedder("nomic-embed-text", server.url)
        for size in (3, 4):
            answer = {"data": [{"index": 0, "embedding": [1.0] * size}]}
            server.replies.append(Reply.json(answer))
        embedder.embed(["one"])
        with pytest.raises(EmbeddingFailure, match="expected 3 numbers"):
            embedder.embed(["two"])
        assert embedder.dimension == 3


def test_a_malformed_first_answer_teaches_nothing() -> None:
    with fake_server("/v1") as server:
        embedder = OpenAIEmbedder("nomic-embed-text", server.url)
        server.replies.append(Reply.json({"data": [{"index": 0, "embedding": []}]}))
        with pytest.raises(EmbeddingFailure, match="malformed"):
            embedder.embed(["one"])
        assert embedder.dimension is None


def test_a_configured_size_wins() -> None:
    with embedding_server(dimensions=24) as server:
        embedder = embedder_for("openai/nomic-embed-text?dimensions=16", openai_base_url=server.url)
        assert embedder.dimension == 16
        assert len(embedder.embed(["hello"])[0]) == 16
        assert server.asked == [16]
    with fake_server("/v1") as server:
        sized = OpenAIEmbedder("nomic-embed-text", server.url, dimensions=16)
        server.replies.append(Reply.json({"data": [{"index": 0, "embedding": [1.0] * 24}]}))
        with pytest.raises(EmbeddingFailure, match="expected 16 numbers"):
            sized.embed(["hello"])


def test_a_model_that_cannot_be_reached_is_built_and_fails_only_its_embeddings() -> None:
    with embedding_server() as server:
        url = server.url
    embedder = embedder_for("openai/nomic-embed-text", openai_base_url=url)
    with pytest.raises(EmbeddingFailure, match="cannot reach"):
        embedder.embed(["hello"])
    assert embedder.dimension is None


def test_the_index_is_made_with_its_first_vectors_size_and_keeps_it(tmp_path: Path) -> None:
    log = tmp_path / "vectors.log"
    index = InProcessVectorIndex(None, log)
    assert index.query([1.0, 0.0], 3, org="o1", owner="u1") == []
    index.put([VectorRecord("k1", [1.0, 0.0, 0.0], SCOPE)])
    assert index.dimension == 3
    with pytest.raises(ValueError, match="holds vectors of 3 dimensions, not 4"):
        index.put([VectorRecord("k2", [1.0, 0.0, 0.0, 0.0], SCOPE)])
    reopened = InProcessVectorIndex(None, log)
    assert reopened.dimension == 3
    [hit] = reopened.query([1.0, 0.0, 0.0], 3, org="o1", owner="u1")
    assert hit.key == "k1"
    with pytest.raises(ValueError, match="holds vectors of 3 dimensions, not 2"):
        reopened.query([1.0, 0.0], 3, org="o1", owner="u1")
    # A size configured later that the log contradicts is named at the start.
    with pytest.raises(ValueError, match="holds vectors of 5 dimensions, not 3"):
        InProcessVectorIndex(5, log)
