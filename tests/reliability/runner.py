"""Run one command under every fault at every AWS call it makes, and judge each outcome.

For a command: a clean run from the saved state records its AWS calls, its answer and the
table after it (the reference). Then, for each call position and each fault that fits the
call, the saved state is restored, the fault armed at that position, the command run, and:

- a 2xx answer must be the reference answer and the table the reference after-state
  (the fault was absorbed: by the SDK's retry, the service's own retry, or after the commit);
- any other answer must be a clean 409/429/503 (404 when a guard condition is reported
  failed, see `allowed`) with the `{"error": {"_tag", ...}}` body, and the table exactly the
  state before; then the same command, re-sent without fault by the same process, must give
  the reference answer and after-state: it is applied exactly once;
- a lost response (the request was applied, the client timed out and retried) must answer
  as the reference does: the store finds its own writer token on the rows (R3 fixed).

Anything else is a finding: a 500, a 2xx that did not happen, a half-written state, an error
for a change that was made, or a change applied twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.reliability import faults as F
from tests.reliability.world import Answer, Rows, World, diff

Body = Callable[[dict[str, str]], Any]
RowFilter = Callable[[tuple[str, str]], bool]


@dataclass(frozen=True)
class Command:
    name: str
    method: str
    path: str  # "{session}" etc. are filled from World.refs
    who: str
    body: Body | None = None
    # A 2xx answer may differ from the reference in these ways (faults it may absorb).
    tolerate: Callable[[Any, Any, str], bool] | None = None
    # Rows written after the command's commit as bookkeeping, on a best-effort basis: after
    # a fault they may keep their state before (never a third state).
    best_effort: RowFilter | None = None

    def send(self, world: World) -> Answer:
        path = self.path.format(**world.refs)
        body = self.body(world.refs) if self.body else None
        return world.call(self.method, path, self.who, body)


@dataclass
class Reference:
    calls: list[str]
    answer: Answer
    before: Rows
    after: Rows


@dataclass(frozen=True)
class Finding:
    command: str
    fault: str
    position: int
    call: str
    what: str

    def __str__(self) -> str:
        return f"{self.command}: {self.fault} at call #{self.position} ({self.call}): {self.what}"


@dataclass
class Report:
    command: str
    calls: list[str]
    cases: int = 0
    findings: list[Finding] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


READS = ("GetItem", "Query", "BatchGetItem", "Scan")
# Per service: the kinds every call gets (one the SDK gives up on, one its retry absorbs, and
# what only a write can suffer), and the other kinds, given to the first call of each
# operation in a command: they take the same path through the code (the adapters map every
# transient code alike), only the position decides what may be half-written.
EVERY = {
    "kms": (F.KMS_THROTTLED, F.KMS_INTERNAL_ONCE),
    "sfn": (F.SFN_THROTTLED, F.TIMEOUT, F.LOST_RESPONSE),
    "dynamodb": (
        F.DDB_THROTTLED,
        F.TX_CONDITION,
        F.TX_CONFLICT,
        F.TX_THROTTLED,
        F.DDB_THROTTLED_ONCE,
        F.LOST_RESPONSE,
    ),
}
FIRST = {"kms": (F.KMS_INTERNAL, F.KMS_TIMEOUT, F.TIMEOUT), "sfn": (), "dynamodb": (F.TIMEOUT,)}


def faults_for(call: str, first: bool = True) -> list[F.Fault]:
    """The fault kinds to try at this call; `first`: the command's first call of it."""
    service = call.split(".", 1)[0]
    candidates = EVERY[service] + (FIRST[service] if first else ())
    # A lost response to a read is one more retried read (DDB_THROTTLED_ONCE covers it).
    return [
        fault
        for fault in candidates
        if fault.fits(call) and not (fault is F.LOST_RESPONSE and call.endswith(READS))
    ]


def allowed(fault: F.Fault) -> set[int]:
    """Error statuses a client may get for this fault (nothing written)."""
    if fault is F.TX_CONDITION:
        # A guard reported failed: stale (409) or, for a guard on another object that
        # "vanished" (the organization of a new user), 404 naming it.
        return {404, 409}
    return {409, 429, 503}


def reference(world: World, command: Command) -> Reference:
    world.restore()
    before = world.rows()
    answer = command.send(world)
    assert answer.ok, f"{command.name}: the clean run failed: {answer}"
    calls = list(world.faults.calls)
    return Reference(calls, answer, before, world.rows())


def _error_body(answer: Answer) -> bool:
    error = answer.body.get("error") if isinstance(answer.body, dict) else None
    return isinstance(error, dict) and isinstance(error.get("_tag"), str)


def run_matrix(world: World, command: Command) -> Report:
    ref = reference(world, command)
    report = Report(command.name, ref.calls)
    for position, call in enumerate(ref.calls):
        for fault in faults_for(call, first=call not in ref.calls[:position]):
            report.cases += 1
            what = _judge(world, command, ref, fault, position, call, report)
            if what:
                report.findings.append(Finding(command.name, fault.name, position, call, what))
    return report


def _same(
    rows: Rows, ref: Reference, best_effort: Callable[[tuple[str, str]], bool] | None
) -> bool:
    """`rows` is the reference after-state, best-effort rows allowed to be as they were."""
    if rows == ref.after:
        return True
    if best_effort is None:
        return False
    for key in set(rows) | set(ref.after) | set(ref.before):
        got = rows.get(key)
        if got == ref.after.get(key):
            continue
        if not (best_effort(key) and got == ref.before.get(key)):
            return False
    return True


def _judge(
    world: World,
    command: Command,
    ref: Reference,
    fault: F.Fault,
    position: int,
    call: str,
    report: Report,
) -> str | None:
    world.restore()
    armed = world.faults.arm(fault, position)
    answer = command.send(world)
    if armed.hits == 0:
        return f"the fault never fired (calls: {world.faults.calls})"
    rows = world.rows()
    if answer.ok:
        report.count("absorbed")
        if not _same(rows, ref, command.best_effort):
            kind = "a 2xx that did not happen" if rows == ref.before else "a 2xx, half-written"
            return f"{kind}: {diff(ref.after, rows)}"
        if answer.body != ref.answer.body and not (
            command.tolerate and command.tolerate(ref.answer.body, answer.body, call)
        ):
            return f"a 2xx with another answer: {answer.body} != {ref.answer.body}"
        return None
    if answer.status >= 500 and answer.status != 503:
        return f"{answer.status} {answer.body}"
    if not _error_body(answer):
        return f"{answer.status} without an error body: {answer.body}"
    if rows == ref.before:
        report.count(f"refused {answer.status}")
        if answer.status not in allowed(fault):
            return f"answered {answer.status} {answer.body}"
        if call.startswith("dynamodb.") and call.endswith(READS):
            # A refused read leaves no state in the process (a DynamoDB client keeps none
            # but its retry quota): its retry is the reference run, from the same state.
            return None
        return _retry_once(world, command, ref)
    if ref.after != ref.before and _same(rows, ref, command.best_effort):
        return f"answered {answer.status} {answer.body['error']} but the change was made"
    return f"answered {answer.status}, half-written: {diff(ref.before, rows)}"


def _retry_once(world: World, command: Command, ref: Reference) -> str | None:
    """The client's retry, by the same process (its caches and clients as the fault left
    them), with the same ids and clock as the reference: applied exactly once."""
    world.faults.reset()
    world.rewind()
    answer = command.send(world)
    if not answer.ok:
        return f"the retry without fault failed: {answer}"
    rows = world.rows()
    if rows != ref.after:
        return f"the retry did not apply exactly once: {diff(ref.after, rows)}"
    if answer.body != ref.answer.body:
        return f"the retry answered {answer.body}, not {ref.answer.body}"
    return None
