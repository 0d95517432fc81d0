"""The Embedder port's contract: one unit vector of `dimension` floats per text, in order,
nothing for nothing, the same text the same vector, and a model name like every model's.

Run against the local model (loaded once per process), the OpenAI-compatible route over a
real local HTTP server, and Titan v2 over a Stubber'd bedrock-runtime client. The local
model's meaning is checked in tests/unit/test_recall_embeddings.py. To run it against
another adapter, add one entry to `EMBEDDERS`.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from agent_memory.ports.vectors import Embedder, Vector

TEXTS = ["I moved to Lisbon in May.", "The budget is 1500 EUR.", "I moved to Lisbon in May."]


def _pseudo(text: str, dimension: int) -> list[float]:
    """A deterministic stand-in embedding a fake provider answers (raw, not unit length)."""
    digest = hashlib.sha256(text.encode()).digest()
    return [float(digest[i % len(digest)]) + 1.0 for i in range(dimension)]


def _local(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    from agent_memory.adapters.local_embedder import shared_minilm

    yield shared_minilm()


def _openai(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    from agent_memory.adapters.embedders import OpenAIEmbedder
    from tests.support.http_fake import Reply, fake_server

    with fake_server("/v1") as server:

        class Answering(OpenAIEmbedder):
            def embed(self, texts: Sequence[str]) -> list[Vector]:
                server.replies.append(
                    Reply.json(
                        {
                            "object": "list",
                            # Out of order on purpose: `index` places each vector.
                            "data": [
                                {"object": "embedding", "index": i, "embedding": _pseudo(t, 8)}
                                for i, t in reversed(list(enumerate(texts)))
                            ],
                        }
                    )
                )
                return super().embed(texts) if texts else []

        yield Answering("nomic-embed", server.url, "sk-test", dimensions=8)
        assert all(r["path"] == "/v1/embeddings" for r in server.requests)


def _openai_of_unknown_size(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    # An Ollama or vLLM model: its size comes from its first answer.
    from agent_memory.adapters.embedders import OpenAIEmbedder
    from tests.support.embedding_server import embedding_server

    with embedding_server(dimensions=24) as server:
        embedder = OpenAIEmbedder("nomic-embed-text", server.url)
        assert embedder.dimension is None
        yield embedder
        assert embedder.dimension in (None, 24)


def _bedrock(request: pytest.FixtureRequest) -> Iterator[Embedder]:
    import boto3
    from botocore.response import StreamingBody
    from botocore.stub import Stubber

    from agent_memory.adapters.embedders import BedrockEmbedder

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    stub = Stubber(client)

    class Answering(BedrockEmbedder):
        def embed(self, texts: Sequence[str]) -> list[Vector]:
            for text in texts:
                raw = _pseudo(text, 256)
                norm = math.sqrt(sum(v * v for v in raw))
                body = json.dumps({"embedding": [v / norm for v in raw]}).encode()
                stub.add_response(
                    "invoke_model",
                    {
                        "body": StreamingBody(io.BytesIO(body), len(body)),
                        "contentType": "application/json",
                    },
                    self.request(text),
                )
            return super().embed(texts)

    with stub:
        yield Answering("amazon.titan-embed-text-v2:0", client, dimensions=256)


EMBEDDERS: dict[str, Callable[[pytest.FixtureRequest], Iterator[Embedder]]] = {
    "local": _local,
    "openai": _openai,
    "openai-of-unknown-size": _openai_of_unknown_size,
    "bedrock": _bedrock,
}


@pytest.fixture(params=sorted(EMBEDDERS))
def embedder(request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from EMBEDDERS[request.param](request)


def test_one_unit_vector_per_text_in_order(embedder: Embedder) -> None:
    vectors = embedder.embed(TEXTS)
    assert len(vectors) == len(TEXTS)
    for vector in vectors:
        assert len(vector) == embedder.dimension
        assert math.sqrt(sum(v * v for v in vector)) == pytest.approx(1.0, abs=1e-4)
    assert vectors[0] == pytest.approx(vectors[2], abs=1e-5)
    assert vectors[0] != pytest.approx(vectors[1], abs=1e-3)


def test_nothing_to_embed_is_no_call(embedder: Embedder) -> None:
    assert embedder.embed([]) == []


def test_the_model_is_named_like_every_model(embedder: Embedder) -> None:
    provider, _, name = embedder.model.partition("/")
    assert provider in {"local", "openai", "bedrock"}
    assert name


def test_the_openai_key_goes_as_a_bearer_read_at_each_call() -> None:
    # The same key and header as the OpenAI models: a rotated secret is sent from its next call.
    from agent_memory.adapters.embedders import OpenAIEmbedder
    from tests.support.http_fake import Reply, fake_server

    keys = iter(["sk-first", "sk-rotated", ""])
    with fake_server("/v1") as server:
        embedder = OpenAIEmbedder("nomic-embed", server.url, lambda: next(keys), dimensions=2)
        for _call in range(3):
            server.replies.append(Reply.json({"data": [{"index": 0, "embedding": [3.0, 4.0]}]}))
            assert embedder.embed(["hello"]) == [pytest.approx([0.6, 0.8])]
    sent = [r["headers"].get("authorization") for r in server.requests]
    assert sent == ["Bearer sk-first", "Bearer sk-rotated", None]
