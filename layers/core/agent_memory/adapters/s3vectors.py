"""`ports.VectorIndex` over Amazon S3 Vectors (boto3 `s3vectors`).

One index per dimension shared by every organization (10,000 indexes a bucket would cap
them): the ids that bound every query are filterable metadata; no text is ever stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.ports.vectors import (
    MAX_DELETE_BATCH,
    MAX_PUT_BATCH,
    Vector,
    VectorHit,
    VectorIndexFailure,
    VectorRecord,
    VectorScope,
    check_query,
)


class S3VectorIndex:
    def __init__(self, client: Any, bucket: str, index: str) -> None:
        self._client = client
        self._bucket = bucket
        self._index = index

    def _call(self, operation: str, **params: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self._client, operation)(
                vectorBucketName=self._bucket, indexName=self._index, **params
            )
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            raise VectorIndexFailure(f"S3 Vectors answered {code}") from None
        except BotoCoreError as error:
            raise VectorIndexFailure(f"S3 Vectors call failed: {type(error).__name__}") from None

    def put(self, records: Sequence[VectorRecord]) -> None:
        if not records:
            return
        if len(records) > MAX_PUT_BATCH:
            raise ValueError(f"at most {MAX_PUT_BATCH} vectors a put")
        vectors = [
            {
                "key": r.key,
                "data": {"float32": [float(v) for v in r.vector]},
                "metadata": {
                    "org": r.scope.org,
                    "owner": r.scope.owner,
                    "group": r.scope.group,
                    "thread": r.scope.thread,
                },
            }
            for r in records
        ]
        self._call("put_vectors", vectors=vectors)

    def delete(self, keys: Sequence[str]) -> None:
        if not keys:
            return
        if len(keys) > MAX_DELETE_BATCH:
            raise ValueError(f"at most {MAX_DELETE_BATCH} keys a delete")
        self._call("delete_vectors", keys=list(keys))

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
        check_query(top_k, org, owner)
        answer = self._call(
            "query_vectors",
            topK=top_k,
            queryVector={"float32": [float(v) for v in vector]},
            filter=_filter(org, owner, group, thread),
            returnMetadata=True,
            returnDistance=True,
        )
        hits = []
        for found in answer.get("vectors", []):
            meta = found.get("metadata") or {}
            scope = VectorScope(
                str(meta.get("org", "")),
                str(meta.get("owner", "")),
                str(meta.get("group", "")),
                str(meta.get("thread", "")),
            )
            # Cosine distance is 1 - similarity.
            score = 1.0 - float(found.get("distance", 1.0))
            hits.append(VectorHit(str(found["key"]), score, scope))
        hits.sort(key=lambda h: -h.score)
        return hits


def _filter(org: str, owner: str, group: str | None, thread: str | None) -> dict[str, Any]:
    """The metadata filter of a query: always org and owner."""
    terms: list[dict[str, Any]] = [{"org": {"$eq": org}}, {"owner": {"$eq": owner}}]
    if group is not None:
        terms.append({"group": {"$eq": group}})
    if thread is not None:
        terms.append({"thread": {"$eq": thread}})
    return {"$and": terms}


def default_client(region: str) -> Any:
    """An `s3vectors` client for `region` (short timeouts: the context waits on queries)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=2,
        read_timeout=5,
        retries={"mode": "standard", "max_attempts": 3},
    )
    return boto3.client("s3vectors", region_name=region, config=config)
