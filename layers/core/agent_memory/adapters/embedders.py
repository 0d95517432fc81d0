"""The deployment's embedder from its name (`EMBEDDING_MODEL`, named like models), and the
embedders over the network (API.md, "Threads").

Building one calls no model: a model that cannot be reached fails the embeddings that need
it, never the start. Vectors from the network are normalised here, as some servers answer
raw ones; a model of unknown size takes its first answer's. Texts never appear in an error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qs

from agent_memory.adapters.http_models import (
    OPENAI_BASE_URL,
    ApiKeySource,
    JsonEndpoint,
    bearer_headers,
    read_key,
)
from agent_memory.adapters.local_embedder import MODEL_NAME
from agent_memory.ports.models import ModelFailure
from agent_memory.ports.vectors import Embedder, EmbeddingFailure, Vector

TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_DIMENSIONS = (256, 512, 1024)
# Titan v2 reads at most 8,192 tokens or 50,000 characters.
TITAN_MAX_CHARS = 50_000
OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# Inputs per `/embeddings` call (OpenAI accepts 2,048).
OPENAI_BATCH = 256
DEADLINE_S = 30.0


def _unit(vector: Sequence[float]) -> Vector:
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [float(v) / norm for v in vector]


class BedrockEmbedder:
    """Titan Text Embeddings v2 over `bedrock-runtime` InvokeModel."""

    def __init__(self, model_id: str, client: Any, *, dimensions: int = 1024) -> None:
        if model_id != TITAN_V2:
            raise EmbeddingFailure(f"unknown Bedrock embedding model {model_id}")
        if dimensions not in TITAN_DIMENSIONS:
            raise EmbeddingFailure("Titan v2 embeds in 256, 512 or 1024 dimensions")
        self._model_id = model_id
        self._client = client
        self._dimensions = dimensions

    @property
    def model(self) -> str:
        return f"bedrock/{self._model_id}"

    @property
    def dimension(self) -> int:
        return self._dimensions

    def request(self, text: str) -> dict[str, Any]:
        """The InvokeModel parameters for one text (public for tests)."""
        body = {
            "inputText": text[:TITAN_MAX_CHARS],
            "dimensions": self._dimensions,
            "normalize": True,
        }
        return {
            "modelId": self._model_id,
            "body": json.dumps(body).encode(),
            "contentType": "application/json",
            "accept": "application/json",
        }

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> Vector:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._client.invoke_model(**self.request(text))
            data = json.loads(response["body"].read())
        except ClientError as error:
            # Bedrock's own message is left out: it may quote the text.
            code = str(error.response.get("Error", {}).get("Code", ""))
            raise EmbeddingFailure(f"Bedrock answered {code}") from None
        except BotoCoreError as error:
            raise EmbeddingFailure(f"Bedrock call failed: {type(error).__name__}") from None
        except (KeyError, ValueError):
            raise EmbeddingFailure("Bedrock's answer is not an embedding") from None
        vector = data.get("embedding") if isinstance(data, dict) else None
        if not isinstance(vector, list) or len(vector) != self._dimensions:
            raise EmbeddingFailure("Bedrock's answer is not an embedding")
        return [float(v) for v in vector]


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` route; a callable key is read at each call."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: ApiKeySource = "",
        *,
        dimensions: int | None = None,
    ) -> None:
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        self._api_key = api_key
        self._asked = dimensions
        # None until the first answer tells it (a model this module does not know).
        self._dimensions: int | None = dimensions or OPENAI_DIMENSIONS.get(model)

    @property
    def model(self) -> str:
        return f"openai/{self._model}"

    @property
    def dimension(self) -> int | None:
        return self._dimensions

    def body(self, texts: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "input": list(texts),
            "encoding_format": "float",
        }
        if self._asked is not None:
            body["dimensions"] = self._asked
        return body

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), OPENAI_BATCH):
            out.extend(self._batch(texts[start : start + OPENAI_BATCH]))
        return out

    def _batch(self, texts: Sequence[str]) -> list[Vector]:
        try:
            key = read_key(self._api_key)
            data, _latency = JsonEndpoint(self._url, key).post(
                self.body(texts), bearer_headers(key), DEADLINE_S
            )
        except ModelFailure as failure:
            raise EmbeddingFailure(str(failure)) from None
        rows = data.get("data") if isinstance(data, dict) else None
        if not isinstance(rows, list) or len(rows) != len(texts):
            raise EmbeddingFailure("the answer has not one embedding per input")
        size = self._dimensions or _first_size(rows)
        vectors: list[Vector | None] = [None] * len(texts)
        for position, row in enumerate(rows):
            index = row.get("index", position) if isinstance(row, dict) else None
            vector = row.get("embedding") if isinstance(row, dict) else None
            if (
                not isinstance(index, int)
                or not 0 <= index < len(texts)
                or not isinstance(vector, list)
                or len(vector) != size
            ):
                raise EmbeddingFailure(
                    f"an embedding of the answer is malformed (expected {size} numbers)"
                )
            vectors[index] = _unit(vector)
        if any(v is None for v in vectors):
            raise EmbeddingFailure("the answer has not one embedding per input")
        # Learned once the whole answer holds: a malformed first answer teaches nothing.
        self._dimensions = size
        return [v for v in vectors if v is not None]


def _first_size(rows: Sequence[Any]) -> int:
    first = rows[0] if rows else None
    vector = first.get("embedding") if isinstance(first, dict) else None
    if not isinstance(vector, list) or not vector:
        raise EmbeddingFailure("an embedding of the answer is malformed")
    return len(vector)


def embedder_for(
    name: str,
    *,
    region: str = "us-east-1",
    openai_base_url: str = OPENAI_BASE_URL,
    openai_key: Callable[[], str] = lambda: "",
) -> Embedder:
    """The embedder `name` names; EmbeddingFailure for an unknown one."""
    provider, _, rest = name.partition("/")
    model, _, query = rest.partition("?")  # `model?dimensions=256`
    asked = parse_qs(query).get("dimensions", [""])[-1]
    dimensions = int(asked) if asked.isdigit() else None
    if name == MODEL_NAME:
        from agent_memory.adapters.local_embedder import shared_minilm

        return shared_minilm()
    if provider == "bedrock":
        from agent_memory.adapters.bedrock import default_client

        return BedrockEmbedder(model, default_client(region, 10.0), dimensions=dimensions or 1024)
    if provider == "openai" and model:
        return OpenAIEmbedder(model, openai_base_url, openai_key, dimensions=dimensions)
    raise EmbeddingFailure(f"unknown embedding model {name}")
