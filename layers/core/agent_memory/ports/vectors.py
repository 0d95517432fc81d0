"""Embeddings and the vector index, which holds vectors and plaintext ids, never text.

Every query requires an organization and an owner, so none can ask across users by leaving
a filter out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agent_memory.domain.errors import Unavailable

Vector = list[float]

# S3 Vectors' limits, kept by every adapter so the in-process index behaves like the real one.
MAX_PUT_BATCH = 500
MAX_DELETE_BATCH = 500
MAX_TOP_K = 100
MAX_KEY_LENGTH = 1024


class VectorIndexFailure(Unavailable):
    """A vector index call that failed (S3 Vectors refused or could not be reached). Where
    nothing catches it, a client sees a 503."""


class EmbeddingFailure(Exception):
    """An embedding call that failed."""


class Embedder(Protocol):
    """Texts to unit vectors of `dimension` floats, one per text, in order."""

    @property
    def model(self) -> str: ...

    @property
    def dimension(self) -> int | None:
        """None until the first answer of a model whose size is not known in advance."""
        ...

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Raises `EmbeddingFailure` when the model cannot answer."""
        ...


@dataclass(frozen=True)
class VectorScope:
    """`org` and `owner` bound every query; `group` (an agent, a memory space) and `thread`
    narrow it."""

    org: str
    owner: str
    group: str = ""
    thread: str = ""


@dataclass(frozen=True)
class VectorRecord:
    key: str
    vector: Vector
    scope: VectorScope


@dataclass(frozen=True)
class VectorHit:
    key: str
    # Cosine similarity, in [-1, 1]: higher is closer.
    score: float
    scope: VectorScope


class VectorIndex(Protocol):
    """Vectors by key within scopes. Writes are batches of at most `MAX_PUT_BATCH` /
    `MAX_DELETE_BATCH` (callers split, adapters check); putting a key again replaces it."""

    def put(self, records: Sequence[VectorRecord]) -> None: ...

    def delete(self, keys: Sequence[str]) -> None:
        """Remove keys; unknown keys are ignored."""
        ...

    def query(
        self,
        vector: Vector,
        top_k: int,
        *,
        org: str,
        owner: str,
        group: str | None = None,
        thread: str | None = None,
    ) -> list[VectorHit]:
        """At most `top_k` (1..MAX_TOP_K) nearest vectors in the scope, closest first."""

        ...


def check_query(top_k: int, org: str, owner: str) -> None:
    """What every index refuses before it searches."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k is 1..{MAX_TOP_K}")
    if not org or not owner:
        raise ValueError("a query is bounded to an organization and an owner")
