"""The claim of a learning run's model call: it rides on the first attempt's call
row, so two copies of one asynchronous Express execution never both call the model, a
copy's retry after a crash calls again (charged once per real call)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from agent_memory.domain.errors import Unavailable, WriteConflict
from agent_memory.domain.tasks.base import STEP_DEADLINE_S
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.model_calls import CALL_CLAIM, CLAIM_TRIES, Claim, owner_tag
from agent_memory.persistence.runs import Run
from agent_memory.ports import Action, ModelReply, Put, Update
from agent_memory.service.learning_pools import Evidence
from agent_memory.service.learning_runs import Retryable
from tests.support.learning import BUDGET, Harness, copy_of
from tests.support.learning_doubles import NotesPool, remember_reply

RUN_PK = "LEARN#session#s-1"
# How long a claim holds (service/learning.py): the model's deadline and a margin.
HOLD_MS = int((STEP_DEADLINE_S + 10) * 1000)
REPLY = remember_reply("budget", "The budget is 1500 EUR.", "i-01")


class ChargedPool(NotesPool):
    """NotesPool that pays for each real model call on a counter row, as a memory Bot's
    budget does (service/bot_learning.py)."""

    def charge(self, evidence: Evidence, reply: ModelReply) -> list[Action]:
        return [Update("SPEND", "calls", add={"paid": 1})]


@pytest.fixture
def h() -> Harness:
    harness = Harness()
    charged = ChargedPool(harness.store)
    harness.service.register(charged)
    harness.pool = charged
    return harness


def _loaded(h: Harness) -> tuple[str, dict[str, Any]]:
    name, payload = h.turn(BUDGET)
    state = dict(payload)
    state["evidence"] = h.service.load_evidence(h.event(name, state, "LoadEvidence"))
    assert state["evidence"]["status"] == "running"
    return name, state


def _paid(h: Harness) -> int:
    row = h.store.get("SPEND", "calls")
    return int(row["paid"]) if row else 0


def _first_row(h: Harness, name: str) -> dict[str, Any]:
    row = h.store.get(RUN_PK, f"CALL#{name}#CallModel#00")
    assert row is not None
    return row


def _blocking(asked: threading.Event, release: threading.Event) -> Any:
    def slow(request: Any) -> str:
        asked.set()
        assert release.wait(10)
        return REPLY

    return slow


def _calling(
    h: Harness, name: str, state: dict[str, Any], owner: str, *, attempt: int
) -> tuple[threading.Thread, dict[str, Any], threading.Event]:
    """`owner`'s copy calling the model in the background at `attempt`, held inside the
    call until the event returned is set; its answer lands in the dict returned."""
    asked, release = threading.Event(), threading.Event()
    h.model.script = _blocking(asked, release)
    answer: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: answer.update(
            h.service.call_model(copy_of(h, name, state, owner, attempt=attempt))
        )
    )
    thread.start()
    assert asked.wait(10)
    return thread, answer, release


def test_two_copies_racing_the_first_attempt_make_one_model_call(h: Harness) -> None:
    name, state = _loaded(h)
    release = threading.Event()
    h.model.script = _blocking(threading.Event(), release)
    start = threading.Barrier(2)
    results: dict[str, dict[str, Any]] = {}

    def copy(owner: str) -> None:
        start.wait(5)
        results[owner] = h.service.call_model(copy_of(h, name, state, owner))

    threads = [threading.Thread(target=copy, args=(o,)) for o in ("arn:copy-a", "arn:copy-b")]
    for thread in threads:
        thread.start()
    threading.Timer(0.4, release.set).start()
    for thread in threads:
        thread.join(10)

    assert len(h.model.calls) == 1  # one copy called, the other waited for its answer
    assert _paid(h) == 1
    called, waited = sorted(results.values(), key=lambda r: r["reused"])
    assert called["reused"] is False
    assert waited["reused"] is True
    assert waited["call"] == called["call"] == f"CALL#{name}#CallModel#00#reply"
    # The claim is the first call row itself.
    assert _first_row(h, name)["owner"] in (owner_tag("arn:copy-a"), owner_tag("arn:copy-b"))


def test_a_copy_at_a_later_attempt_waits_while_the_other_holds_the_first_claim(
    h: Harness,
) -> None:
    name, state = _loaded(h)
    copy_a, first, release = _calling(h, name, state, "arn:copy-a", attempt=0)

    # Copy B already gave up waiting once: its retry (attempt 1) still must not call.
    h.service.copy_wait_s = 0.3
    with pytest.raises(Retryable, match="calling the model"):
        h.service.call_model(copy_of(h, name, state, "arn:copy-b", attempt=1))
    assert len(h.model.calls) == 1

    release.set()
    copy_a.join(10)
    again = h.service.call_model(copy_of(h, name, state, "arn:copy-b", attempt=2))
    assert again == {"status": "answered", "call": first["call"], "reused": True}
    assert len(h.model.calls) == 1
    assert _paid(h) == 1


def test_a_copys_retry_after_a_crash_calls_again_and_is_charged_per_real_call(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, state = _loaded(h)
    runs: ExecutionRepository = h.service._runs
    real_answered = runs.call_answered
    crashes = iter([True])

    def crash_once(*args: Any, **kwargs: Any) -> None:
        if next(crashes, False):
            raise RuntimeError("the Lambda died after the model answered")
        real_answered(*args, **kwargs)

    monkeypatch.setattr(runs, "call_answered", crash_once)
    h.model.script = lambda request: REPLY
    with pytest.raises(RuntimeError):
        h.service.call_model(copy_of(h, name, state, "arn:copy-a"))
    assert len(h.model.calls) == 1
    assert _paid(h) == 1

    # The step's retry, by the same copy, inside its own first claim: it calls again.
    h.clock.ms += 5_000
    copy_a, retried, release = _calling(h, name, state, "arn:copy-a", attempt=1)
    # The retry renewed the claim: past the first attempt's hold, the other copy still waits.
    h.clock.ms += HOLD_MS - 2_000  # 3 s past the first attempt's claim, 2 s before the retry's
    h.service.copy_wait_s = 0.3
    with pytest.raises(Retryable):
        h.service.call_model(copy_of(h, name, state, "arn:copy-b", attempt=1))
    release.set()
    copy_a.join(10)

    assert retried["reused"] is False
    assert retried["call"] == f"CALL#{name}#CallModel#01#reply"
    assert len(h.model.calls) == 2
    assert _paid(h) == 2
    reused = h.service.call_model(copy_of(h, name, state, "arn:copy-b", attempt=2))
    assert reused == {"status": "answered", "call": retried["call"], "reused": True}
    assert len(h.model.calls) == 2
    assert _paid(h) == 2


def test_a_later_attempt_claims_the_first_row_when_the_first_attempt_never_did(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, state = _loaded(h)
    runs: ExecutionRepository = h.service._runs
    real_get = runs.get
    outage = iter([True])

    def get(*args: Any, **kwargs: Any) -> Any:
        if next(outage, False):
            raise Unavailable("the table is throttled")
        return real_get(*args, **kwargs)

    monkeypatch.setattr(runs, "get", get)
    with pytest.raises(Retryable):  # attempt 0 failed before it claimed
        h.service.call_model(copy_of(h, name, state, "arn:copy-a"))
    assert h.store.get(RUN_PK, f"CALL#{name}#CallModel#00") is None

    asked, release = threading.Event(), threading.Event()
    h.model.script = _blocking(asked, release)
    retried: dict[str, Any] = {}
    copy_a = threading.Thread(
        target=lambda: retried.update(
            h.service.call_model(copy_of(h, name, state, "arn:copy-a", attempt=1))
        )
    )
    copy_a.start()
    assert asked.wait(10)
    bare = _first_row(h, name)
    assert bare["type"] == "call-claim"
    assert bare["owner"] == owner_tag("arn:copy-a")
    assert "request" not in bare
    # The other copy, arriving at its first attempt, finds the claim: it does not call.
    h.service.copy_wait_s = 0.3
    with pytest.raises(Retryable):
        h.service.call_model(copy_of(h, name, state, "arn:copy-b"))
    release.set()
    copy_a.join(10)

    assert len(h.model.calls) == 1
    assert _paid(h) == 1
    assert retried["call"] == f"CALL#{name}#CallModel#01#reply"
    # What the run's calls left is erased with it, the bare claim included.
    runs.forget_calls(_run(h, name, state))
    assert [sk for (pk, sk) in h.store.rows if pk == RUN_PK and "#CallModel" in str(sk)] == []


def test_a_first_attempt_finding_a_claim_run_out_leaves_it_to_the_next_attempt(
    h: Harness,
) -> None:
    name, state = _loaded(h)
    h.store.write([Put(_dead_claim(name, until=h.clock.now_ms() - 1))])

    with pytest.raises(Retryable, match="ran out"):
        h.service.call_model(copy_of(h, name, state, "arn:copy-b"))
    assert h.model.calls == []
    answered = h.service.call_model(copy_of(h, name, state, "arn:copy-b", attempt=1))
    assert answered["reused"] is False
    assert len(h.model.calls) == 1
    assert _first_row(h, name)["owner"] == owner_tag("arn:copy-b")


def _dead_claim(name: str, *, until: int) -> dict[str, Any]:
    return {
        "pk": RUN_PK,
        "sk": f"CALL#{name}#CallModel#00",
        "type": "model-call",
        "execution": name,
        "step": "CallModel",
        "attempt": 0,
        "status": "started",
        "owner": owner_tag("arn:copy-that-died"),
        "until": until,
    }


def _run(h: Harness, name: str, state: dict[str, Any]) -> Run:
    from agent_memory.service.learning_runs import step_run

    run, _ref, _state, _attempt = step_run(copy_of(h, name, state, "arn:any"))
    return run


def test_a_claim_taken_meanwhile_is_read_again_and_its_holder_waited_for(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, state = _loaded(h)
    other = {**_dead_claim(name, until=h.clock.now_ms() + HOLD_MS), "owner": owner_tag("arn:b")}
    real_write = h.store.write
    meanwhile = iter([other])

    def write(actions: Sequence[Action]) -> None:
        # The other copy puts its claim just before this copy's first write.
        if (claim := next(meanwhile, None)) is not None:
            real_write([Put(claim)])
        real_write(actions)

    monkeypatch.setattr(h.store, "write", write)
    claim = h.service._runs.claim_call(
        _run(h, name, state), "CallModel", 0, "arn:a", "m", "{}", h.clock.now_ms(), HOLD_MS
    )
    assert claim == Claim(holder=owner_tag("arn:b"))
    assert _first_row(h, name)["owner"] == owner_tag("arn:b")


def test_a_claim_that_keeps_changing_is_given_up_after_its_tries(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, state = _loaded(h)
    tried: list[Sequence[Action]] = []

    def write(actions: Sequence[Action]) -> None:
        tried.append(actions)
        raise WriteConflict(condition=CALL_CLAIM)

    monkeypatch.setattr(h.store, "write", write)
    with pytest.raises(Unavailable, match="kept changing"):
        h.service._runs.claim_call(
            _run(h, name, state), "CallModel", 0, "arn:a", "m", "{}", h.clock.now_ms(), HOLD_MS
        )
    assert len(tried) == CLAIM_TRIES
