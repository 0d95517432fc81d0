"""Recorded waits and deferred runs: a run that starts when an event happens
(ADR 0073).

- `WAIT#<event>`: `LINK#<name>` names one run waiting on the event (enough to rebuild it);
  `EVENT` is written once when it happens, with what the release passes on (`upto`). A wait
  writes its link, then its `waiting` execution row, then reads `EVENT`; a release writes
  `EVENT`, then reads the links. Each side writes before it reads the other's, so at least
  one sees the other and asks the workflow to start the run under its name, and the
  orchestrator refuses a name it started: exactly one start, with no transaction.
- `LEARN#deferred#<event>` / `RUN#<name>`: a run a step may not learn now (e.g. a spent
  budget); the tick that sees `event` happen turns each into a wait on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.persistence.keys import (
    DEFERRED_PREFIX,
    EVENT_SK,
    LINK_PREFIX,
    deferred_pk,
    wait_pk,
)
from agent_memory.persistence.retrying import AGAIN, Again, until_it_lands
from agent_memory.persistence.runs import Run, RunRows
from agent_memory.ports import Absent, KeyRange, Put, Record

# Waits and events are kept this long (a month's budget period, with room to spare).
WAIT_TTL_S = 90 * 24 * 3600
WAIT_TRIES = 3


@dataclass(frozen=True)
class Recorded:
    """A recorded wait: the run as its link names it (a retried wait keeps the first
    call's), whether it was recorded whole before (`repeated`), and what the event passed
    on when it had happened by the time both rows were written."""

    run: Run
    repeated: bool
    happened: dict[str, Any] | None


class WaitRows(RunRows):
    def wait(self, run: Run, event: str, now: int) -> Recorded:
        """Record `run` as waiting for `event` (its link, then its `waiting` row, both
        `Absent`), then read `EVENT` strongly consistently: when it happened, the caller
        asks the workflow to start the run as a release does. A link written before (a
        repeated or retried wait) names the run, and its row is written when missing.
        Raises Unavailable when the link kept expiring under it."""

        def record() -> Recorded | Again:
            try:
                self._store.write([Put(self._link(run, event, now), Absent())])
                linked = run
            except WriteConflict:
                link = self._store.get(wait_pk(event), LINK_PREFIX + run.name)
                if link is None:
                    return AGAIN  # it expired since the write was refused: link it again
                linked = self._linked_run(link)
            row = self._base(linked) | {"status": "waiting", "waitFor": event, "itemIds": []}
            try:
                self._store.write([Put(row, Absent())])
                repeated = False
            except WriteConflict:
                repeated = True
            found = self._store.get(wait_pk(event), EVENT_SK)
            happened = dict(found.get("data") or {}) if found is not None else None
            return Recorded(linked, repeated, happened)

        return until_it_lands(
            record,
            lambda: Unavailable("the wait could not be recorded; retry shortly"),
            tries=WAIT_TRIES,
        )

    def happen(self, event: str, data: dict[str, Any], now: int) -> dict[str, Any]:
        """Record, once, that `event` happened; the first call's `data` stands and is
        returned."""
        record: Record = {
            "pk": wait_pk(event),
            "sk": EVENT_SK,
            "type": "wait-event",
            "at": now,
            "data": data,
            "ttl": now // 1000 + WAIT_TTL_S,
        }
        existing = self._put_once(record, "the event could not be recorded; retry shortly")
        return dict(data if existing is None else existing.get("data") or {})

    def waiters(self, event: str) -> list[Run]:
        """Every run linked to `event`, as its link names it, in name order (started ones
        too)."""
        links = self._rows(wait_pk(event), KeyRange(prefix=LINK_PREFIX))
        return [self._linked_run(link) for link in links]

    def deferral(self, run: Run, event: str, now: int) -> Put:
        """The note that `run` was deferred to `event` (a repeated note is the same row)."""
        record = self._link(run, event, now) | {
            "pk": deferred_pk(event),
            "sk": DEFERRED_PREFIX + run.name,
            "type": "learning-deferred",
        }
        return Put(record)

    def deferred(self, event: str) -> list[Run]:
        """Every run deferred to `event`, in name order."""
        notes = self._rows(deferred_pk(event), KeyRange(prefix=DEFERRED_PREFIX))
        return [self._linked_run(note) for note in notes]

    def forget_deferred(self, event: str, runs: Sequence[Run]) -> None:
        """Delete the notes of `runs` (each is now a wait on `event`)."""
        self._delete([(deferred_pk(event), DEFERRED_PREFIX + run.name) for run in runs])

    @staticmethod
    def _link(run: Run, event: str, now: int) -> Record:
        link: Record = {
            "pk": wait_pk(event),
            "sk": LINK_PREFIX + run.name,
            "type": "wait-link",
            "kind": run.kind,
            "poolId": run.pool_id,
            "ttl": now // 1000 + WAIT_TTL_S,
        }
        return link | run.fields

    @staticmethod
    def _linked_run(link: Record) -> Run:
        return Run.of_row(link, str(link["kind"]), str(link["poolId"]))
