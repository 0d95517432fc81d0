"""One background execution per save: a save the observer runs on indexes for
semantic recall in the observer's own execution when recall's batch is due (with the
observer on: what fills one PutVectors, or messages observed out of the raw window),
before the model is asked (service/thread_learning.py `carry`), so a failed observation
leaves nothing unindexed and a step that repeats writes nothing twice."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.threads import Message, Thread
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Change,
    Evidence,
    Outcome,
    PoolRef,
)
from agent_memory.service.thread_learning import Saved, ThreadBackground, ThreadStep
from tests.support.in_memory import InMemoryStore
from tests.support.observer import Observed, Stack, observed, recalled, stack, turn

__all__ = ["observed", "stack"]

ORDER = {"role": "user", "content": "My order number is 4471 and it ships Tuesday."}


def both_on(observed: Observed) -> None:
    observed.world.activate(
        {
            "lastMessages": 1,
            "semanticRecall": {"topK": 1, "messageRange": 0},
            "observationalMemory": {
                "model": "openai/observer",
                "activateAfterIdle": "5m",
                "observation": {"messageTokens": 1000, "bufferOnIdle": True},
            },
        }
    )


def runs(observed: Observed, thread: str) -> list[tuple[str, str]]:
    """The thread's executions but its title's (kind, status), newest first."""
    found = observed.world.get(f"/v1/threads/{thread}/learning").json()["executions"]
    return [(r["kind"], r["status"]) for r in found if r["kind"] != "thread-title"]


@pytest.fixture
def started(stack: Stack) -> Any:
    """The pool kinds of the executions started for a thread (its title's apart)."""
    workflow: Any = stack.adapters.orchestrator

    def kinds(thread: str) -> list[str]:
        pools = [payload["pool"] for payload in workflow.started.values()]
        return [p["kind"] for p in pools if p["poolId"] == thread and p["kind"] != "thread-title"]

    return kinds


def observed_out(observed: Observed, thread: str) -> None:
    """A pause past the observer's idle activation (`activateAfterIdle` 5m), then the
    thread's context: its observed messages become active, out of its raw window."""
    observed.clock.ms += 5 * 60_000
    assert observed.context(thread)["observations"]


def test_a_turn_with_the_observer_and_recall_is_one_execution(
    observed: Observed, started: Any
) -> None:
    both_on(observed)
    past = observed.world.thread()
    assert observed.world.save(past, ORDER, turn(1)[1]).status_code == 200
    assert started(past) == ["thread-observe"]
    assert runs(observed, past) == [("thread-observe", "succeeded")]
    assert observed.script.tasks() == ["observation"]
    # Below recall's batch: not indexed yet, but another thread's turn ranks the
    # unindexed tail itself (ADR 0084).
    other = observed.world.thread()
    assert ORDER["content"] in recalled(observed, other, "order 4471")
    # Observed out of the raw window: the next save's one execution indexes them.
    observed_out(observed, past)
    assert observed.world.save(past, *turn(2)).status_code == 200
    assert started(past) == ["thread-observe", "thread-observe"]
    assert ORDER["content"] in recalled(observed, other, "order 4471")


def test_a_failed_observation_leaves_no_message_unindexed(observed: Observed) -> None:
    both_on(observed)
    past = observed.world.thread()
    assert observed.world.save(past, ORDER, turn(1)[1]).status_code == 200
    observed_out(observed, past)
    observed.script.failures = 5
    assert observed.world.save(past, *turn(2)).status_code == 200
    assert runs(observed, past)[0] == ("thread-observe", "failed")
    assert ORDER["content"] in recalled(observed, observed.world.thread(), "order 4471")


def test_an_embedding_model_that_cannot_answer_never_stops_the_observer(
    observed: Observed, stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.ports.vectors import EmbeddingFailure

    both_on(observed)
    past = observed.world.thread()
    assert observed.world.save(past, ORDER, turn(1)[1]).status_code == 200
    observed_out(observed, past)  # recall's work is due on the next save's run

    def down(texts: Any) -> Any:
        raise EmbeddingFailure("the embedding server answered 503")

    monkeypatch.setattr(stack.adapters.embedder, "embed", down)
    assert observed.world.save(past, *turn(2)).status_code == 200
    # The observer's run observes; the indexing it carried waits for a later run.
    assert runs(observed, past)[0] == ("thread-observe", "succeeded")
    assert "question2" in observed.log(past)["log"]
    monkeypatch.undo()
    assert observed.world.save(past, *turn(3)).status_code == 200
    assert ORDER["content"] in recalled(observed, observed.world.thread(), "order 4471")


# --- the seam, without a stack ----------------------------------------------------------


class Indexer(ThreadStep):
    """A model-free step over a list of messages: its position moves once per message."""

    kind = "thread-recall"

    def __init__(self, saved: int) -> None:
        self.store = InMemoryStore()
        self.saved = saved
        self.position = 0
        self.indexed: list[int] = []

    def wanted(self, saved: Saved) -> bool:
        return True

    def task(self, evidence: Evidence) -> None:
        return None  # model-free: its runs skip CallModel

    def read_evidence(self, pool: PoolRef, upto: int | None) -> Evidence | None:
        end = self.saved if upto is None else min(upto, self.saved)
        if end <= self.position:
            return None
        return Evidence(pool, self.position, end, (), (), None, (), None)

    def change(self, evidence: Evidence, changes: Any, finish: Any) -> Change:
        assert finish(Outcome([], [])) == ()  # no execution of its own to end
        if evidence.position != self.position:
            raise AlreadyApplied("moved")

        def indexed() -> None:
            self.indexed += range(evidence.position, evidence.upto)
            self.position = evidence.upto

        count = evidence.upto - evidence.position
        outcome = Outcome([{"key": "embeddings", "op": f"embedded {count}"}], [])
        return Change([], outcome, then=indexed)


class Observer(Indexer):
    """A step that carries `riders`: its `load_evidence` is ThreadStep's own."""

    kind = "thread-observe"

    def __init__(self, saved: int, *riders: ThreadStep) -> None:
        super().__init__(saved)
        self.riders = riders


class Starts:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.started: list[str] = []

    def start(self, pool: PoolRef, *, upto: int, reason: str) -> str:
        self.started.append(pool.kind)
        return self.answer if pool.kind == "thread-observe" else "started"

    def executions(self, pool: PoolRef, *, limit: int = 100) -> list[dict[str, Any]]:
        return []


def test_the_rider_is_done_once_whatever_repeats() -> None:
    indexer = Indexer(saved=4)
    carrying = Observer(4, indexer)
    pool = PoolRef("thread-observe", "org_1", "th_1")
    assert carrying.load_evidence(pool, 3) is not None
    assert indexer.indexed == [0, 1, 2]
    # A retried LoadEvidence (or ApplyLearning's re-read) finds nothing left to index.
    carrying.load_evidence(pool, 3)
    assert indexer.indexed == [0, 1, 2]
    # The next save's run reads on from the rider's own position.
    carrying.load_evidence(pool, None)
    assert indexer.indexed == [0, 1, 2, 3]


def test_a_rider_starts_its_own_run_when_its_carrier_does_not() -> None:
    thread = Thread("th_1", "org_1", "ag_1", "ana", None, 1_000)
    saved = Saved(thread, {}, 0, 2, (Message("msg_1", "user", "hi", 0),))
    indexer = Indexer(saved=2)
    for answer, expected in (("started", ["thread-observe"]), ("throttled", None)):
        learning = Starts(answer)
        background = ThreadBackground(learning, [Observer(2, indexer), indexer])
        background.after_save(saved)
        assert learning.started == (expected or ["thread-observe", "thread-recall"])
