"""The VectorIndex port's contract: nearest first, bounded to one organization and owner,
narrowed by group and thread, puts replace, deletes remove, batches bounded.

Run against the in-process index (in memory, and kept in a file across a reopen) and the
S3 Vectors adapter over a fake `s3vectors` client that checks every request against the
real service model (botocore's validator) and evaluates the metadata filter (moto has no
QueryVectors). To run it against another adapter, add one entry to `INDEXES`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator

from agent_memory.ports.vectors import (
    MAX_PUT_BATCH,
    VectorIndex,
    VectorRecord,
    VectorScope,
)

DIM = 4


class FakeS3Vectors:
    """`s3vectors` put/query/delete semantics (cosine), requests validated against the
    service model as botocore would send them."""

    def __init__(self) -> None:
        self._model = botocore.session.get_session().get_service_model("s3vectors")
        self.vectors: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def _check(self, operation: str, params: dict[str, Any]) -> None:
        shape = self._model.operation_model(operation).input_shape
        report = ParamValidator().validate(params, shape)
        if report.has_errors():
            raise AssertionError(report.generate_report())
        self.calls.append((operation, params))

    def put_vectors(self, **params: Any) -> dict[str, Any]:
        self._check("PutVectors", params)
        for vector in params["vectors"]:
            self.vectors[vector["key"]] = vector
        return {}

    def delete_vectors(self, **params: Any) -> dict[str, Any]:
        self._check("DeleteVectors", params)
        for key in params["keys"]:
            self.vectors.pop(key, None)
        return {}

    def query_vectors(self, **params: Any) -> dict[str, Any]:
        self._check("QueryVectors", params)
        query = params["queryVector"]["float32"]
        found = []
        for vector in self.vectors.values():
            if not _matches(params.get("filter"), vector["metadata"]):
                continue
            data = vector["data"]["float32"]
            dot = sum(a * b for a, b in zip(query, data, strict=True))
            norms = math.sqrt(sum(a * a for a in query)) * math.sqrt(sum(b * b for b in data))
            found.append(
                {"key": vector["key"], "distance": 1 - dot / norms, "metadata": vector["metadata"]}
            )
        found.sort(key=lambda v: v["distance"])
        return {"vectors": found[: params["topK"]], "distanceMetric": "cosine"}


def _matches(condition: Any, metadata: dict[str, Any]) -> bool:
    if condition is None:
        return True
    if "$and" in condition:
        return all(_matches(c, metadata) for c in condition["$and"])
    ((name, test),) = condition.items()
    return bool(metadata.get(name) == test["$eq"])


def _memory(request: pytest.FixtureRequest) -> VectorIndex:
    from agent_memory.adapters.vector_index import InProcessVectorIndex

    return InProcessVectorIndex(DIM)


class _Reopening:
    """The file-backed index, reopened from its log before every query."""

    def __init__(self, path: Any, dimension: int | None = DIM) -> None:
        from agent_memory.adapters.vector_index import InProcessVectorIndex

        self._path = path
        self._dimension = dimension
        self._index = InProcessVectorIndex(dimension, path)

    def _reopen(self) -> Any:
        from agent_memory.adapters.vector_index import InProcessVectorIndex

        self._index = InProcessVectorIndex(self._dimension, self._path)
        return self._index

    def put(self, records: Any) -> None:
        self._index.put(records)

    def delete(self, keys: Any) -> None:
        self._index.delete(keys)

    def query(self, *args: Any, **kwargs: Any) -> Any:
        return self._reopen().query(*args, **kwargs)


def _file(request: pytest.FixtureRequest) -> VectorIndex:
    return _Reopening(request.getfixturevalue("tmp_path") / "vectors.log")


def _file_sized_by_its_first_vector(request: pytest.FixtureRequest) -> VectorIndex:
    # An embedding model of unknown size: the index takes the size its log keeps.
    return _Reopening(request.getfixturevalue("tmp_path") / "vectors.log", None)


def _s3(request: pytest.FixtureRequest) -> VectorIndex:
    from agent_memory.adapters.s3vectors import S3VectorIndex

    return S3VectorIndex(FakeS3Vectors(), "agent-memory-vectors", "messages-384")


INDEXES: dict[str, Callable[[pytest.FixtureRequest], VectorIndex]] = {
    "in-process": _memory,
    "in-process-file": _file,
    "in-process-file-sized-by-first-vector": _file_sized_by_its_first_vector,
    "s3vectors": _s3,
}


@pytest.fixture(params=sorted(INDEXES))
def index(request: pytest.FixtureRequest) -> VectorIndex:
    return INDEXES[request.param](request)


def _scope(owner: str = "u1", thread: str = "t1", org: str = "o1", group: str = "a1") -> Any:
    return VectorScope(org, owner, group, thread)


def _record(key: str, vector: list[float], **scope: str) -> VectorRecord:
    return VectorRecord(key, vector, _scope(**scope))


def test_nearest_first_with_cosine_scores(index: VectorIndex) -> None:
    index.put(
        [
            _record("k1", [1, 0, 0, 0]),
            _record("k2", [0.8, 0.6, 0, 0]),
            _record("k3", [0, 1, 0, 0]),
        ]
    )
    hits = index.query([1, 0, 0, 0], 2, org="o1", owner="u1")
    assert [h.key for h in hits] == ["k1", "k2"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[1].score == pytest.approx(0.8, abs=1e-5)
    assert hits[0].scope == _scope()


def test_queries_never_cross_owners_or_organizations(index: VectorIndex) -> None:
    index.put(
        [
            _record("mine", [0, 1, 0, 0]),
            _record("other-user", [1, 0, 0, 0], owner="u2"),
            _record("other-org", [1, 0, 0, 0], org="o2"),
        ]
    )
    hits = index.query([1, 0, 0, 0], 10, org="o1", owner="u1")
    assert [h.key for h in hits] == ["mine"]
    assert index.query([1, 0, 0, 0], 10, org="o3", owner="u1") == []


def test_group_and_thread_narrow_the_query(index: VectorIndex) -> None:
    index.put(
        [
            _record("t1", [1, 0, 0, 0], thread="t1"),
            _record("t2", [1, 0.1, 0, 0], thread="t2"),
            _record("other-agent", [1, 0, 0, 0], group="a2", thread="t3"),
        ]
    )
    assert {h.key for h in index.query([1, 0, 0, 0], 10, org="o1", owner="u1", group="a1")} == {
        "t1",
        "t2",
    }
    only = index.query([1, 0, 0, 0], 10, org="o1", owner="u1", group="a1", thread="t2")
    assert [h.key for h in only] == ["t2"]


def test_a_put_replaces_and_a_delete_removes(index: VectorIndex) -> None:
    index.put([_record("k1", [1, 0, 0, 0]), _record("k2", [0, 1, 0, 0])])
    index.put([_record("k1", [0, 0, 1, 0])])
    hits = index.query([0, 0, 1, 0], 10, org="o1", owner="u1")
    assert hits[0].key == "k1"
    assert len(hits) == 2
    index.delete(["k1", "never-put"])
    assert [h.key for h in index.query([0, 0, 1, 0], 10, org="o1", owner="u1")] == ["k2"]


def test_batches_are_bounded_as_s3_vectors_bounds_them(index: VectorIndex) -> None:
    too_many = [_record(f"k{i}", [1, 0, 0, 0]) for i in range(MAX_PUT_BATCH + 1)]
    with pytest.raises(ValueError, match="500"):
        index.put(too_many)
    index.put(too_many[:MAX_PUT_BATCH])
    assert len(index.query([1, 0, 0, 0], 100, org="o1", owner="u1")) == 100
    with pytest.raises(ValueError, match="top_k"):
        index.query([1, 0, 0, 0], 101, org="o1", owner="u1")
    with pytest.raises(ValueError, match="owner"):
        index.query([1, 0, 0, 0], 10, org="o1", owner="")
