"""A run's saved model calls (the encrypted call log), in its pool's partition.

- `CALL#<name>#<step>#<attempt:02d>`: one attempt: the sealed request, the model, and how it
  ended (`started`, or `failed` with why); expires at its `ttl`.
- The attempt-00 row also holds the step's claim (`owner`, a digest of the calling copy's
  execution id; `until`): an asynchronous Express execution may run twice, and only one
  copy calls the model at a time. A later attempt whose first attempt never claimed writes
  that row as a bare claim (`type: call-claim`). Every claim is a condition on this one row.
- `...#reply`: that attempt's answer on a small row of its own, written once: an update of
  the call row would bill its whole size, the sealed request included.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from agent_memory.domain.errors import Unavailable
from agent_memory.persistence.keys import CALL_PREFIX, call_sk
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.persistence.runs import ExecutionRow, Run, RunRows
from agent_memory.ports import Absent, Action, Equals, KeyRange, LessThan, Put, Record, Update

REPLY_SUFFIX = "#reply"
# A saved call takes its answer once: a conflict on it means an earlier try saved it.
CALL_OPEN = "model-call-open"
# The claim of a step's model call: a conflict on it means the claim row changed.
CALL_CLAIM = "call-claim"
CLAIM_TRIES = 4


def reply_sk(call: str) -> str:
    return f"{call}{REPLY_SUFFIX}"


def owner_tag(execution_id: str) -> str:
    """How a call row names the copy holding its claim: 64 bits of its execution id's digest
    (an ARN of ~130 bytes would push the call row past a write unit)."""
    return hashlib.sha256(execution_id.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Claim:
    """What claiming a step's model call gave this copy: `call`, the sort key of its
    attempt's call row (call the model now); else `holder`, the copy whose live claim
    stands (wait for its answer); neither: attempt 0 found another copy's claim run out,
    which the next attempt takes over."""

    call: str | None = None
    holder: str | None = None


class ModelCallRows(RunRows):
    def call_started(
        self, run: Run, step: str, attempt: int, model: str, request: str, now: int
    ) -> str:
        """Save an attempt before the model is called (a redriven attempt overwrites its own
        row); the first attempt's row is written by `claim_call`."""
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
        """Claim `step`'s model call for the copy whose execution id is `owner` until
        `now + hold_ms`, and save this attempt's call row when it may call. Attempt 0 puts
        its call row with the claim; a later attempt renews its own claim, takes over one
        run out, or writes a bare claim, then saves its call row. Raises Unavailable when
        the claim row kept changing."""
        first = call_sk(run.name, step, 0)
        claim = {"owner": owner_tag(owner), "until": now + hold_ms}
        if attempt == 0:
            fresh = self._call_record(run, first, step, 0, model, request, now) | claim
        else:
            fresh = self._bare_claim(run, first, step, now) | claim
        # Attempt 0 first puts its row unread (it is usually the first); a lost claim reads.
        read = attempt > 0

        def take() -> Claim:
            nonlocal read
            held = self._store.get(run.pk, first) if read else None
            read = True
            taking = self._taking(run, attempt, held, fresh, now)
            if isinstance(taking, Claim):
                return taking
            self._store.write([taking])
            if attempt == 0:
                return Claim(first)
            return Claim(self.call_started(run, step, attempt, model, request, now))

        return until_it_lands(
            take,
            lambda: Unavailable("the model call's claim kept changing; retry shortly"),
            tries=CLAIM_TRIES,
            lost=lambda conflict: conflict.condition == CALL_CLAIM,
        )

    @staticmethod
    def _taking(
        run: Run, attempt: int, held: Record | None, fresh: Record, now: int
    ) -> Action | Claim:
        """The write that claims the call from the claim row as read (`held`), or what
        this copy gets without one; `fresh` is the claim row this attempt would put."""
        first, tag = fresh["sk"], fresh["owner"]
        if held is None:
            return Put(fresh, Absent(name=CALL_CLAIM))
        claim = {"owner": tag, "until": fresh["until"]}
        if held["owner"] == tag:
            mine = Equals("owner", tag, name=CALL_CLAIM)
            if attempt == 0:  # this copy's own attempt 0, run again: its row is rewritten
                return Put(fresh, mine)
            return Update(run.pk, first, set=claim, condition=mine)
        if int(held["until"]) >= now:
            return Claim(holder=str(held["owner"]))
        if attempt == 0:
            return Claim()
        run_out = LessThan("until", now, name=CALL_CLAIM)
        return Update(run.pk, first, set=claim, condition=run_out)

    def _call_record(
        self, run: Run, sk: str, step: str, attempt: int, model: str, request: str, now: int
    ) -> Record:
        return self._bare_claim(run, sk, step, now) | {
            "type": "model-call",
            "attempt": attempt,
            "status": "started",
            "model": model,
            "startedAt": now,
            "request": self._seal(run, sk, "request", request),
        }

    def _bare_claim(self, run: Run, sk: str, step: str, now: int) -> Record:
        return {
            "pk": run.pk,
            "sk": sk,
            "type": "call-claim",
            "execution": run.name,
            "step": step,
            "ttl": self._ttl(now),
        }

    def call_answered(
        self, run: Run, sk: str, reply: str, usage: dict[str, int], latency_ms: float, now: int
    ) -> None:
        """Save the answer of call `sk` on its own row, once. Raises
        WriteConflict(condition=CALL_OPEN) when an earlier try saved it (its reply lost).
        Not conditional on the call row: that would need a transaction billed on the call
        row's whole size; an answer saved after its pool was erased is deleted by
        `forget_calls` or expires."""
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
            "ttl": self._ttl(now),
        }
        self._store.write([Put(record, Absent(name=CALL_OPEN))])

    def answered_call(self, run: Run, step: str) -> str | None:
        """The sort key of a saved answer of `step`'s model call in this run (any attempt),
        or None."""
        for record in self._rows(run.pk, KeyRange(prefix=f"{CALL_PREFIX}{run.name}#{step}#")):
            if str(record["sk"]).endswith(REPLY_SUFFIX):
                return str(record["sk"])
        return None

    def forget_calls(self, run: Run) -> None:
        """Delete what a run whose execution row is gone (an erased pool) left: its call,
        claim and reply rows and its evidence row."""
        keys = [(run.pk, run.evidence_sk)] if self._store.get(run.pk, run.evidence_sk) else []
        calls = self._rows(run.pk, KeyRange(prefix=f"{CALL_PREFIX}{run.name}#"))
        keys.extend((run.pk, str(record["sk"])) for record in calls)
        self._delete(keys)

    def call_failed(self, run: Run, sk: str, kind: str, now: int) -> None:
        failed = {"status": "failed", "endedAt": now, "errorKind": kind}
        self._store.write([Update(run.pk, sk, set=failed)])

    def with_reply(self, run: Run, sk: str) -> tuple[ExecutionRow | None, str | None]:
        """The execution's row (with its evidence) and the saved answer at `sk`, in one
        request."""
        found = self._at(run, run.sk, run.evidence_sk, sk)
        record, call = found.get(run.sk), found.get(sk)
        row = self._row(run, record, found.get(run.evidence_sk)) if record else None
        if call is None or "reply" not in call:
            return row, None
        return row, self._open(run, sk, "reply", call["reply"])
