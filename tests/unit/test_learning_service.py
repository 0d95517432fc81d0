"""LearningService over the in-memory fakes: names, starts, each step's contract, and the
Execution view. The state machine is played by `drive` (the real ASL runs in the
integration tests)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agent_memory.domain.errors import Unavailable
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.learning_notes import NOTHING_NEW
from agent_memory.domain.runs import RUN_LIMIT_MS, RunError
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.base import STEP_DEADLINE_S, Ask, ModelTask
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.model_calls import owner_tag
from agent_memory.ports import Equals, Execution, KeyRange, ModelFailure, Put, Update
from agent_memory.service.learning import (
    MAX_EVIDENCE_BYTES,
    LearningService,
)
from agent_memory.service.learning_pools import (
    AlreadyApplied,
    Change,
    Evidence,
    Outcome,
    PoolDefaults,
    PoolRef,
    SourceRef,
)
from agent_memory.service.learning_runs import (
    EvidenceTooLarge,
    ModelConfigError,
    ModelTimeout,
    NoModel,
    Retryable,
    describe_error,
    evidence_from_json,
    evidence_json,
    execution_name,
)
from tests.support.in_memory import (
    SequentialIds,
)
from tests.support.learning import BUDGET, REF, Harness, copy_of, h
from tests.support.learning_doubles import (
    MODEL,
    Catalog,
    failing,
    remember_reply,
)
from tests.support.model_tasks import CASES as TASK_CASES
from tests.support.model_tasks import IDS as TASK_IDS

__all__ = ["h"]  # the fixture this module uses


# --- names and starts -------------------------------------------------------------------------


def test_names_follow_the_evidence_and_stay_within_step_functions_rules() -> None:
    assert execution_name(REF, 7) == "session-o-1-s-1-7"
    assert execution_name(REF, 7, "r000001") == "session-o-1-s-1-7-r000001"
    odd = PoolRef("session", "org with spaces", "x" * 90)
    name = execution_name(odd, 123456, "r0123456789abcdefgh")
    assert len(name) <= 80
    assert all(c.isalnum() or c in "-_" for c in name)
    assert name == execution_name(odd, 123456, "r0123456789abcdefgh")
    assert name != execution_name(PoolRef("session", "org with spaces", "y" * 90), 123456)


def test_a_turn_start_is_named_after_the_evidence_and_repeats_are_no_ops(h: Harness) -> None:
    upto = h.pool.add_turn(REF, BUDGET)
    assert h.service.start(REF, upto=upto, reason="turn") == "started"
    assert h.service.start(REF, upto=upto, reason="turn") == "started"
    assert list(h.orchestrator.started) == ["session-o-1-s-1-1"]
    payload = h.orchestrator.started["session-o-1-s-1-1"]
    assert payload["pool"] == {"kind": "session", "orgId": "o-1", "poolId": "s-1"}
    assert (payload["upto"], payload["reason"]) == (1, "turn")
    # A deliberate retry (Refresh) gets a new name every time.
    h.service.start(REF, upto=upto, reason="refresh")
    h.service.start(REF, upto=upto, reason="refresh")
    assert len(h.orchestrator.started) == 3


class Down:
    def start(self, name: str, payload: Any) -> Execution:
        raise Unavailable("the workflow service is busy")


def test_an_unavailable_workflow_skips_a_turn_but_fails_a_refresh() -> None:
    h = Harness(orchestrator=Down())
    assert h.service.start(REF, upto=1, reason="turn") == "skipped"
    with pytest.raises(Unavailable):
        h.service.start(REF, upto=1, reason="refresh")


def test_without_a_workflow_learning_is_skipped(h: Harness) -> None:
    service = LearningService(
        h.store,
        ExecutionRepository(h.store, h.cipher),
        h.clock,
        SequentialIds(),
        None,
        Catalog({}),
        [h.pool],
    )
    assert service.start(REF, upto=1, reason="turn") == "skipped"


# --- the steps --------------------------------------------------------------------------------


def test_a_run_learns_and_ends_in_one_transaction(h: Harness) -> None:
    name, payload = h.turn(BUDGET)
    state = h.drive(name, payload)

    assert state["evidence"] == {"status": "running", "position": 0, "items": 1}
    assert state["model"]["status"] == "answered"
    assert state["result"] == {"status": "succeeded", "applied": 1, "rejected": 0}
    assert h.pool.head(REF)["position"] == 1
    [execution] = h.service.executions(REF)
    assert execution.status == "succeeded"
    assert execution.applied == [{"key": "budget", "op": "remember"}]
    assert execution.item_ids == ["i-01"]
    assert execution.id == name


def test_nothing_to_learn_ends_as_skipped_without_a_model_call(h: Harness) -> None:
    name, payload = h.turn(BUDGET)
    h.drive(name, payload)
    refresh_upto = h.pool.head(REF)["items"]
    h.service.start(REF, upto=refresh_upto, reason="refresh")
    name2 = list(h.orchestrator.started)[-1]
    state = h.drive(name2, dict(h.orchestrator.started[name2]))

    assert state["evidence"] == {"status": "skipped", "items": 0, "reason": NOTHING_NEW}
    assert state["model"] == {"status": "skipped"}
    assert state["result"] == {"status": "skipped"}
    assert len(h.model.calls) == 1
    assert [e.status for e in h.service.executions(REF)] == ["skipped", "succeeded"]


def test_a_retried_call_model_reuses_the_saved_answer(h: Harness) -> None:
    name, payload = h.turn(BUDGET)
    state = dict(payload)
    state["evidence"] = h.service.load_evidence(h.event(name, state, "LoadEvidence"))
    first = h.service.call_model(h.event(name, state, "CallModel", attempt=0))
    again = h.service.call_model(h.event(name, state, "CallModel", attempt=1))

    assert first["reused"] is False
    assert again == {"status": "answered", "call": first["call"], "reused": True}
    assert len(h.model.calls) == 1


def test_a_retried_load_evidence_keeps_the_first_attempts_evidence(h: Harness) -> None:
    name, payload = h.turn(BUDGET)
    first = h.service.load_evidence(h.event(name, payload, "LoadEvidence"))
    h.pool.add_turn(REF, "More words.")  # the pool moved on; the run keeps what it read
    again = h.service.load_evidence(h.event(name, payload, "LoadEvidence", attempt=1))
    assert first == again == {"status": "running", "position": 0, "items": 1}


def test_apply_learning_twice_applies_once(h: Harness) -> None:
    name, payload = h.turn(BUDGET)
    state = h.drive(name, payload)
    again = h.service.apply_learning(h.event(name, state, "ApplyLearning", attempt=1))

    assert again == {"status": "succeeded"}
    assert len(h.pool.changes(REF)) == 1


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (ModelFailure("timeout", "no answer", retryable=True), ModelTimeout),
        (ModelFailure("invalid_output", "cut off", retryable=False), InvalidModelOutput),
        (ModelFailure("config", "bad key", retryable=False), ModelConfigError),
        (ModelFailure("throttled", "slow down", retryable=True), Retryable),
        (ModelFailure("unavailable", "503", retryable=True), Retryable),
    ],
)
def test_model_failures_map_to_retried_or_final_errors(
    h: Harness, failure: ModelFailure, error: type[Exception]
) -> None:
    def script(request: Any) -> Any:
        raise failure

    h.model.script = script
    name, payload = h.turn(BUDGET)
    state = dict(payload)
    state["evidence"] = h.service.load_evidence(h.event(name, state, "LoadEvidence"))
    with pytest.raises(error):
        h.service.call_model(h.event(name, state, "CallModel"))
    calls = h.store.query("LEARN#session#s-1").records
    assert [(c["status"], c["errorKind"]) for c in calls if c["type"] == "model-call"] == [
        ("failed", failure.kind)
    ]


def test_a_failure_is_recorded_and_moves_nothing(h: Harness) -> None:
    h.model.script = failing("timeout", retryable=False, message="no answer in 60 s")
    name, payload = h.turn(BUDGET)
    state = h.drive(name, payload)

    assert state["failure"] == {"status": "failed", "type": "ModelTimeout", "recorded": True}
    assert h.pool.head(REF)["position"] == 0
    [execution] = h.service.executions(REF)
    assert execution.error == RunError("ModelTimeout", "CallModel: no answer in 60 s")
    # Recording again (a retried RecordFailure) keeps the first record.
    again = h.service.record_failure(h.event(name, state, "RecordFailure", attempt=1))
    assert again == {"status": "failed", "recorded": False}


def test_a_failure_before_the_row_exists_is_still_recorded(h: Harness) -> None:
    name, payload = h.turn(BUDGET)
    state = dict(payload) | {"error": {"Error": "States.Timeout", "Cause": ""}}
    h.service.record_failure(h.event(name, state, "RecordFailure"))
    [execution] = h.service.executions(REF)
    assert execution.status == "failed"
    assert execution.error == RunError(
        "States.Timeout", "LoadEvidence: the step took longer than its time limit"
    )


def test_no_model_and_oversized_evidence_fail_the_run(h: Harness) -> None:
    h.pool.model = "openai/not-configured"
    state = h.drive(*h.turn(BUDGET))
    assert state["failure"]["type"] == NoModel.__name__

    h.pool.model = MODEL
    state = h.drive(*h.turn("x" * MAX_EVIDENCE_BYTES))
    assert state["failure"]["type"] == EvidenceTooLarge.__name__
    assert h.pool.head(REF)["position"] == 0


def test_rejected_changes_are_kept_sealed_and_shown(h: Harness) -> None:
    h.model.script = lambda request: remember_reply("budget", "The budget is 1500.", "i-99")
    h.drive(*h.turn(BUDGET))

    [execution] = h.service.executions(REF)
    assert execution.rejected == [
        {
            "change": {
                "op": "remember",
                "key": "budget",
                "content": "The budget is 1500.",
                "kind": "fact",
                "sources": ["i-99"],
            },
            "reason": "no unprocessed source",
        }
    ]
    row = next(r for r in h.store.rows.values() if r.get("type") == "learning-execution")
    assert "1500" not in json.dumps({k: v for k, v in row.items() if k != "detail"})


def test_a_run_that_lost_its_execution_shows_as_failed(h: Harness) -> None:
    name, payload = h.turn(BUDGET)
    h.service.load_evidence(h.event(name, payload, "LoadEvidence"))
    assert h.service.executions(REF)[0].status == "running"
    h.clock.ms += RUN_LIMIT_MS + 1
    [execution] = h.service.executions(REF)
    assert execution.status == "failed"
    assert execution.error.type == "States.Timeout"


def test_executions_are_listed_newest_first(h: Harness) -> None:
    for text in (BUDGET, "My hotel is the Adlon.", "I prefer trains."):
        h.drive(*h.turn(text))
    ids = [e.id for e in h.service.executions(REF)]
    assert ids == ["session-o-1-s-1-3", "session-o-1-s-1-2", "session-o-1-s-1-1"]
    assert len(h.service.executions(REF, limit=2)) == 2


# --- payload helpers --------------------------------------------------------------------------


def test_evidence_survives_its_json_form(h: Harness) -> None:
    h.pool.add_turn(REF, BUDGET, "I prefer trains.")
    evidence = h.pool.load_evidence(REF, 2)
    assert evidence is not None
    assert evidence_from_json(evidence_json(evidence), h.pool.detail_of) == evidence


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"Error": "Retryable", "Cause": json.dumps({"errorMessage": "ModelThrottled: 429"})},
            ("ModelThrottled", "429"),
        ),
        (
            {"Error": "InvalidModelOutput", "Cause": json.dumps({"errorMessage": "not JSON"})},
            ("InvalidModelOutput", "not JSON"),
        ),
        ({"Error": "Lambda.Unknown", "Cause": "plain text"}, ("Lambda.Unknown", "plain text")),
        (None, ("LearningFailed", "")),
    ],
)
def test_describe_error_reads_what_the_asl_caught(
    error: dict[str, Any] | None, expected: tuple[str, str]
) -> None:
    assert describe_error(error) == expected


# --- any task, any pool kind ----------------------------------------------------------------


class Shout(BaseModel):
    """The toy task's answer: the words to keep, shouted."""

    model_config = ConfigDict(extra="forbid")

    words: list[str]


class ShoutTask(ModelTask[tuple[str, ...], Shout]):
    """A task no provider and no workflow knows: defined here, in the test module."""

    name = "shout"
    output_model = Shout
    intro = "Shout every word."
    answer_format = '{"words": ["<WORD>", ...]}.'

    def user(self, task_input: tuple[str, ...]) -> str:
        return "\n".join(task_input)

    def local_answer(self, task_input: tuple[str, ...]) -> Shout:
        return Shout(words=[w.upper() for text in task_input for w in text.split()])


SHOUT = ShoutTask()


class TaskPool(PoolDefaults):
    """A pool of any kind that asks `make(evidence)`: items in one partition, a head row with
    the read position and the last applied answer, committed with the execution's end."""

    def __init__(self, kind: str, store: Any, make: Callable[[Evidence], Ask[Any, Any]]) -> None:
        self.kind = kind
        self.store = store
        self.make = make

    def _pk(self, ref: PoolRef) -> str:
        return f"TASKPOOL#{ref.kind}#{ref.pool_id}"

    def create(self, ref: PoolRef) -> None:
        self.store.write([Put({"pk": self._pk(ref), "sk": "HEAD", "position": 0, "items": 0})])

    def head(self, ref: PoolRef) -> dict[str, Any]:
        row = self.store.get(self._pk(ref), "HEAD")
        assert row is not None
        return dict(row)

    def add(self, ref: PoolRef, text: str) -> int:
        seq = int(self.head(ref)["items"]) + 1
        item = {"pk": self._pk(ref), "sk": f"ITEM#{seq:04d}", "content": text}
        self.store.write([Put(item), Update(self._pk(ref), "HEAD", set={"items": seq})])
        return seq

    def task(self, evidence: Evidence) -> Ask[Any, Any]:
        return self.make(evidence)

    def load_evidence(self, ref: PoolRef, upto: int | None) -> Evidence | None:
        head = self.head(ref)
        position, last = int(head["position"]), int(head["items"] if upto is None else upto)
        if last <= position:
            return None
        rows = self.store.query(
            self._pk(ref), KeyRange(low=f"ITEM#{position + 1:04d}", high=f"ITEM#{last:04d}")
        ).records
        items = tuple(EvidenceItem(f"i-{i:02d}", "user", r["content"]) for i, r in enumerate(rows))
        return Evidence(ref, position, last, items, (), MODEL, (), None)

    def change(self, evidence: Evidence, changes: Any, finish: Any) -> Change:
        if int(self.head(evidence.pool)["position"]) != evidence.position:
            raise AlreadyApplied()
        outcome = Outcome(applied=[{"key": "answer", "op": self.kind}], rejected=[])
        answer = json.dumps(_dumped(changes))
        move = Update(
            self._pk(evidence.pool),
            "HEAD",
            set={"position": evidence.upto, "answer": answer},
            condition=Equals("position", evidence.position),
        )
        return Change([move, *finish(outcome)], outcome)


def _dumped(answer: Any) -> Any:
    """What a toy pool keeps of its parsed answer (plain JSON)."""
    if isinstance(answer, BaseModel):
        return answer.model_dump(mode="json", by_alias=True)
    if isinstance(answer, tuple | list):
        return [_dumped(part) for part in answer]
    if dataclasses.is_dataclass(answer) and not isinstance(answer, type):
        return dataclasses.asdict(answer)
    return answer


def _run_pool(pool: TaskPool, ref: PoolRef, *texts: str) -> tuple[Harness, dict[str, Any]]:
    h = Harness()
    pool.store = h.store
    h.service.register(pool)  # registered here: the workflow and the adapters are unchanged
    pool.create(ref)
    upto = 0
    for text in texts:
        upto = pool.add(ref, text)
    assert h.service.start(ref, upto=upto, reason="turn") == "started"
    name = list(h.orchestrator.started)[-1]
    return h, h.drive(name, dict(h.orchestrator.started[name]))


def test_a_toy_pool_kind_runs_its_own_task_through_the_whole_workflow() -> None:
    ref = PoolRef("toy", "o-1", "t-1", SourceRef("thread", "th-1"))
    pool = TaskPool(
        "toy", None, lambda evidence: Ask(SHOUT, tuple(i.content for i in evidence.items))
    )
    h, state = _run_pool(pool, ref, "keep these words", "and long ones")

    assert state["result"] == {"status": "succeeded", "applied": 1, "rejected": 0}
    [request] = h.model.calls
    assert (request.task, request.deadline_s) == ("shout", STEP_DEADLINE_S)
    assert request.schema == {
        "type": "object",
        "properties": {"words": {"type": "array", "items": {"type": "string"}}},
        "required": ["words"],
        "additionalProperties": False,
    }
    head = pool.head(ref)
    assert head["position"] == 2
    assert json.loads(head["answer"]) == {
        "words": ["KEEP", "THESE", "WORDS", "AND", "LONG", "ONES"]
    }
    [execution] = h.service.executions(ref)
    assert execution.status == "succeeded"
    assert execution.applied == [{"key": "answer", "op": "toy"}]
    assert execution.rejected == []


def test_a_toy_answer_that_is_not_its_protocol_fails_the_run_and_moves_nothing() -> None:
    ref = PoolRef("toy", "o-1", "t-2")
    pool = TaskPool("toy", None, lambda evidence: Ask(SHOUT, ()))
    h = Harness()
    h.model.script = lambda request: '{"changes": []}'
    pool.store = h.store
    h.service.register(pool)
    pool.create(ref)
    upto = pool.add(ref, "hello")
    h.service.start(ref, upto=upto, reason="turn")
    name = list(h.orchestrator.started)[-1]
    state = h.drive(name, dict(h.orchestrator.started[name]))

    assert state["failure"]["type"] == "InvalidModelOutput"
    assert pool.head(ref)["position"] == 0


# What a record may name of an answer: what it is and which ids it stands on (a session
# memory key is plaintext metadata already, checked for secrets before it is kept).
_NAMES = frozenset({"op", "key", "kind", "sources", "id", "index"})


def _words(answer: Any) -> set[str]:
    """The texts of an answer (its names aside), four letters or more."""
    if isinstance(answer, dict):
        return {w for key, value in answer.items() if key not in _NAMES for w in _words(value)}
    if isinstance(answer, list):
        return {w for part in answer for w in _words(part)}
    return {answer} if isinstance(answer, str) and len(answer) >= 4 else set()


@pytest.mark.parametrize(("task", "task_input", "fragment"), TASK_CASES, ids=TASK_IDS)
def test_what_a_run_keeps_of_an_answer_it_did_not_apply_holds_none_of_its_words(
    task: ModelTask[Any, Any], task_input: Any, fragment: str
) -> None:
    answer = task.parse(task.request(task_input).local_answer(), task_input)
    recorded = json.dumps(task.describe(answer))
    words = _words(json.loads(json.dumps(_dumped(answer))))
    assert not [w for w in words if w in recorded], recorded


@pytest.mark.parametrize(("task", "task_input", "fragment"), TASK_CASES, ids=TASK_IDS)
def test_every_task_runs_through_the_generic_workflow(
    task: ModelTask[Any, Any], task_input: Any, fragment: str
) -> None:
    ref = PoolRef(f"pool-of-{task.name}", "o-1", "p-1")
    pool = TaskPool(ref.kind, None, lambda evidence: Ask(task, task_input))
    h, state = _run_pool(pool, ref, "Some words.")

    assert state["result"]["status"] == "succeeded"
    [request] = h.model.calls
    assert request.task == task.name
    # What the pool got is the task's parsed local answer, as the task describes it.
    expected = json.loads(
        json.dumps(_dumped(task.parse(task.request(task_input).local_answer(), task_input)))
    )
    assert json.loads(pool.head(ref)["answer"]) == expected
    assert _call_statuses(h) == ["answered"]


# --- two copies of one execution (asynchronous Express runs an execution at least once) ------


def _call_statuses(h: Harness) -> list[str]:
    """How each saved model call ended, as the call log tells it: answered when its answer
    row exists (the call row itself stays `started`)."""
    rows = list(h.store.rows.values())
    replies = {str(r["sk"]).removesuffix("#reply") for r in rows if r.get("type") == "model-reply"}
    calls = [r for r in rows if r.get("type") == "model-call"]
    return ["answered" if c["sk"] in replies else str(c["status"]) for c in calls]


def test_a_second_copy_of_an_execution_waits_for_the_first_copys_answer(h: Harness) -> None:
    import threading

    name, payload = h.turn(BUDGET)
    state = dict(payload)
    state["evidence"] = h.service.load_evidence(h.event(name, state, "LoadEvidence"))
    asked, answer = threading.Event(), threading.Event()
    reply = remember_reply("budget", "The budget is 1500 EUR.", "i-01")

    def slow(request: Any) -> Any:
        asked.set()
        answer.wait(10)
        return reply

    h.model.script = slow
    first: dict[str, Any] = {}
    copy_a = threading.Thread(
        target=lambda: first.update(h.service.call_model(copy_of(h, name, state, "arn:copy-a")))
    )
    copy_a.start()
    assert asked.wait(10)
    threading.Timer(0.3, answer.set).start()
    second = h.service.call_model(copy_of(h, name, state, "arn:copy-b"))
    copy_a.join(10)

    assert first["reused"] is False
    assert second == {"status": "answered", "call": first["call"], "reused": True}
    assert len(h.model.calls) == 1  # paid once


def test_a_copy_gives_up_waiting_as_a_retryable_error_and_an_expired_claim_is_taken(
    h: Harness,
) -> None:
    from agent_memory.service.learning_runs import Retryable

    name, payload = h.turn(BUDGET)
    state = dict(payload)
    state["evidence"] = h.service.load_evidence(h.event(name, state, "LoadEvidence"))
    run_pk = "LEARN#session#s-1"
    # The dead copy's claim, on the first attempt's call row (it never got an answer).
    h.store.write(
        [
            Put(
                {
                    "pk": run_pk,
                    "sk": f"CALL#{name}#CallModel#00",
                    "type": "call-claim",
                    "owner": owner_tag("arn:copy-that-died"),
                    "until": h.clock.now_ms() + 60_000,
                }
            )
        ]
    )
    h.service.copy_wait_s = 0.3
    with pytest.raises(Retryable):
        h.service.call_model(copy_of(h, name, state, "arn:copy-b"))
    assert h.model.calls == []

    h.clock.ms += 61_000  # the dead copy's claim has run out: the step's retry takes it, calls
    answered = h.service.call_model(copy_of(h, name, state, "arn:copy-b", attempt=1))
    assert answered["reused"] is False
    assert len(h.model.calls) == 1
