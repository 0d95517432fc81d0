"""The AWS adapters of semantic recall over real boto3 clients with botocore's Stubber, which
checks every request against the real service model (moto has no QueryVectors, and no
Bedrock InvokeModel for Titan): S3 Vectors and Titan Text Embeddings v2."""

from __future__ import annotations

import io
import json
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from agent_memory.adapters.embedders import BedrockEmbedder
from agent_memory.adapters.s3vectors import S3VectorIndex
from agent_memory.ports.vectors import (
    EmbeddingFailure,
    VectorIndexFailure,
    VectorRecord,
    VectorScope,
)

BUCKET = "agent-memory-vectors-123456789012"
INDEX = "messages-1024"


def _client(service: str) -> Any:
    return boto3.client(
        service,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def test_put_vectors_sends_ids_only_as_metadata() -> None:
    client = _client("s3vectors")
    index = S3VectorIndex(client, BUCKET, INDEX)
    record = VectorRecord(
        "th_1#0000000003", [0.5, 0.5], VectorScope("org_1", "usr_1", "agt_1", "th_1")
    )
    with Stubber(client) as stub:
        stub.add_response(
            "put_vectors",
            {},
            {
                "vectorBucketName": BUCKET,
                "indexName": INDEX,
                "vectors": [
                    {
                        "key": "th_1#0000000003",
                        "data": {"float32": [0.5, 0.5]},
                        "metadata": {
                            "org": "org_1",
                            "owner": "usr_1",
                            "group": "agt_1",
                            "thread": "th_1",
                        },
                    }
                ],
            },
        )
        index.put([record])
        stub.assert_no_pending_responses()


def test_query_is_filtered_to_the_org_and_owner_and_answers_similarities() -> None:
    client = _client("s3vectors")
    index = S3VectorIndex(client, BUCKET, INDEX)
    meta = {"org": "org_1", "owner": "usr_1", "group": "agt_1", "thread": "th_2"}
    with Stubber(client) as stub:
        stub.add_response(
            "query_vectors",
            {
                "vectors": [
                    {"key": "th_2#0000000007", "distance": 0.25, "metadata": meta},
                    {"key": "th_2#0000000001", "distance": 0.1, "metadata": meta},
                ],
                "distanceMetric": "cosine",
            },
            {
                "vectorBucketName": BUCKET,
                "indexName": INDEX,
                "topK": 5,
                "queryVector": {"float32": [1.0, 0.0]},
                "filter": {
                    "$and": [
                        {"org": {"$eq": "org_1"}},
                        {"owner": {"$eq": "usr_1"}},
                        {"group": {"$eq": "agt_1"}},
                    ]
                },
                "returnMetadata": True,
                "returnDistance": True,
            },
        )
        hits = index.query([1.0, 0.0], 5, org="org_1", owner="usr_1", group="agt_1")
    assert [h.key for h in hits] == ["th_2#0000000001", "th_2#0000000007"]
    assert hits[0].score == pytest.approx(0.9)
    assert hits[1].scope == VectorScope("org_1", "usr_1", "agt_1", "th_2")


def test_delete_vectors_and_a_refused_call_is_a_vector_index_failure() -> None:
    client = _client("s3vectors")
    index = S3VectorIndex(client, BUCKET, INDEX)
    with Stubber(client) as stub:
        stub.add_response(
            "delete_vectors",
            {},
            {"vectorBucketName": BUCKET, "indexName": INDEX, "keys": ["th_1#0000000000"]},
        )
        stub.add_client_error("delete_vectors", "TooManyRequestsException", http_status_code=429)
        stub.add_client_error("put_vectors", "ValidationException", http_status_code=400)
        index.delete(["th_1#0000000000"])
        with pytest.raises(VectorIndexFailure, match="TooManyRequestsException"):
            index.delete(["th_1#0000000001"])
        with pytest.raises(VectorIndexFailure, match="ValidationException"):
            index.put([VectorRecord("k", [1.0], VectorScope("o", "u"))])


def _body(data: dict[str, Any]) -> StreamingBody:
    raw = json.dumps(data).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def test_titan_v2_invoke_model_one_text_a_call_normalized() -> None:
    client = _client("bedrock-runtime")
    embedder = BedrockEmbedder("amazon.titan-embed-text-v2:0", client, dimensions=256)
    vector = [0.0] * 256
    vector[0] = 1.0
    with Stubber(client) as stub:
        for text in ("first", "second"):
            stub.add_response(
                "invoke_model",
                {
                    "body": _body({"embedding": vector, "inputTextTokenCount": 2}),
                    "contentType": "application/json",
                },
                {
                    "modelId": "amazon.titan-embed-text-v2:0",
                    "body": json.dumps(
                        {"inputText": text, "dimensions": 256, "normalize": True}
                    ).encode(),
                    "contentType": "application/json",
                    "accept": "application/json",
                },
            )
        out = embedder.embed(["first", "second"])
        stub.assert_no_pending_responses()
    assert embedder.model == "bedrock/amazon.titan-embed-text-v2:0"
    assert embedder.dimension == 256
    assert out == [vector, vector]


def test_titan_failures_name_bedrocks_answer_and_never_hold_the_text() -> None:
    client = _client("bedrock-runtime")
    embedder = BedrockEmbedder("amazon.titan-embed-text-v2:0", client)
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", "ThrottlingException", http_status_code=429)
        stub.add_client_error("invoke_model", "AccessDeniedException", http_status_code=403)
        stub.add_response(
            "invoke_model",
            {"body": _body({"embedding": [1.0, 2.0]}), "contentType": "application/json"},
            {"modelId": ANY, "body": ANY, "contentType": ANY, "accept": ANY},
        )
        with pytest.raises(EmbeddingFailure, match="ThrottlingException") as throttled:
            embedder.embed(["my secret plan"])
        assert "secret" not in str(throttled.value)
        with pytest.raises(EmbeddingFailure, match="AccessDeniedException"):
            embedder.embed(["x"])
        with pytest.raises(EmbeddingFailure, match="not an embedding"):
            embedder.embed(["wrong size"])
