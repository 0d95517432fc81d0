"""A pool's learning runs: one execution row each, and its evidence on a row of its own.

- `EXEC#<requestedAt:013d>#<name>`: status, times, item ids, applied keys, error type in
  plaintext; `detail` seals what may hold content (rejected changes, the error message). It
  stays small: its end bills its size twice.
- `EVIDENCE#<requestedAt:013d>#<name>`: the sealed evidence, written once by LoadEvidence and
  read with the execution row in one request; it expires at its `ttl` (a Delete in the end's
  transaction would bill its whole size). A waited run begins on it: its execution row stays
  `waiting` until the run ends, and this row holds its position, items and model.

Model calls live in persistence/model_calls.py, waits in persistence/waits.py; this
repository is all three, so a step holds one object for its run's rows.
"""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

from agent_memory.domain.errors import WriteConflict
from agent_memory.persistence.events import execution_ended
from agent_memory.persistence.keys import EXEC_PREFIX, learn_pk
from agent_memory.persistence.model_calls import ModelCallRows
from agent_memory.persistence.runs import Began, ExecutionRow, Run, Status
from agent_memory.persistence.waits import WaitRows
from agent_memory.ports import Absent, Action, Equals, KeyRange, Put, Record, Update

# Error messages are kept short: they are shown to clients, never a dump.
MAX_MESSAGE = 500
# The name of the condition that ends a run: a conflict on it means the run ended elsewhere.
RUN_ENDS = "execution-running"


class ExecutionRepository(ModelCallRows, WaitRows):
    def get(self, run: Run, *, evidence: bool = False) -> ExecutionRow | None:
        """The run's row; with its evidence row too when `evidence` (one request)."""
        if not evidence:
            record = self._store.get(run.pk, run.sk)
            return self._row(run, record) if record else None
        found = self._at(run, run.sk, run.evidence_sk)
        record = found.get(run.sk)
        return self._row(run, record, found.get(run.evidence_sk)) if record else None

    def newest(self, kind: str, pool_id: str, limit: int) -> list[ExecutionRow]:
        """The newest `limit` executions of a pool, newest first; the rows still `waiting`
        are read with their evidence rows (one more request), so a waited run that began
        there shows as running."""
        pk = learn_pk(kind, pool_id)
        page = self._store.query(pk, KeyRange(prefix=EXEC_PREFIX), limit=limit, newest_first=True)
        listed = [(Run.of_row(record, kind, pool_id), record) for record in page.records]
        waiting = [run for run, record in listed if record["status"] == "waiting"]
        kept: dict[str, Record] = {}
        if waiting:
            found = self._store.get_many([(pk, run.evidence_sk) for run in waiting])
            kept = {str(r["sk"]): r for r in found}
        return [self._row(run, record, kept.get(run.evidence_sk)) for run, record in listed]

    def keep_evidence(self, run: Run, evidence: str, now: int, begins: Began | None = None) -> str:
        """Seal the run's `evidence` JSON on its own row and return the evidence the run
        learns from: this one, or the one an earlier attempt kept first (a retried step may
        load different evidence; the first one stands, so the execution row, its evidence
        and a saved answer agree). `begins`: a waited run begins on this row, which then
        holds what it began with and `beganAt`."""
        sk = run.evidence_sk
        record: Record = {
            "pk": run.pk,
            "sk": sk,
            "type": "learning-evidence",
            "name": run.name,
            "evidence": self._seal(run, sk, "evidence", evidence),
            "ttl": self._ttl(now),
        }
        if begins is not None:
            record |= begins.fields() | {"beganAt": now}
        record |= run.source_fields  # erasure of the conversation finds it
        kept = self._put_once(record, "the run's evidence changed while it was kept; retry shortly")
        return evidence if kept is None else self._open(run, sk, "evidence", kept["evidence"])

    def begin(
        self,
        run: Run,
        now: int,
        began: Began | None,
        *,
        note: str | None = None,
        waited: bool = False,
    ) -> None:
        """Write the row of a run that starts (`began`, its evidence kept first) or that
        has nothing to learn (None: skipped, with why in `note`). A wait's `waiting` row is
        taken over; a wait started before its row was written has none, and it is put.
        Raises WriteConflict when the row exists and was begun (a retried or repeated step)."""
        if began is not None:
            record = self._base(run) | {"status": "running"} | began.fields()
        else:
            record = self._skipped(run, now, note)
        ended = [] if began is not None else self.ended(run, now)
        # A refused write bills its full size, so the likeliest row goes first.
        if waited:
            fields = {k: v for k, v in record.items() if k not in ("pk", "sk", "startedAt")}
            waiting = Equals("status", "waiting")
            with suppress(WriteConflict):
                self._store.write([Update(run.pk, run.sk, set=fields, condition=waiting), *ended])
                return
        self._store.write([Put(record, Absent()), *ended])

    def skipped(
        self, run: Run, now: int, note: str, *, waited_for: str | None = None
    ) -> list[Action]:
        """The row of a run never started because its turn teaches nothing, with why, and
        its end, for the caller's own transaction; `waited_for` names the event a wait
        would have waited for, so the list names its turn."""
        record = self._skipped(run, now, note)
        if waited_for is not None:
            record["waitFor"] = waited_for
        return [Put(record, Absent()), *self.ended(run, now)]

    def _skipped(self, run: Run, now: int, note: str | None) -> Record:
        record = self._base(run) | {"status": "skipped", "endedAt": now, "itemIds": []}
        if note:
            record["detail"] = self._detail(run, {"note": note})
        return record

    def evidence(self, row: ExecutionRow) -> str | None:
        """The evidence JSON of a row read with its evidence row, or None."""
        if row.kept is None:
            return None
        return self._open(row.run, row.run.evidence_sk, "evidence", row.kept["evidence"])

    def finish_actions(
        self,
        run: Run,
        now: int,
        *,
        status: Status,
        applied: list[dict[str, str]],
        rejected: list[dict[str, Any]],
        row: ExecutionRow,
        note: str | None = None,
    ) -> list[Action]:
        """The run's end, for the transaction of the memory change. Conditional on the run
        still running as `row` shows it (`running`, or a waited run's `waiting` that began
        on its evidence row), so two attempts of one step cannot both end it."""
        detail: dict[str, Any] = {}
        if rejected:
            detail["rejected"] = rejected
        if note:
            detail["note"] = note
        ending: dict[str, Any] = {
            "status": status,
            "endedAt": now,
            "applied": applied,
            "rejectedCount": len(rejected),
            "detail": self._detail(run, detail) if detail else None,
        }
        since: Status = "running"
        if row.begun:
            since = row.status
            ending |= _began(run, row)
        return [
            Update(run.pk, run.sk, set=ending, condition=Equals("status", since, name=RUN_ENDS)),
            *self.ended(run, now),
        ]

    @staticmethod
    def ended(run: Run, now: int) -> list[Action]:
        """The run's `execution.ended` event, for the transaction that ends it."""
        source = run.source[1] if run.source else None
        return [*execution_ended(run.kind, run.org_id, run.pool_id, run.name, source, now)]

    def fail(
        self, run: Run, now: int, error_type: str, message: str, existing: ExecutionRow | None
    ) -> None:
        """End the run as failed, with its error; the pool's read position stays. Raises
        WriteConflict when the row changed."""
        detail = self._detail(run, {"error": message[:MAX_MESSAGE]})
        ending = {"status": "failed", "endedAt": now, "errorType": error_type, "detail": detail}
        if existing is None:
            failed = self._base(run) | ending | {"itemIds": []}
            self._store.write([Put(failed, Absent()), *self.ended(run, now)])
            return
        # A wait ends from where it is (`waiting`), begun on its evidence or not.
        status = "waiting" if existing.status == "waiting" else "running"
        if existing.begun:
            ending |= _began(run, existing)
        update = Update(run.pk, run.sk, set=ending, condition=Equals("status", status))
        self._store.write([update, *self.ended(run, now)])

    def details(self, row: ExecutionRow) -> dict[str, Any]:
        """The sealed part of a row: `rejected`, `error` (message) and `note`, when present."""
        if "detail" not in row.record:
            return {}
        opened = json.loads(self._open(row.run, row.run.sk, "detail", row.record["detail"]))
        return dict(opened) if isinstance(opened, dict) else {}

    def _detail(self, run: Run, detail: dict[str, Any]) -> bytes:
        return self._seal(run, run.sk, "detail", json.dumps(detail))


def _began(run: Run, row: ExecutionRow) -> dict[str, Any]:
    """What a waited run that began on its evidence row writes on its execution row when it
    ends, so the row keeps it once the evidence row expired."""
    return {"position": row.position, "itemIds": row.item_ids, "model": row.model, "upto": run.upto}
