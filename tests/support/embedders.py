"""An embedder small enough for tests that only need vectors to exist."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import pytest


class TinyEmbedder:
    """Eight numbers from a text's hash: these tests need vectors, not meaning (minilm
    costs ~0.5 s an embedding on this machine)."""

    model = "test/tiny"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            raw = [b + 1.0 for b in hashlib.blake2b(text.encode(), digest_size=8).digest()]
            norm = math.sqrt(sum(x * x for x in raw))
            vectors.append([x / norm for x in raw])
        return vectors


@pytest.fixture
def adapters(adapters: Any) -> Any:
    """The embedded AWS's adapters with TinyEmbedder as the embedding model."""
    adapters.embedder = TinyEmbedder()
    return adapters
