"""A recorded wait and its event's release, written without a transaction: the
wait writes its link, then its row, then reads the event; the release writes the event,
then reads the links; whichever finds the other asks the workflow to start the run under
its name, and the orchestrator's claim of the name lets one start happen (the run's row
is not written to release it: it stays `waiting` until the run ends, begun on its evidence
row). Whatever
order the two take, and wherever a wait or a release is cut short and called again, the
run learns once.

Each test plays one order by running the release (or a crash) just before a chosen store
call of the wait; the LearningService, its repository and its steps are the real ones.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_memory.adapters.stepfunctions import StepFunctionsOrchestrator, claim_pk
from agent_memory.domain.errors import Unavailable
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.runs import Run
from agent_memory.persistence.waits import WAIT_TTL_S
from agent_memory.ports import Clock, Delete, Put, Store
from agent_memory.service.learning_start import wait_name
from tests.support.learning import EVENT, REF, Match, WaitHarness, put_sk, row_put
from tests.support.waits import h

__all__ = ["h"]  # the fixture this module uses


# The wait's three store calls, as a hook matches them.
def link_put(op: str, what: Any) -> bool:
    return op == "write" and put_sk(what).startswith("LINK#")


def event_read(op: str, what: Any) -> bool:
    return op == "get" and what == ("WAIT#" + EVENT, "EVENT")


def links_query(op: str, what: Any) -> bool:
    return op == "query" and what == "WAIT#" + EVENT


# --- a confide whose turn completes at the same time -----------------------------------------


@pytest.mark.parametrize(
    "before",
    [link_put, row_put, event_read, None],
    ids=["before-the-link", "between-link-and-row", "before-the-wait-looks", "after-the-wait"],
)
def test_a_release_at_any_point_of_the_wait_starts_it_once(
    h: WaitHarness, before: Match | None
) -> None:
    if before is None:
        assert h.wait() == "waiting"
        h.release()
    else:
        h.store.at(before, h.release)
        # The release came before the wait looked for the event: the wait starts the run
        # itself, or finds the release started it; it is never left waiting.
        assert h.wait() == "started"
    h.assert_learned_once()
    # Completing again (or confiding again) starts nothing new.
    assert [e.started for e in h.release()] == [False]
    assert h.wait() == "exists"
    h.assert_learned_once()


def test_a_release_while_the_wait_is_half_written_starts_it_from_its_link(
    h: WaitHarness,
) -> None:
    seen: list[Any] = []
    h.store.at(row_put, lambda: seen.extend(h.release()))

    # The release found the link (it names the run): it started it; the wait then wrote its
    # row, found the event, and its own start was refused.
    assert h.wait() == "started"
    assert [e.started for e in seen] == [True]
    [waiting] = h.service.executions(REF)
    assert waiting.status == "waiting"  # asked for, not begun: LoadEvidence takes it over
    h.assert_learned_once()


def test_a_run_started_from_its_link_that_began_before_the_wait_wrote_its_row(
    h: WaitHarness,
) -> None:
    def release_and_run() -> None:
        h.release()
        h.run_started()  # LoadEvidence puts the row itself (there was none), and it learns

    h.store.at(row_put, release_and_run)
    # The wait's own row is refused (the run's is there): it is told it exists.
    assert h.wait() == "exists"
    h.assert_learned_once()


def test_when_both_see_each_other_the_name_lets_one_start_it(h: WaitHarness) -> None:
    # The event is written just before the wait looks; the release asks after the wait
    # started the run itself.
    h.store.at(
        event_read,
        lambda: ExecutionRepository(h.store, h.cipher).happen(EVENT, {"upto": h.upto}, 0),
    )
    assert h.wait() == "started"
    assert [e.started for e in h.release()] == [False]  # the name was taken
    h.assert_learned_once()


def test_the_release_starts_it_first_and_the_wait_is_refused(h: WaitHarness) -> None:
    asked: list[tuple[str, bool]] = []
    start = h.orchestrator.start
    released: list[bool] = []

    def release_first(name: str, payload: Any) -> Any:
        if not released:
            released.append(True)
            asked.append(("release", h.release()[0].started))
        execution = start(name, payload)
        asked.append((name, execution.started))
        return execution

    h.orchestrator.start = release_first  # type: ignore[method-assign]
    # The wait finds the event, and the whole release runs before the wait asks.
    h.store.at(
        event_read,
        lambda: ExecutionRepository(h.store, h.cipher).happen(EVENT, {"upto": h.upto}, 0),
    )
    assert h.wait() == "started"
    name = wait_name(REF, EVENT)
    assert asked == [(name, True), ("release", True), (name, False)]
    h.assert_learned_once()


def test_many_confides_racing_their_turns_each_learn_once() -> None:
    harnesses = [WaitHarness() for _ in range(40)]

    def race(h: WaitHarness) -> None:
        gate = threading.Barrier(2)

        def wait() -> None:
            gate.wait()
            h.wait()

        def release() -> None:
            gate.wait()
            h.release()

        threads = [threading.Thread(target=wait), threading.Thread(target=release)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    for harness in harnesses:
        race(harness)
        harness.assert_learned_once()


# --- a wait cut short, and called again ------------------------------------------------------


def crash() -> None:
    raise Unavailable("the function stopped here")


def test_a_wait_retried_after_a_crash_between_its_writes_is_released(h: WaitHarness) -> None:
    h.store.at(row_put, crash)
    first = h.clock.ms
    with pytest.raises(Unavailable):
        h.wait()
    assert h.service.executions(REF) == []  # a link alone: nothing is listed

    h.clock.ms += 5_000
    assert h.wait() == "waiting"
    [waiting] = h.service.executions(REF)
    # One execution, as the first call named it (when the wait was first asked for).
    assert (waiting.status, waiting.started_at) == ("waiting", first)
    [started] = h.release()
    assert started.started
    h.assert_learned_once()


def test_a_release_while_a_crashed_wait_is_half_written_starts_it_and_the_retry_is_refused(
    h: WaitHarness,
) -> None:
    h.store.at(row_put, crash)
    with pytest.raises(Unavailable):
        h.wait()
    assert [e.started for e in h.release()] == [True]  # a link without its row names the run

    assert h.wait() == "started"  # the retry writes the row, finds the event: already started
    h.assert_learned_once()


def test_a_wait_that_crashed_before_it_looked_for_the_event_starts_on_its_retry(
    h: WaitHarness,
) -> None:
    assert h.release() == []  # the turn completed before the confide: nobody waited yet
    h.store.at(event_read, crash)
    with pytest.raises(Unavailable):
        h.wait()  # both rows written, the event not read: nobody will release it

    assert h.wait() == "started"
    h.assert_learned_once()


def test_a_wait_whose_start_failed_is_started_by_its_retry(h: WaitHarness) -> None:
    h.release()
    h.orchestrator.outages = 1
    with pytest.raises(Unavailable):
        h.wait()  # the event was found, but the workflow did not take the run
    # Nothing was written to release it: it still waits, for the next wait or release.
    assert [e.status for e in h.service.executions(REF)] == ["waiting"]

    assert h.wait() == "started"
    h.assert_learned_once()


def test_an_outage_on_the_first_write_leaves_nothing_and_the_retry_waits(h: WaitHarness) -> None:
    h.store.at(link_put, crash)
    with pytest.raises(Unavailable):
        h.wait()
    assert h.wait() == "waiting"
    h.release()
    h.assert_learned_once()


# --- what a wait costs -----------------------------------------------------------------------


def test_a_wait_is_two_single_row_writes_and_one_read(h: WaitHarness) -> None:
    h.store.calls.clear()
    assert h.wait() == "waiting"
    writes = [what for op, what in h.store.calls if op == "write"]
    assert [len(actions) for actions in writes] == [1, 1]  # no transaction, no check
    assert [put_sk(actions).split("#", 1)[0] for actions in writes] == ["LINK", "EXEC"]
    assert [what for op, what in h.store.calls if op != "write"] == [("WAIT#" + EVENT, "EVENT")]


def test_a_wait_that_finds_its_event_writes_nothing_more(h: WaitHarness) -> None:
    h.release()
    h.store.calls.clear()
    assert h.wait() == "started"
    writes = [what for op, what in h.store.calls if op == "write"]
    assert [put_sk(actions).split("#", 1)[0] for actions in writes] == ["LINK", "EXEC"]
    h.assert_learned_once()


def test_a_release_writes_its_event_alone_and_loadevidence_begins_on_the_evidence_row(
    h: WaitHarness,
) -> None:
    assert h.wait() == "waiting"
    h.store.calls.clear()
    assert [e.started for e in h.release()] == [True]
    writes = [what for op, what in h.store.calls if op == "write"]
    assert [put_sk(actions) for actions in writes] == ["EVENT"]  # nothing on the run's row

    [(name, payload)] = h.orchestrator.started.items()
    h.store.calls.clear()
    h.service.load_evidence(h.event(name, dict(payload), "LoadEvidence"))
    on_row = [what for op, what in h.store.calls if op == "write" and _touches_exec(what)]
    # The `waiting` row is read, not written: the run begins on its evidence row alone,
    # and the row is written once, when the run ends.
    assert on_row == []
    writes = [put_sk(what) for op, what in h.store.calls if op == "write"]
    assert [sk.split("#", 1)[0] for sk in writes] == ["EVIDENCE"]
    [running] = h.service.executions(REF)
    assert (running.status, running.item_ids) == ("running", ["i-01"])
    h.assert_learned_once()


def _touches_exec(actions: list[Any]) -> bool:
    keys = [a.record["sk"] if isinstance(a, Put) else getattr(a, "sk", "") for a in actions]
    return any(str(sk).startswith("EXEC#") for sk in keys)


# --- a release cut short, and called again ---------------------------------------------------


def test_a_release_that_died_after_writing_its_event_is_finished_by_the_next_complete(
    h: WaitHarness,
) -> None:
    assert h.wait() == "waiting"
    h.store.at(links_query, crash)
    with pytest.raises(Unavailable):
        h.release()  # the event is written; nobody was asked to start the run
    assert h.orchestrator.started == {}
    assert [e.status for e in h.service.executions(REF)] == ["waiting"]

    assert [e.started for e in h.release()] == [True]  # the turn is completed again
    h.assert_learned_once()


def test_a_release_that_died_after_writing_its_event_is_started_by_the_confide(
    h: WaitHarness,
) -> None:
    h.store.at(links_query, crash)
    with pytest.raises(Unavailable):
        h.release()
    assert h.wait() == "started"  # the confide came after the event: it starts the run
    h.assert_learned_once()


def test_a_release_that_died_after_writing_its_event_is_finished_by_a_repeated_confide(
    h: WaitHarness,
) -> None:
    assert h.wait() == "waiting"
    h.store.at(links_query, crash)
    with pytest.raises(Unavailable):
        h.release()
    assert h.wait() == "started"  # saved before, the event found: asked for, and started
    h.assert_learned_once()


def test_a_budget_tick_that_died_after_writing_its_event_is_finished_by_the_next_tick(
    h: WaitHarness,
) -> None:
    budget = "budget:b-1:2026-12-02"
    deferred = Run(REF.kind, REF.org_id, REF.pool_id, "deferred-1", h.clock.ms, "turn", h.upto)
    runs = ExecutionRepository(h.store, h.cipher)
    h.store.write([runs.deferral(deferred, budget, h.clock.ms)])
    h.store.at(lambda op, what: op == "query" and what == "WAIT#" + budget, crash)
    with pytest.raises(Unavailable):
        h.service.wake(budget)  # the wait and the event are written, nothing was started
    assert h.orchestrator.started == {}
    assert [e.status for e in h.service.executions(REF)] == ["waiting"]

    h.service.wake(budget)  # the next tick: its wait finds the event and starts the run
    assert list(h.orchestrator.started) == [wait_name(REF, budget)]
    assert runs.deferred(budget) == []
    assert [e.started for e in h.service.wake(budget)] == [False]  # later ticks: refused
    h.run_started()
    [execution] = h.service.executions(REF)
    assert (execution.status, execution.reason) == ("succeeded", "budget")
    assert len(h.model.calls) == 1


# --- the orchestrator's name claim is what starts a run once ---------------------------------


class ExpressClient:
    """Step Functions as an asynchronous Express machine answers StartExecution: every call
    runs, a used name too (the adapter's claim is what refuses it); the next `outages`
    calls fail as a throttled service does."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []
        self.outages = 0
        self._lock = threading.Lock()

    def start_execution(self, *, stateMachineArn: str, name: str, input: str) -> dict[str, Any]:
        with self._lock:
            if self.outages > 0:
                self.outages -= 1
                error = {"Error": {"Code": "ThrottlingException", "Message": "slow down"}}
                raise ClientError(error, "StartExecution")
            self.runs.append((name, json.loads(input)))
        return {"executionArn": f"{stateMachineArn}:{name}"}


class ExpressOrchestrator(StepFunctionsOrchestrator):
    """The Step Functions adapter with its name claims in the harness's table."""

    def __init__(self, client: ExpressClient, store: Store, clock: Clock) -> None:
        super().__init__(client, "arn:aws:states:::express", claims=store, clock=clock)
        self.client = client

    @property
    def started(self) -> dict[str, dict[str, Any]]:
        return dict(self.client.runs)


def express() -> tuple[WaitHarness, ExpressClient]:
    h = WaitHarness()
    client = ExpressClient()
    h.orchestrator = ExpressOrchestrator(client, h.store, h.clock)
    h.service = h.build()
    return h, client


def test_a_start_the_workflow_refused_gives_its_name_back_for_the_next_release() -> None:
    h, client = express()
    name = wait_name(REF, EVENT)
    assert h.wait() == "waiting"
    client.outages = 1
    with pytest.raises(Unavailable):
        h.release()  # the name was claimed, then StartExecution failed: the claim is deleted
    assert client.runs == []
    assert h.store.get(claim_pk(name), "NAME") is None
    assert [e.status for e in h.service.executions(REF)] == ["waiting"]

    assert [e.started for e in h.release()] == [True]
    assert [e.started for e in h.release()] == [False]  # asked again, refused by the name
    assert h.wait() == "exists"
    h.assert_learned_once()
    assert [n for n, _payload in client.runs] == [name]


def test_waits_and_repeated_releases_racing_start_each_run_once() -> None:
    for _ in range(25):
        h, client = express()
        gate = threading.Barrier(4)

        def at_once(call: Callable[[], Any]) -> Callable[[], None]:
            def go() -> None:
                gate.wait()
                call()

            return go

        threads = [
            threading.Thread(target=at_once(call))
            for call in (h.wait, h.release, h.release, h.wait)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        h.assert_learned_once()
        assert [n for n, _payload in client.runs] == [wait_name(REF, EVENT)]
        assert {payload["upto"] for _n, payload in client.runs} == {h.upto}


def test_a_wait_past_its_time_is_not_started_again_once_its_name_may_be_forgotten() -> None:
    h, client = express()
    assert h.wait() == "waiting"
    h.release()
    h.assert_learned_once()
    # Ninety days on: the link and the event expired (their rows not deleted yet), and the
    # name's claim ran out, so the orchestrator would start the name again.
    h.clock.ms += (WAIT_TTL_S + 3600) * 1000
    assert [e.started for e in h.release()] == [False]
    assert h.wait() == "exists"
    assert len(client.runs) == 1
    h.assert_learned_once()


def test_a_run_started_twice_learns_once(h: WaitHarness) -> None:
    """Were a name started again (a claim stranded and expired), LoadEvidence refuses a row
    that began or ended: the second run learns nothing."""
    assert h.wait() == "waiting"
    h.release()
    h.assert_learned_once()
    [(name, payload)] = h.orchestrator.started.items()
    again = h.drive(name, dict(payload))
    assert again["evidence"]["status"] == "succeeded"
    h.assert_learned_once()


def link_read(op: str, what: Any) -> bool:
    return op == "get" and str(what[1]).startswith("LINK#")


def test_a_retried_wait_whose_link_expired_as_it_was_refused_links_it_again(
    h: WaitHarness,
) -> None:
    h.store.at(row_put, crash)
    with pytest.raises(Unavailable):
        h.wait()

    def expired() -> None:
        [link] = [key for key in h.store.rows if str(key[1]).startswith("LINK#")]
        h.store.write([Delete(*link)])

    h.store.at(link_read, expired)
    assert h.wait() == "waiting"
    assert [key for key in h.store.rows if str(key[1]).startswith("LINK#")] != []
    assert [e.started for e in h.release()] == [True]
    h.assert_learned_once()
