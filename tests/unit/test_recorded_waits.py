"""A recorded wait and its event's release, written without a transaction (issue 19): the
wait writes its link, then its row, then reads the event; the release writes the event,
then reads the links; a conditional claim lets one of them start the run. Whatever order
the two take, and wherever a wait is cut short and called again, the run learns once.

Each test plays one order by running the release (or a crash) just before a chosen store
call of the wait; the LearningService, its repository and its steps are the real ones.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from agent_memory.adapters.in_memory import InMemoryStore, SequentialIds
from agent_memory.domain.errors import Unavailable
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.ports import Put, Update
from agent_memory.service.learning import LearningService, wait_name
from tests.learning_support import MODEL, Catalog, NotesPool
from tests.unit.test_learning_service import BUDGET, REF, Harness

EVENT = "turn:o-1:s-1:t-1"
Match = Callable[[str, Any], bool]


class SteppedStore(InMemoryStore):
    """The in-memory table, running each hook once just before the first call it matches
    (a hook may raise, as a crash or an outage does; it may call the store itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.hooks: list[tuple[Match, Callable[[], None]]] = []
        self.calls: list[tuple[str, Any]] = []

    def at(self, match: Match, hook: Callable[[], None]) -> None:
        self.hooks.append((match, hook))

    def _reached(self, op: str, what: Any) -> None:
        self.calls.append((op, what))
        for entry in list(self.hooks):
            if entry in self.hooks and entry[0](op, what):
                self.hooks.remove(entry)
                entry[1]()

    def write(self, actions: Any) -> None:
        self._reached("write", list(actions))
        super().write(actions)

    def get(self, pk: str, sk: str) -> Any:
        self._reached("get", (pk, sk))
        return super().get(pk, sk)

    def query(self, pk: str, *args: Any, **kwargs: Any) -> Any:
        self._reached("query", pk)
        return super().query(pk, *args, **kwargs)


# The wait's three store calls, as a hook matches them.
def link_put(op: str, what: Any) -> bool:
    return op == "write" and _put_sk(what).startswith("LINK#")


def row_put(op: str, what: Any) -> bool:
    return op == "write" and _put_sk(what).startswith("EXEC#")


def event_read(op: str, what: Any) -> bool:
    return op == "get" and what == ("WAIT#" + EVENT, "EVENT")


def waiter_claim(op: str, what: Any) -> bool:
    return (
        op == "write"
        and len(what) == 1
        and isinstance(what[0], Update)
        and what[0].set.get("status") == "released"
    )


def _put_sk(actions: list[Any]) -> str:
    if len(actions) == 1 and isinstance(actions[0], Put):
        return str(actions[0].record["sk"])
    return ""


class WaitHarness(Harness):
    """Harness (one session pool, the steps played by `drive`) over a SteppedStore."""

    def __init__(self) -> None:
        super().__init__()
        self.store = SteppedStore()
        self.pool = NotesPool(self.store)
        self.service = LearningService(
            self.store,
            self.cipher,
            self.clock,
            SequentialIds(),
            self.orchestrator,
            Catalog({MODEL: self.model}),
            [self.pool],
        )
        self.pool.create(REF)
        self.upto = self.pool.add_turn(REF, BUDGET)
        self.driven: set[str] = set()

    def wait(self) -> str:
        return self.service.wait(REF, event=EVENT, reason="confide")

    def release(self) -> list[Any]:
        return self.service.release(EVENT, upto=self.upto)

    def run_started(self) -> None:
        """Play every execution the workflow was handed and has not run yet."""
        for name, payload in list(self.orchestrator.started.items()):
            if name not in self.driven:
                self.driven.add(name)
                self.drive(name, dict(payload))

    def assert_learned_once(self) -> None:
        self.run_started()
        assert list(self.orchestrator.started) == [wait_name(REF, EVENT)]
        [execution] = self.service.executions(REF)
        assert (execution["status"], execution["itemIds"]) == ("succeeded", ["i-01"])
        assert execution["applied"] == [{"key": "budget", "op": "remember"}]
        assert len(self.model.calls) == 1
        assert self.pool.head(REF)["position"] == self.upto


@pytest.fixture
def h() -> WaitHarness:
    return WaitHarness()


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


def test_a_release_while_the_wait_is_half_written_starts_nothing_and_the_wait_does(
    h: WaitHarness,
) -> None:
    seen: list[Any] = []
    h.store.at(row_put, lambda: seen.extend(h.release()))

    assert h.wait() == "started"
    # The release found the link but no row to claim: it started nothing.
    assert [e.started for e in seen] == [False]
    h.assert_learned_once()


def test_when_both_see_each_other_the_claim_lets_one_start_it(h: WaitHarness) -> None:
    # The event is written just before the wait looks; the release's own claim comes
    # after the wait claimed the row itself.
    h.store.at(
        event_read,
        lambda: ExecutionRepository(h.store, h.cipher).happen(EVENT, {"upto": h.upto}, 0),
    )
    assert h.wait() == "started"
    assert [e.started for e in h.release()] == [False]  # it lost the claim
    h.assert_learned_once()


def test_the_release_wins_the_claim_and_the_wait_starts_nothing(h: WaitHarness) -> None:
    asked: list[str] = []
    start = h.orchestrator.start

    def counted(name: str, payload: Any) -> Any:
        asked.append(name)
        return start(name, payload)

    h.orchestrator.start = counted  # type: ignore[method-assign]
    # The wait finds the event, and the whole release runs before the wait claims.
    h.store.at(
        event_read,
        lambda: ExecutionRepository(h.store, h.cipher).happen(EVENT, {"upto": h.upto}, 0),
    )
    h.store.at(waiter_claim, h.release)
    assert h.wait() == "started"
    assert asked == [wait_name(REF, EVENT)]  # the release's start only
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

    for h in harnesses:
        race(h)
        h.assert_learned_once()


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
    assert (waiting["status"], waiting["startedAt"]) == ("waiting", first)
    [started] = h.release()
    assert started.started
    h.assert_learned_once()


def test_a_release_while_a_crashed_wait_is_half_written_is_picked_up_by_the_retry(
    h: WaitHarness,
) -> None:
    h.store.at(row_put, crash)
    with pytest.raises(Unavailable):
        h.wait()
    assert [e.started for e in h.release()] == [False]  # a link without its row

    assert h.wait() == "started"  # the retry writes the row, finds the event, claims it
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
        h.wait()  # claimed (released), but the workflow did not take it
    assert [e["status"] for e in h.service.executions(REF)] == ["running"]

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
    assert [_put_sk(actions).split("#", 1)[0] for actions in writes] == ["LINK", "EXEC"]
    assert [what for op, what in h.store.calls if op != "write"] == [("WAIT#" + EVENT, "EVENT")]
