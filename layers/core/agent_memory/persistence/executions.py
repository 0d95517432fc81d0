"""Learning executions and their saved model calls, in one partition per pool.

- pk `LEARN#<kind>#<poolId>`: every learning run of one pool (one Query lists them).
- `EXEC#<requestedAt:013d>#<name>`: one execution. Plaintext metadata (status, times, item
  ids, applied keys, error type); `detail` seals what may hold content (rejected changes,
  the error message). It stays small for its whole life: its end bills its size twice.
- `EVIDENCE#<requestedAt:013d>#<name>`: the run's evidence (`evidence`, sealed), on a row of
  its own, written once by LoadEvidence (`keep_evidence`, `Absent`: a retried or repeated
  LoadEvidence keeps the first attempt's) and read with the execution row in one request.
  A waited run begins on it: its execution row stays `waiting` until the run ends, and
  this row carries what `begin` would write there (`position`, `itemIds`, `model`,
  `beganAt`, plaintext). A `waiting` row with its evidence row is running
  (`ExecutionRow.begun`); the run's end (or failure) writes those fields on the execution
  row, from the row it read. Not deleted when the run ends (a Delete in the end's
  transaction bills its whole size, twice): it expires at its `ttl`, as does the call row
  whose sealed request holds the same content. Erasure deletes it with its run. Not under
  `EXEC#`, so the list of executions never reads it.
- `CALL#<name>#<step>#<attempt:02d>`: one attempt of a model call (the encrypted call log):
  the sealed request, the model, and how it ended (`started`, or `failed` with why);
  expires after `ttl`.
- `CALL#<name>#<step>#00` also holds the step's claim (`owner`: a digest of the execution
  id of the copy calling the model, `owner_tag`; `until`): an asynchronous Express
  execution may run twice, and only one copy calls at a time (`claim_call`). The first
  attempt claims with its call row, one Put (`Absent`), so the claim costs no write of its
  own. A later attempt (a crash, a retry) renews or takes over the claim on that row (its
  own, or one run out) before it writes its own call row; when the first attempt never
  claimed (it failed before it could), the later one writes the row as a bare claim
  (`type: call-claim`, no request). Every claim is a condition on this one row, so two
  copies never both hold it.
- `CALL#<name>#<step>#<attempt:02d>#reply`: that attempt's answer, on a small row of its own
  (`status: answered`, the sealed `reply`, `usage`, `latencyMs`, `endedAt`, its `ttl`),
  written once (`Absent`): an update of the call row would bill its whole size, the sealed
  request included. Sorted right after its call row, so the Query of a run's call rows
  finds both.

Recorded waits (an execution that starts when an event happens, docs/decisions.md):

- pk `WAIT#<event>`: one partition per event (`turn:<org>:<chat>:<turn>`, a budget period).
  `LINK#<name>` names one execution waiting on it (enough to rebuild its Run); `EVENT` is
  written once when the event happens, with what the release passes on (`upto`).
- The execution's own row is `waiting` until the run ends: LoadEvidence begins it on its
  evidence row (above), and the event's release writes nothing on it. A wait writes its
  link, then its row, then reads `EVENT` (plain single-row writes, a strongly consistent
  read); a release writes `EVENT`, then reads the links. Each side writes its own row
  before it reads the other's, so at least one sees the other and asks the workflow to
  start the run under its name; the orchestrator refuses a name it started, so exactly one
  start happens, with no transaction and no write to release it. A wait whose run starts
  before its row is written (a release racing a wait half written) has no row at
  LoadEvidence: `begin` puts it, `running`. The link comes first because it names the run
  (and when it was asked for): a wait retried after a crash finds it and writes the same
  row.

Deferred runs (a step that may not learn now, e.g. a spent budget, docs/decisions.md):

- pk `LEARN#deferred#<event>`, sk `RUN#<name>`: enough to rebuild the skipped run (pool,
  conversation, `upto`). LoadEvidence writes it (a step writes no `WAIT#` row nor starts
  learning); the tick that sees `event` happen turns each into a wait on it and deletes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.persistence.events import execution_ended
from agent_memory.persistence.keys import MAX_ACTIONS
from agent_memory.ports import (
    Absent,
    Action,
    Cipher,
    Delete,
    Equals,
    KeyRange,
    LessThan,
    Put,
    Record,
    Store,
    Update,
)

Status = Literal["waiting", "running", "succeeded", "failed", "skipped"]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "skipped"})
# Not yet begun by LoadEvidence: a failure recorded now writes over these too.
NOT_BEGUN: frozenset[str] = frozenset({"waiting"})
EXEC_PREFIX = "EXEC#"
EVIDENCE_PREFIX = "EVIDENCE#"
CALL_PREFIX = "CALL#"
REPLY_SUFFIX = "#reply"
LINK_PREFIX = "LINK#"
EVENT_SK = "EVENT"
# Waits and events are kept this long (a month's budget period, with room to spare).
WAIT_TTL_S = 90 * 24 * 3600
# Error messages are kept short: they are shown to clients, never a dump.
MAX_MESSAGE = 500

# The name of the condition that ends a run: a conflict on it means the run ended elsewhere.
RUN_ENDS = "execution-running"
# A saved call takes its answer once: a conflict on it means an earlier try saved it.
CALL_OPEN = "model-call-open"
# The claim of a step's model call: a conflict on it means the claim row changed.
CALL_CLAIM = "call-claim"


def partition(kind: str, pool_id: str) -> str:
    return f"LEARN#{kind}#{pool_id}"


def execution_sk(requested_at: int, name: str) -> str:
    return f"{EXEC_PREFIX}{requested_at:013d}#{name}"


def evidence_sk(requested_at: int, name: str) -> str:
    """The sort key of the evidence row of execution `execution_sk(requested_at, name)`."""
    return f"{EVIDENCE_PREFIX}{requested_at:013d}#{name}"


def call_sk(name: str, step: str, attempt: int) -> str:
    return f"{CALL_PREFIX}{name}#{step}#{attempt:02d}"


def reply_sk(call: str) -> str:
    """The sort key of the answer of the saved call `call` (a row of its own)."""
    return f"{call}{REPLY_SUFFIX}"


def owner_tag(execution_id: str) -> str:
    """How a call row names the copy holding its claim: a digest of its execution id (an
    ARN of ~130 bytes; the call row sits near a 1 KB write unit's edge, and the claim only
    compares owners). 64 bits: two copies of one execution never share it."""
    return hashlib.sha256(execution_id.encode()).hexdigest()[:16]


def wait_partition(event: str) -> str:
    return f"WAIT#{event}"


def deferred_partition(event: str) -> str:
    return f"LEARN#deferred#{event}"


DEFERRED_PREFIX = "RUN#"


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
    # Agent pools: the session whose items the run reads.
    session: str | None = None

    @property
    def pk(self) -> str:
        return partition(self.kind, self.pool_id)

    @property
    def sk(self) -> str:
        return execution_sk(self.requested_at, self.name)

    @property
    def evidence_sk(self) -> str:
        return evidence_sk(self.requested_at, self.name)


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
    rejected_count: int
    error_type: str | None
    # The event a recorded wait waited for.
    waited_for: str | None
    record: Record = field(repr=False)
    # The run's evidence row, when it was read with the execution row (`get(evidence=True)`).
    kept: Record | None = field(default=None, repr=False)
    # When a waited run began on its evidence row (`begun`), else None.
    began_at: int | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def begun(self) -> bool:
        """Whether a waited run's row, still `waiting`, began on its evidence
        row (read with it): it is running, with the position, items and model that row holds."""
        return self.status in NOT_BEGUN and self.kept is not None and "evidence" in self.kept


@dataclass(frozen=True)
class Waiter:
    """One execution waiting on an event, as its link row names it."""

    run: Run
    event: str


@dataclass(frozen=True)
class Recorded:
    """A recorded wait: the run as its link names it (a retried wait keeps the first
    call's), whether it was recorded whole before this call (`repeated`), and, when the
    event had happened by the time both rows were written, what it passed on."""

    run: Run
    repeated: bool
    happened: dict[str, Any] | None


@dataclass(frozen=True)
class Claim:
    """What claiming a step's model call gave this copy: `call`, the sort key of its
    attempt's saved call row (it may call the model now); else `holder`, the copy whose
    live claim stands (wait for its answer); neither: attempt 0 found another copy's claim
    run out (that copy is gone), which the next attempt takes over."""

    call: str | None = None
    holder: str | None = None


class ExecutionRepository:
    """Execution rows and saved model calls of every pool."""

    def __init__(self, store: Store, cipher: Cipher, *, call_ttl_s: int = 7 * 24 * 3600) -> None:
        self._store = store
        self._cipher = cipher
        self._call_ttl_s = call_ttl_s

    # -- execution rows --------------------------------------------------------------------

    def get(self, run: Run, *, evidence: bool = False) -> ExecutionRow | None:
        """The run's row; with its evidence row too when `evidence` (one request), for
        `evidence(row)`."""
        if not evidence:
            record = self._store.get(run.pk, run.sk)
            return self._row(run, record) if record else None
        found = self._rows(run, run.sk, run.evidence_sk)
        record = found.get(run.sk)
        return self._row(run, record, found.get(run.evidence_sk)) if record else None

    def newest(
        self, kind: str, org_id: str, pool_id: str, limit: int, *, evidence: bool = False
    ) -> list[ExecutionRow]:
        """The newest `limit` executions of a pool, newest first (one Query). With
        `evidence`, the rows still `waiting` are read with their evidence
        rows (one more request, only when there are such rows): a waited run that began
        there is running (`ExecutionRow.begun`)."""
        pk = partition(kind, pool_id)
        page = self._store.query(pk, KeyRange(prefix=EXEC_PREFIX), limit=limit, newest_first=True)
        kept: dict[str, Record] = {}
        if evidence:
            waiting = [
                EVIDENCE_PREFIX + str(r["sk"])[len(EXEC_PREFIX) :]
                for r in page.records
                if r.get("status") in NOT_BEGUN
            ]
            if waiting:
                found = self._store.get_many([(pk, sk) for sk in waiting])
                kept = {EXEC_PREFIX + str(r["sk"])[len(EVIDENCE_PREFIX) :]: r for r in found}
        rows = []
        for record in page.records:
            requested = int(str(record["sk"])[len(EXEC_PREFIX) :].split("#", 1)[0])
            run = Run(
                kind,
                org_id,
                pool_id,
                str(record["name"]),
                requested,
                str(record.get("reason", "")),
                int(record.get("upto", 0)),
                record.get("sessionId"),
            )
            rows.append(self._row(run, record, kept.get(str(record["sk"]))))
        return rows

    def keep_evidence(
        self,
        run: Run,
        evidence: str,
        now: int,
        *,
        begins: bool = False,
        position: int | None = None,
        item_ids: list[str] | None = None,
        model: str | None = None,
    ) -> str:
        """Seal the run's `evidence` JSON on its own row, before `begin` writes the
        execution row (which stays small), and return the evidence the run learns
        from: this one, or the one an earlier attempt of the run kept first (`Absent`: a
        retried or repeated LoadEvidence may load different evidence, and the first one's
        stands, so the execution row, its evidence and a saved answer all agree). One plain
        Put, expiring at `ttl` (the saved calls' time). Raises Unavailable when the row is
        refused yet not found (deleted meanwhile: the step is retried).

        `begins`: a waited run whose `waiting` row is not written again: the run
        begins on this row, which carries its `position`, `itemIds`, `model` and `beganAt`
        (the first attempt's stand with its evidence)."""
        sk = run.evidence_sk
        record: Record = {
            "pk": run.pk,
            "sk": sk,
            "type": "learning-evidence",
            "name": run.name,
            "evidence": self._seal(run, sk, "evidence", evidence),
            "ttl": now // 1000 + self._call_ttl_s,
        }
        if begins:
            record |= {
                "position": position,
                "itemIds": item_ids or [],
                "model": model,
                "beganAt": now,
            }
        if run.session:
            record["sessionId"] = run.session  # erasure of the session finds it
        try:
            self._store.write([Put(record, Absent())])
            return evidence
        except WriteConflict:
            kept = self._store.get(run.pk, sk)
        if kept is None or "evidence" not in kept:
            raise Unavailable("the run's evidence changed while it was kept; retry shortly")
        return self._open(run, sk, "evidence", kept["evidence"])

    def begin(
        self,
        run: Run,
        now: int,
        *,
        learns: bool,
        position: int | None = None,
        item_ids: list[str] | None = None,
        model: str | None = None,
        note: str | None = None,
        waited: bool = False,
    ) -> None:
        """Write the row of a run that starts (`learns`: its evidence was kept first,
        `keep_evidence`; the row holds its position, item ids and model) or that has
        nothing to learn (skipped, with why when `note` says). A wait's row that was not
        begun is taken over (`waited`: the run was a wait, so its `waiting` row is updated
        first, not put and refused). A wait started from its link before its row was
        written (a release racing a wait half written) has no row yet: it is put. Raises
        WriteConflict when the row exists already and was begun (a retried or repeated step,
        or a run started again once its name was forgotten)."""
        record = self._base(run)
        if not learns:
            record |= {"status": "skipped", "endedAt": now, "itemIds": []}
            if note:
                record["detail"] = self._seal(run, run.sk, "detail", json.dumps({"note": note}))
        else:
            record |= {
                "status": "running",
                "position": position,
                "itemIds": item_ids or [],
                "model": model,
            }
        ended = [] if learns else self.ended(run, now)
        fields = {k: v for k, v in record.items() if k not in ("pk", "sk", "startedAt")}

        def take_over(status: Status) -> list[Action]:
            return [Update(run.pk, run.sk, set=fields, condition=Equals("status", status)), *ended]

        put: list[Action] = [Put(record, Absent()), *ended]
        # A refused write bills its full size, so the likeliest row goes first: a wait's
        # row is `waiting`; a run that never waited has none.
        if waited:
            with suppress(WriteConflict):
                self._store.write(take_over("waiting"))
                return
        self._store.write(put)

    def skipped(self, run: Run, now: int, note: str, *, waited_for: str | None = None) -> Put:
        """The row of a run that was never started because its turn teaches nothing, with
        why (`note`, sealed), for the caller's own transaction; `waited_for`: the event a
        wait would have waited for (a confide's Turn), so the list names its Turn."""
        detail = self._seal(run, run.sk, "detail", json.dumps({"note": note}))
        record = self._base(run) | {
            "status": "skipped",
            "endedAt": now,
            "itemIds": [],
            "detail": detail,
        }
        if waited_for is not None:
            record["waitFor"] = waited_for
        return Put(record, Absent())

    def evidence(self, row: ExecutionRow) -> str | None:
        """The evidence JSON of a row read with its evidence (`get(evidence=True)`), from its
        evidence row; None when there is none."""
        if row.kept is None or "evidence" not in row.kept:
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
        note: str | None = None,
        row: ExecutionRow | None = None,
    ) -> list[Action]:
        """The execution's end, for the same transaction as the memory change. Conditional
        on the run still running as `row` (read with its evidence) shows it, so two attempts
        of one step cannot both end it, nor end one a failure ended: `running`, or the
        `waiting` status of a waited run that began on its evidence row, whose position,
        items and model the end writes on the execution row (`row.begun`). The evidence row
        is left to expire (deleting it here would bill its whole size, twice)."""
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
            "detail": self._seal(run, run.sk, "detail", json.dumps(detail)) if detail else None,
        }
        since: Status = "running"
        if row is not None and row.begun:
            since = row.status
            ending |= self._began(run, row)
        return [
            Update(run.pk, run.sk, set=ending, condition=Equals("status", since, name=RUN_ENDS)),
            *self.ended(run, now),
        ]

    @staticmethod
    def _began(run: Run, row: ExecutionRow) -> dict[str, Any]:
        """What `begin` would have written on a waited run's row that began on its evidence
        row (`row.begun`), for the write that ends it: the row keeps it once the evidence
        row expired."""
        return {
            "position": row.position,
            "itemIds": row.item_ids,
            "model": row.model,
            "upto": run.upto,
        }

    @staticmethod
    def ended(run: Run, now: int) -> list[Action]:
        """The run's `execution.ended` event, for the transaction that ends it."""
        return [*execution_ended(run.kind, run.org_id, run.pool_id, run.name, run.session, now)]

    def finish(
        self,
        run: Run,
        now: int,
        *,
        status: Status,
        rejected: list[dict[str, Any]],
        note: str | None = None,
        row: ExecutionRow | None = None,
    ) -> None:
        """End a run that changes no memory (e.g. skipped: another run learned it first);
        `row` as for `finish_actions`."""
        actions = self.finish_actions(
            run, now, status=status, applied=[], rejected=rejected, note=note, row=row
        )
        self._store.write(actions)

    def fail(
        self, run: Run, now: int, error_type: str, message: str, existing: ExecutionRow | None
    ) -> None:
        """End the run as failed, with its error. Touches nothing but this row (the evidence
        row expires): the pool's read position stays where it was. A waited run that began
        on its evidence row (`existing` read with it: `begun`) gets the position, items and
        model that row holds. Raises WriteConflict
        when the row changed."""
        detail = self._seal(run, run.sk, "detail", json.dumps({"error": message[:MAX_MESSAGE]}))
        ending = {"status": "failed", "endedAt": now, "errorType": error_type, "detail": detail}
        if existing is None:
            self._store.write(
                [Put(self._base(run) | ending | {"itemIds": []}, Absent()), *self.ended(run, now)]
            )
            return
        # A wait ends from where it is (`waiting`), begun on its evidence or not.
        status = existing.status if existing.status in NOT_BEGUN else "running"
        if existing.begun:
            ending |= self._began(run, existing)
        update = Update(run.pk, run.sk, set=ending, condition=Equals("status", status))
        self._store.write([update, *self.ended(run, now)])

    def details(self, row: ExecutionRow) -> dict[str, Any]:
        """The sealed part of a row: `rejected`, `error` (message) and `note`, when present."""
        if "detail" not in row.record:
            return {}
        opened = json.loads(self._open(row.run, row.run.sk, "detail", row.record["detail"]))
        return dict(opened) if isinstance(opened, dict) else {}

    # -- recorded waits ----------------------------------------------------------------------

    def wait(self, run: Run, event: str, now: int) -> Recorded:
        """Record `run` as waiting for `event`, then look for the event: the link in the
        event's partition (`Absent`), then the run's row (`waiting`, `Absent`), then a
        strongly consistent read of `EVENT`. A release writes `EVENT` before it reads the
        links, so when this read misses the event the release sees the link (and the row,
        written before the read); when it finds it, the caller asks the workflow to start
        the run as the release does, and the orchestrator's name claim lets one start happen.

        A link written before (a repeated wait, or one retried after a crash between the
        two writes) names the run: its row is written when missing, so a retried wait is
        completed, never recorded twice. Raises Unavailable when the table is unavailable."""
        for _round in range(3):
            try:
                self._store.write([Put(self._link(run, event, now), Absent())])
                linked = run
            except WriteConflict:
                link = self._store.get(wait_partition(event), LINK_PREFIX + run.name)
                if link is None:
                    continue  # it expired since the write was refused: link it again
                linked = self._linked_run(link)
            row = self._base(linked) | {"status": "waiting", "waitFor": event, "itemIds": []}
            try:
                self._store.write([Put(row, Absent())])
                repeated = False
            except WriteConflict:
                repeated = True  # recorded whole before (a repeated or retried wait)
            found = self._store.get(wait_partition(event), EVENT_SK)
            happened = dict(found.get("data") or {}) if found is not None else None
            return Recorded(linked, repeated, happened)
        raise Unavailable("the wait could not be recorded; retry shortly")

    def happen(self, event: str, data: dict[str, Any], now: int) -> dict[str, Any]:
        """Record, once, that `event` happened; the first call's `data` stands and is
        returned (a repeated or concurrent call gets the first one's)."""
        record: Record = {
            "pk": wait_partition(event),
            "sk": EVENT_SK,
            "type": "wait-event",
            "at": now,
            "data": data,
            "ttl": now // 1000 + WAIT_TTL_S,
        }
        try:
            self._store.write([Put(record, Absent())])
        except WriteConflict:
            existing = self._store.get(wait_partition(event), EVENT_SK)
            if existing is None:  # a transaction on the row won; it is not written yet
                raise Unavailable("the event could not be recorded; retry shortly") from None
            return dict(existing.get("data") or {})
        return dict(data)

    def waiters(self, event: str) -> list[Waiter]:
        """Every execution linked to `event`, in name order (started ones too)."""
        waiters: list[Waiter] = []
        after: str | None = None
        while True:
            page = self._store.query(
                wait_partition(event), KeyRange(prefix=LINK_PREFIX), after=after
            )
            waiters.extend(Waiter(self._linked_run(link), event) for link in page.records)
            if page.next is None:
                return waiters
            after = page.next

    def linked(self, event: str, name: str) -> Run | None:
        """The run that execution `name` waits (or waited) on `event` with, if linked."""
        link = self._store.get(wait_partition(event), LINK_PREFIX + name)
        return self._linked_run(link) if link else None

    # -- deferred runs -----------------------------------------------------------------------

    def deferral(self, run: Run, event: str, now: int) -> Put:
        """The note that `run` was deferred to `event` (a repeated note is the same row)."""
        record = self._link(run, event, now) | {
            "pk": deferred_partition(event),
            "sk": DEFERRED_PREFIX + run.name,
            "type": "learning-deferred",
        }
        return Put(record)

    def deferred(self, event: str) -> list[Run]:
        """Every run deferred to `event`, in name order."""
        runs: list[Run] = []
        after: str | None = None
        while True:
            page = self._store.query(
                deferred_partition(event), KeyRange(prefix=DEFERRED_PREFIX), after=after
            )
            runs.extend(self._linked_run(record) for record in page.records)
            if page.next is None:
                return runs
            after = page.next

    def forget_deferred(self, event: str, runs: Sequence[Run]) -> None:
        """Delete the notes of `runs` (each is now a wait on `event`), a transaction per
        `MAX_ACTIONS`."""
        keys = [(deferred_partition(event), DEFERRED_PREFIX + run.name) for run in runs]
        for start in range(0, len(keys), MAX_ACTIONS):
            self._store.write([Delete(pk, sk) for pk, sk in keys[start : start + MAX_ACTIONS]])

    def _link(self, run: Run, event: str, now: int) -> Record:
        link: Record = {
            "pk": wait_partition(event),
            "sk": LINK_PREFIX + run.name,
            "type": "wait-link",
            "kind": run.kind,
            "org": run.org_id,
            "poolId": run.pool_id,
            "name": run.name,
            "requestedAt": run.requested_at,
            "reason": run.reason,
            "upto": run.upto,
            "ttl": now // 1000 + WAIT_TTL_S,
        }
        if run.session:
            link["sessionId"] = run.session
        return link

    @staticmethod
    def _linked_run(link: Record) -> Run:
        return Run(
            str(link["kind"]),
            str(link["org"]),
            str(link["poolId"]),
            str(link["name"]),
            int(link["requestedAt"]),
            str(link["reason"]),
            int(link["upto"]),
            link.get("sessionId"),
        )

    # -- saved model calls (the encrypted call log) -----------------------------------------

    def call_started(
        self, run: Run, step: str, attempt: int, model: str, request: str, now: int
    ) -> str:
        """Save an attempt before the model is called. An attempt number seen before (a
        redriven step) overwrites its own earlier record. The first attempt's row is
        written by `claim_call`, with the claim."""
        sk = call_sk(run.name, step, attempt)
        self._store.write([Put(self._call_record(run, sk, step, attempt, model, request, now))])
        return sk

    def claim_call(
        self,
        run: Run,
        step: str,
        attempt: int,
        owner: str,
        model: str,
        request: str,
        now: int,
        hold_ms: int,
    ) -> Claim:
        """Claim the model call of `step` for the copy of the execution named `owner` (its
        execution id) until `now + hold_ms`, and save this attempt's call row (`request`)
        when it may call. An asynchronous Express execution may run twice: only one copy
        calls the model at a time, and a copy's own claim from an earlier attempt lets it go
        on.

        The claim is on the first attempt's call row. Attempt 0 writes that row with the
        claim, one Put (`Absent`; this copy's own row from an earlier run is overwritten).
        A later attempt renews its own claim on it, takes over one run out, or writes it as
        a bare claim when the first attempt never got that far; then it saves its call row.
        A live claim of another copy is `Claim(holder=...)`; attempt 0 finding another
        copy's claim run out is `Claim()`: the next attempt takes it over (its call row would
        be this one). Raises Unavailable when the row kept changing."""
        first = call_sk(run.name, step, 0)
        tag = owner_tag(owner)
        claim = {"owner": tag, "until": now + hold_ms}
        for _round in range(3):
            if attempt == 0:
                record = self._call_record(run, first, step, 0, model, request, now) | claim
                try:
                    self._store.write([Put(record, Absent(name=CALL_CLAIM))])
                    return Claim(first)
                except WriteConflict as conflict:
                    if conflict.condition != CALL_CLAIM:
                        raise
            held = self._store.get(run.pk, first)
            taking: Action
            if held is None:
                if attempt == 0:
                    continue  # deleted since the Put was refused: put it again
                taking = Put(
                    self._bare_claim(run, first, step, now) | claim, Absent(name=CALL_CLAIM)
                )
            elif held["owner"] == tag:
                if attempt == 0:  # this copy's own attempt 0, run again: its row is rewritten
                    record = self._call_record(run, first, step, 0, model, request, now) | claim
                    taking = Put(record, Equals("owner", tag, name=CALL_CLAIM))
                else:
                    taking = Update(
                        run.pk, first, set=claim, condition=Equals("owner", tag, name=CALL_CLAIM)
                    )
            elif int(held["until"]) >= now:
                return Claim(holder=str(held["owner"]))
            elif attempt == 0:
                return Claim()
            else:
                taking = Update(
                    run.pk, first, set=claim, condition=LessThan("until", now, name=CALL_CLAIM)
                )
            try:
                self._store.write([taking])
            except WriteConflict as conflict:
                if conflict.condition != CALL_CLAIM:
                    raise
                continue  # the row changed since it was read: look again
            if attempt == 0:
                return Claim(first)
            return Claim(self.call_started(run, step, attempt, model, request, now))
        raise Unavailable("the model call's claim kept changing; retry shortly")

    def _call_record(
        self, run: Run, sk: str, step: str, attempt: int, model: str, request: str, now: int
    ) -> Record:
        return {
            "pk": run.pk,
            "sk": sk,
            "type": "model-call",
            "execution": run.name,
            "step": step,
            "attempt": attempt,
            "status": "started",
            "model": model,
            "startedAt": now,
            "request": self._seal(run, sk, "request", request),
            "ttl": now // 1000 + self._call_ttl_s,
        }

    def _bare_claim(self, run: Run, sk: str, step: str, now: int) -> Record:
        """The first call row of a step whose first attempt never claimed: the claim alone."""
        return {
            "pk": run.pk,
            "sk": sk,
            "type": "call-claim",
            "execution": run.name,
            "step": step,
            "ttl": now // 1000 + self._call_ttl_s,
        }

    def call_answered(
        self,
        run: Run,
        sk: str,
        reply: str,
        usage: dict[str, int],
        latency_ms: float,
        now: int,
    ) -> None:
        """Save the answer of call `sk` on its own row, `reply_sk(sk)` (a retried step finds
        it with `answered_call`): one plain Put of a small row, 1 write unit (the
        charge is written before it). Raises WriteConflict(condition=CALL_OPEN) when this
        attempt's answer was saved already (an earlier try committed it, its reply lost).

        Not conditional on the call row: a pool erased while the model worked may get an
        answer row nothing reads (its execution row is gone, so no step uses it);
        ApplyLearning deletes it when it finds the run gone (`forget_calls`), otherwise it
        expires at its `ttl`. Checking the call row would need a transaction (a condition
        check billed on the call row's whole size, twice), dearer than the update it replaces."""
        answer = reply_sk(sk)
        record: Record = {
            "pk": run.pk,
            "sk": answer,
            "type": "model-reply",
            "status": "answered",
            "endedAt": now,
            "reply": self._seal(run, answer, "reply", reply),
            "usage": usage,
            "latencyMs": round(latency_ms, 1),
            "ttl": now // 1000 + self._call_ttl_s,
        }
        self._store.write([Put(record, Absent(name=CALL_OPEN))])

    def answered_call(self, run: Run, step: str) -> str | None:
        """The sort key of a saved answer of `step`'s model call in this run (any attempt:
        its reply row), or None: one strongly consistent Query of the run's call rows."""
        prefix = f"{CALL_PREFIX}{run.name}#{step}#"
        after: str | None = None
        while True:
            page = self._store.query(run.pk, KeyRange(prefix=prefix), after=after)
            for record in page.records:
                if str(record["sk"]).endswith(REPLY_SUFFIX):
                    return str(record["sk"])
            if page.next is None:
                return None
            after = page.next

    def forget_calls(self, run: Run) -> None:
        """Delete what a run whose execution row is gone (an erased pool) left of its model
        calls: call and reply rows (the claim with them), e.g. an answer saved after the
        erasure, and its evidence row."""
        keys: list[tuple[str, str]] = []
        if self._store.get(run.pk, run.evidence_sk) is not None:
            keys.append((run.pk, run.evidence_sk))
        prefix = f"{CALL_PREFIX}{run.name}#"
        after: str | None = None
        while True:
            page = self._store.query(run.pk, KeyRange(prefix=prefix), after=after)
            keys.extend((run.pk, str(record["sk"])) for record in page.records)
            if page.next is None:
                break
            after = page.next
        for start in range(0, len(keys), MAX_ACTIONS):
            self._store.write([Delete(pk, sk) for pk, sk in keys[start : start + MAX_ACTIONS]])

    def call_failed(self, run: Run, sk: str, kind: str, now: int) -> None:
        """The attempt ended without an answer to use (a paid-for but unusable answer was
        charged before: service/learning.py)."""
        failed = {"status": "failed", "endedAt": now, "errorKind": kind}
        self._store.write([Update(run.pk, sk, set=failed)])

    def with_reply(self, run: Run, sk: str) -> tuple[ExecutionRow | None, str | None]:
        """The execution's row (with its evidence, for `evidence`) and the saved answer at
        `sk` (a reply row, sealed under its own key), in one request."""
        found = self._rows(run, run.sk, run.evidence_sk, sk)
        record, call = found.get(run.sk), found.get(sk)
        row = self._row(run, record, found.get(run.evidence_sk)) if record else None
        if call is None or "reply" not in call:
            return row, None
        return row, self._open(run, sk, "reply", call["reply"])

    # -- rows and sealing ------------------------------------------------------------------

    @staticmethod
    def _base(run: Run) -> Record:
        record: Record = {
            "pk": run.pk,
            "sk": run.sk,
            "type": "learning-execution",
            "name": run.name,
            "org": run.org_id,
            "reason": run.reason,
            "upto": run.upto,
            "startedAt": run.requested_at,
            "applied": [],
        }
        if run.session:
            record["sessionId"] = run.session
        return record

    def _rows(self, run: Run, *sks: str) -> dict[str, Record]:
        """The run's partition's rows at `sks` that exist, by sort key (one BatchGetItem)."""
        return {str(r["sk"]): r for r in self._store.get_many([(run.pk, sk) for sk in sks])}

    @staticmethod
    def _row(run: Run, record: Record, kept: Record | None = None) -> ExecutionRow:
        """The row as read; a waited run that began on its evidence row (`kept`) shows the
        position, items and model written there."""
        began = kept if record["status"] in NOT_BEGUN and kept and "evidence" in kept else None
        shown = began if began is not None and "beganAt" in began else record
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
            rejected_count=int(record.get("rejectedCount", 0)),
            error_type=record.get("errorType"),
            waited_for=record.get("waitFor"),
            record=record,
            kept=kept,
            began_at=int(began["beganAt"]) if began is not None and "beganAt" in began else None,
        )

    # One coarse encryption context per pool (the data-key cache is partitioned by it); the
    # row and field are sealed inside, so a blob moved to another row or field fails to open.
    @staticmethod
    def _scope(run: Run) -> dict[str, str]:
        return {"org": run.org_id, "pool": f"{run.kind}:{run.pool_id}", "field": "learning"}

    def _seal(self, run: Run, sk: str, field_name: str, text: str) -> bytes:
        return self._cipher.seal(text, scope=self._scope(run), row=f"{sk}/{field_name}")

    def _open(self, run: Run, sk: str, field_name: str, blob: bytes) -> str:
        return self._cipher.open(blob, scope=self._scope(run), row=f"{sk}/{field_name}")
