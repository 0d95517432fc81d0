"""Semantic recall indexes a thread in batches: once its unindexed messages reach
the batch (`lastMessages`: the messages its own context shows anyway), in one PutVectors;
an idle thread's tail is indexed by the schedule's tick; a failed put leaves the read
position for the next run. Meanwhile the next turn ranks the unindexed tail itself: what
was just said is recalled from another thread at once (ADR 0084). Over HTTP, the learning
workflow run inline, the real local embedder. With the observer on (its own batch and
runs): tests/api/test_thread_background.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.recall_batches import IDLE_MS
from tests.support.observer import OBSERVER, Observed, observed, recalled, stack
from tests.support.threads import assistant, user

__all__ = ["observed", "stack"]

SISTER = "My sister Ana lives in Lisbon."
CAT = "I adopted a cat named Miso last spring."
RAMEN = "My favourite food is spicy ramen."


def recall_on(observed: Observed, *, last: int, observer: bool) -> None:
    options: dict[str, Any] = {
        "lastMessages": last,
        "semanticRecall": {"topK": 1, "messageRange": 0},
    }
    if observer:
        options["observationalMemory"] = {
            "model": OBSERVER,
            "observation": {"messageTokens": 100_000, "bufferOnIdle": True},
        }
    observed.world.activate(options)


def save(observed: Observed, thread: str, said: str, answer: str = "Noted.") -> None:
    saved = observed.world.save(thread, user(said), assistant(answer))
    assert saved.status_code == 200, saved.text


def recall_runs(observed: Observed, thread: str) -> list[tuple[str, str]]:
    found = observed.world.get(f"/v1/threads/{thread}/learning").json()["executions"]
    return [(r["status"], r["reason"]) for r in found if r["kind"] == "thread-recall"]


class Puts:
    """The keys of each PutVectors the background makes."""

    def __init__(self) -> None:
        self.keys: list[list[str]] = []

    def of(self, thread: str) -> list[int]:
        """How many vectors of `thread` each put carried."""
        counts = [sum(1 for k in keys if k.startswith(f"{thread}#")) for keys in self.keys]
        return [n for n in counts if n]


@pytest.fixture
def puts(stack: Any, monkeypatch: pytest.MonkeyPatch) -> Puts:
    # The recall service builds the index on first use: any test of the module may be first.
    index = stack.services.threads.semantic.index
    original = index.put
    made = Puts()

    def put(records: Any) -> None:
        original(records)
        made.keys.append([r.key for r in records])

    monkeypatch.setattr(index, "put", put)
    return made


@pytest.fixture
def tick(stack: Any) -> Iterator[Any]:
    """The template's schedule (BudgetTickFunction) as `make run` runs it, on this stack."""
    from agent_memory.bootstrap import step_services
    from tests.support.memory_bot import budget_tick

    step_services.use(stack.services)
    yield budget_tick()
    step_services.reset()


def test_a_batch_is_indexed_in_one_put_once_reached(observed: Observed, puts: Puts) -> None:
    recall_on(observed, last=4, observer=False)
    thread = observed.world.thread()
    save(observed, thread, SISTER)
    # Below the batch: this thread shows these messages verbatim; nothing is put yet, and
    # another thread of the user recalls it from the unindexed tail.
    assert puts.of(thread) == []
    assert SISTER in recalled(observed, observed.world.thread(), "Where does my sister live?")
    save(observed, thread, CAT)
    # The batch of four is one put, and another thread of the user recalls from it.
    assert puts.of(thread) == [4]
    assert SISTER in recalled(observed, observed.world.thread(), "Where does my sister live?")
    save(observed, thread, RAMEN)
    assert puts.of(thread) == [4]
    # Pushed out of the last four by newer messages, it is recalled in its own thread.
    assert recalled(observed, thread, "Where does my sister live?") == [SISTER]


def test_an_idle_threads_tail_is_indexed_by_the_tick(
    observed: Observed, puts: Puts, tick: Any
) -> None:
    recall_on(observed, last=10, observer=False)
    thread = observed.world.thread()
    save(observed, thread, SISTER)
    other = observed.world.thread()
    # Recalled at once from the tail, though not indexed until the thread idles.
    assert SISTER in recalled(observed, other, "Where does my sister live?")
    assert puts.of(thread) == []
    # Not idle yet: the tick leaves the thread alone.
    tick({})
    assert recall_runs(observed, thread) == []
    observed.clock.ms += IDLE_MS
    assert tick({})["flushed"] >= 1
    assert recall_runs(observed, thread) == [("succeeded", "idle")]
    # Embedding asks no model: the run went from LoadEvidence straight to ApplyLearning.
    found = observed.world.get(f"/v1/threads/{thread}/learning").json()["executions"]
    assert [r["model"] for r in found if r["kind"] == "thread-recall"] == [None]
    assert SISTER in recalled(observed, other, "Where does my sister live?")
    # Done: later ticks start no run for it (the first deletes its pending row).
    observed.clock.ms += IDLE_MS
    tick({})
    tick({})
    assert recall_runs(observed, thread) == [("succeeded", "idle")]
    assert puts.of(thread) == [2]


def test_a_message_deleted_before_its_batch_is_never_recalled(
    observed: Observed, tick: Any
) -> None:
    recall_on(observed, last=10, observer=False)
    thread = observed.world.thread()
    save(observed, thread, SISTER, answer=CAT)
    client, headers = observed.world.api.client, observed.world.owner.headers
    assert client.delete(f"/v1/threads/{thread}/messages/last", headers=headers).status_code == 200
    observed.clock.ms += IDLE_MS
    tick({})
    other = observed.world.thread()
    assert SISTER in recalled(observed, other, "Where does my sister live?")
    assert CAT not in recalled(observed, other, "What is my cat called?")


def test_a_deleted_messages_vector_goes(observed: Observed) -> None:
    recall_on(observed, last=2, observer=False)
    thread = observed.world.thread()
    save(observed, thread, SISTER, answer=CAT)
    other = observed.world.thread()
    assert CAT in recalled(observed, other, "What is my cat called?")
    client, headers = observed.world.api.client, observed.world.owner.headers
    assert client.delete(f"/v1/threads/{thread}/messages/last", headers=headers).status_code == 200
    assert CAT not in recalled(observed, other, "What is my cat called?")


def test_a_failed_put_leaves_the_messages_to_the_next_run(
    observed: Observed, stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    recall_on(observed, last=2, observer=False)
    # The recall service builds the index on first use: any test of the module may be first.
    index = stack.services.threads.semantic.index
    original = index.put
    failures = [1]

    def put(records: Any) -> None:
        if failures[0]:
            failures[0] -= 1
            raise Unavailable("S3 Vectors is unavailable")
        original(records)

    monkeypatch.setattr(index, "put", put)
    thread = observed.world.thread()
    save(observed, thread, SISTER)
    other = observed.world.thread()
    # The put failed; the turn still ranks the unindexed messages itself.
    assert SISTER in recalled(observed, other, "Where does my sister live?")
    # The next batch's run reads from the position the failed run left: both turns.
    save(observed, thread, CAT, answer="Miso is a lovely name.")
    assert SISTER in recalled(observed, other, "Where does my sister live?")
    cat = set(recalled(observed, other, "What is my cat called?"))
    assert cat & {CAT, "Miso is a lovely name."}


def test_make_runs_tick_indexes_an_idle_threads_tail(tmp_path: Any) -> None:
    """`make run`'s wiring (SQLite, the local cipher, the template's state machine run in
    process, the template's schedule as its runner ticks it): a thread's one turn, below
    its batch, is recalled from another thread once the thread is idle and the tick came."""
    import time

    from tests.support.in_memory import FixedClock
    from tests.support.memory_bot import budget_tick
    from tests.support.threads import make_run_world

    clock = FixedClock(int(time.time() * 1000))
    with make_run_world(tmp_path, clock) as local:
        local.activate({"lastMessages": 10, "semanticRecall": {"topK": 1, "messageRange": 0}})
        thread = local.thread()
        assert local.save(thread, user(SISTER), assistant("Noted.")).status_code == 200
        clock.ms += IDLE_MS
        assert budget_tick()({})["flushed"] == 1
        deadline = time.monotonic() + 20
        found: list[str] = []
        while time.monotonic() < deadline and SISTER not in found:
            answer = local.api.client.post(
                f"/v1/threads/{local.thread()}/context",
                json={"message": {"role": "user", "content": "Where does my sister live?"}},
                headers=local.owner.headers,
            )
            found = [m["content"] for g in answer.json()["recalled"] for m in g["messages"]]
            time.sleep(0.05)
        assert SISTER in found


def test_a_tail_is_recalled_by_its_user_only_and_under_scope_thread_by_its_thread_only(
    observed: Observed,
) -> None:
    recall_on(observed, last=10, observer=False)
    world = observed.world
    theirs = world.thread(world.member)
    saved = world.save(theirs, user(SISTER), assistant("Noted."), user=world.member)
    assert saved.status_code == 200, saved.text
    mine = world.thread()
    assert SISTER not in recalled(observed, mine, "Where does my sister live?")
    world.activate(
        {"lastMessages": 10, "semanticRecall": {"topK": 1, "messageRange": 0, "scope": "thread"}}
    )
    save(observed, world.thread(), CAT)
    assert recalled(observed, mine, "What is my cat called?") == []


def test_a_tail_row_goes_once_indexed_or_once_its_thread_is_deleted(
    observed: Observed, stack: Any
) -> None:
    from agent_memory.persistence.recall_pending import RecallTails

    recall_on(observed, last=4, observer=False)
    world = observed.world
    owner = world.owner
    tails = RecallTails(stack.adapters.store)

    def rows() -> list[str]:
        return [t.thread_id for t in tails.of_user(owner.org_id, owner.id, world.agent)]

    indexed, gone = world.thread(), world.thread()
    save(observed, indexed, SISTER)
    save(observed, gone, RAMEN)
    assert sorted(rows()) == sorted([indexed, gone])
    save(observed, indexed, CAT)  # closes the batch of four: indexed
    answer = world.api.client.delete(f"/v1/threads/{gone}", headers=owner.headers)
    assert answer.status_code == 200, answer.text
    assert rows() == [indexed], "the deleted thread's tail row goes with it"
    # The next turn reads the row left, finds its messages indexed, and deletes it.
    assert SISTER in recalled(observed, world.thread(), "Where does my sister live?")
    assert rows() == []
