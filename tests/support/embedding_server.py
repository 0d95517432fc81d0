"""A real local OpenAI-compatible embedding server (`POST /v1/embeddings`), as an Ollama or
vLLM user runs one: it embeds each input as a hashed bag of its words, so texts that share
words are close. Its size is its own (`dimensions`, or what a request asks), never
announced: a client learns it from the answers."""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.http_fake import PostServer, Reply


def bag_of_words(text: str, dimensions: int) -> list[float]:
    """A unit vector with one slot per word (hashed), or the first slot for no words."""
    vector = [0.0] * dimensions
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[zlib.crc32(word.encode()) % dimensions] += 1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if not norm:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


@dataclass
class EmbeddingServer:
    url: str = ""
    dimensions: int = 48
    # Models asked, and the size each request asked (None: none), one per request.
    models: list[str] = field(default_factory=list)
    asked: list[int | None] = field(default_factory=list)
    # While set, every request answers 503 (the server is down).
    down: bool = False


@contextmanager
def embedding_server(dimensions: int = 48) -> Iterator[EmbeddingServer]:
    """The server on 127.0.0.1; `url` is its OpenAI base URL (`.../v1`)."""
    state = EmbeddingServer(dimensions=dimensions)

    def answer(path: str, headers: dict[str, str], raw: bytes) -> Reply:
        body = json.loads(raw)
        if path != "/v1/embeddings" or state.down:
            return Reply.json({"error": "not here"}, 503 if state.down else 404)
        state.models.append(str(body.get("model")))
        state.asked.append(body.get("dimensions"))
        # A size asked in the request is honoured, as OpenAI's models honour it.
        size = int(body.get("dimensions") or state.dimensions)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": bag_of_words(t, size)}
            for i, t in enumerate(texts)
        ]
        return Reply.json({"object": "list", "data": data, "model": body.get("model")})

    server = PostServer(answer, "/v1")
    state.url = server.url
    try:
        yield state
    finally:
        server.close()
