"""A learning run as its rows name it, and what every kind of run row shares.

A pool's runs live in its partition, `LEARN#<kind>#<poolId>` (persistence/keys.py): one
execution row each (`EXEC#`), its evidence row (`EVIDENCE#`) and its model calls (`CALL#`).
What may hold content is sealed under the pool's encryption context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.persistence.keys import evidence_sk, execution_sk, learn_pk
from agent_memory.persistence.rows import SealedRows
from agent_memory.ports import Absent, Delete, Put, Record
from agent_memory.ports.store import write_in_batches

Status = Literal["waiting", "running", "succeeded", "failed", "skipped"]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "skipped"})


@dataclass(frozen=True)
class Run:
    """One execution as its input names it: the pool, the name, when it was asked for,
    why, and the last item it may read."""

    kind: str
    org_id: str
    pool_id: str
    name: str
    requested_at: int
    reason: str
    upto: int
    # The conversation whose items the run reads, when its pool spans several: (kind, id),
    # an agent's session or a bot's chat.
    source: tuple[str, str] | None = None

    @property
    def fields(self) -> Record:
        """The fields of every row that names the run (its execution row, a wait's link, a
        deferral's note), as `of_row` reads them: `startedAt` is when it was asked for."""
        return {
            "org": self.org_id,
            "name": self.name,
            "startedAt": self.requested_at,
            "reason": self.reason,
            "upto": self.upto,
        } | self.source_fields

    @classmethod
    def of_row(cls, record: Record, kind: str, pool_id: str) -> Run:
        """The run a row of the pool `kind`/`pool_id` names (`fields`)."""
        return cls(
            kind,
            str(record["org"]),
            pool_id,
            str(record["name"]),
            int(record["startedAt"]),
            str(record["reason"]),
            int(record["upto"]),
            source_of(record),
        )

    @property
    def source_fields(self) -> Record:
        """The row field naming the run's conversation (`sessionId`, `chatId`): its erasure
        finds the run by it."""
        if self.source is None:
            return {}
        kind, source_id = self.source
        return {f"{kind}Id": source_id}

    @property
    def pk(self) -> str:
        return learn_pk(self.kind, self.pool_id)

    @property
    def sk(self) -> str:
        return execution_sk(self.requested_at, self.name)

    @property
    def evidence_sk(self) -> str:
        return evidence_sk(self.requested_at, self.name)


# The kinds of conversation a run may read besides its pool's own.
SOURCE_KINDS = ("session", "chat")


def source_of(record: Record) -> tuple[str, str] | None:
    """The conversation a run's row names (`Run.source_fields`)."""
    for kind in SOURCE_KINDS:
        if f"{kind}Id" in record:
            return kind, str(record[f"{kind}Id"])
    return None


@dataclass(frozen=True)
class Began:
    """What a run that learns begins with: the read position, the items it read, the model."""

    position: int
    item_ids: list[str]
    model: str | None = None

    def fields(self) -> Record:
        return {"position": self.position, "itemIds": self.item_ids, "model": self.model}


@dataclass(frozen=True)
class ExecutionRow:
    run: Run
    status: Status
    started_at: int
    ended_at: int | None
    position: int | None
    item_ids: list[str]
    model: str | None
    applied: list[dict[str, str]]
    error_type: str | None
    record: Record = field(repr=False)
    # The run's evidence row, when it was read with the execution row.
    kept: Record | None = field(default=None, repr=False)
    # When a waited run began on its evidence row (`begun`), else None.
    began_at: int | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def begun(self) -> bool:
        """A waited run stays `waiting` on its execution row once it began on its evidence
        row: it is running, with the position, items and model that row holds."""
        return self.status == "waiting" and self.kept is not None


# A run's evidence, call and reply rows expire this long after they are written.
ROW_TTL_S = 7 * 24 * 3600


class RunRows(SealedRows):
    """The store, cipher and row shapes that every repository of run rows shares."""

    @staticmethod
    def _ttl(now: int) -> int:
        return now // 1000 + ROW_TTL_S

    def _put_once(self, record: Record, busy: str) -> Record | None:
        """Put `record` where no row is: None when written, else the row that stands. Raises
        Unavailable(`busy`) when the put was refused yet no row is found (a transaction on it
        won and is not written yet)."""
        try:
            self._store.write([Put(record, Absent())])
            return None
        except WriteConflict:
            kept = self._store.get(str(record["pk"]), str(record["sk"]))
        if kept is None:
            raise Unavailable(busy)
        return kept

    @staticmethod
    def _base(run: Run) -> Record:
        """The execution row's fields that every status writes."""
        return {
            "pk": run.pk,
            "sk": run.sk,
            "type": "learning-execution",
            "applied": [],
        } | run.fields

    @staticmethod
    def _row(run: Run, record: Record, kept: Record | None = None) -> ExecutionRow:
        """The row as read; a waited run that began on its evidence row (`kept`) shows the
        position, items and model written there."""
        began = kept if record["status"] == "waiting" else None
        shown = began or record
        position = shown.get("position")
        return ExecutionRow(
            run=run,
            status=cast(Status, record["status"]),
            started_at=int(record["startedAt"]),
            ended_at=int(record["endedAt"]) if "endedAt" in record else None,
            position=int(position) if position is not None else None,
            item_ids=[str(i) for i in shown.get("itemIds", [])],
            model=shown.get("model"),
            applied=[dict(a) for a in record.get("applied", [])],
            error_type=record.get("errorType"),
            record=record,
            kept=kept,
            began_at=int(began["beganAt"]) if began else None,
        )

    def _at(self, run: Run, *sks: str) -> dict[str, Record]:
        """The run's partition's rows at `sks` that exist, by sort key (one BatchGetItem)."""
        return {str(r["sk"]): r for r in self._store.get_many([(run.pk, sk) for sk in sks])}

    def _delete(self, keys: Sequence[tuple[str, str]]) -> None:
        write_in_batches(self._store, [Delete(pk, sk) for pk, sk in keys])

    # One coarse encryption context per pool (the data-key cache is partitioned by it); the
    # row and field are sealed inside, so a blob moved to another row or field fails to open.
    @staticmethod
    def _scope(run: Run) -> dict[str, str]:
        return {"org": run.org_id, "pool": f"{run.kind}:{run.pool_id}", "field": "learning"}

    def _seal(self, run: Run, sk: str, field_name: str, text: str) -> bytes:
        return self._cipher.seal(text, scope=self._scope(run), row=f"{sk}/{field_name}")

    def _open(self, run: Run, sk: str, field_name: str, blob: bytes) -> str:
        return self._cipher.open(blob, scope=self._scope(run), row=f"{sk}/{field_name}")
