"""A learning run's evidence is sealed on a row of its own, `EVIDENCE#<requestedAt>#<name>`,
not on its execution row: the run's end updates the execution row inside ApplyLearning's
transaction, which bills the row's size before the update, twice, so the execution row
stays small for its whole life. The evidence row is written once (the first attempt's
stands), left to expire by the end, and deleted with its run by erasure."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from agent_memory.domain.bots import Chat
from agent_memory.domain.errors import WriteConflict
from agent_memory.persistence import keys
from agent_memory.persistence.bot_rows import chat_pk
from agent_memory.persistence.erasure import CHAT_DELETING, ErasureRepository
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.keys import learn_pk
from agent_memory.persistence.runs import ROW_TTL_S, Began, Run
from agent_memory.ports import Action, Put
from tests.support.in_memory import FakeCipher, InMemoryStore
from tests.support.learning import BUDGET, REF, Harness, h
from tests.support.learning_doubles import recorded_writes, written_key

__all__ = ["h"]  # the fixture this module uses

PK = learn_pk("session", "s-1")


def _rows(h: Harness, kind: str) -> list[dict[str, Any]]:
    return [r for r in h.store.query(PK).records if r["type"] == kind]


def _writes(h: Harness, monkeypatch: pytest.MonkeyPatch) -> list[list[Action]]:
    return recorded_writes(h.store, monkeypatch)


_key = written_key


def _step(h: Harness, name: str, state: dict[str, Any], step: str, path: str) -> None:
    steps = {
        "LoadEvidence": h.service.load_evidence,
        "CallModel": h.service.call_model,
        "ApplyLearning": h.service.apply_learning,
    }
    state[path] = steps[step](h.event(name, state, step))


def test_the_execution_row_never_holds_the_evidence_and_the_run_learns(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes = _writes(h, monkeypatch)
    name, state = h.turn(BUDGET)
    _step(h, name, state, "LoadEvidence", "evidence")
    [execution] = _rows(h, "learning-execution")
    [kept] = _rows(h, "learning-evidence")
    assert execution["status"] == "running"
    assert "evidence" not in execution
    assert kept["sk"] == execution["sk"].replace("EXEC#", "EVIDENCE#")
    assert kept["name"] == name
    assert kept["ttl"] > h.clock.now_ms() // 1000  # expires with the saved calls
    assert BUDGET not in str(kept)  # sealed

    _step(h, name, state, "CallModel", "model")
    assert BUDGET in h.model.calls[0].user  # the model saw the kept evidence
    writes.clear()
    _step(h, name, state, "ApplyLearning", "result")

    assert state["result"]["status"] == "succeeded"
    assert "budget" in h.pool.entries(REF)
    [execution] = _rows(h, "learning-execution")
    assert execution["status"] == "succeeded"
    assert "evidence" not in execution
    # The end's transaction touches the execution row, not the evidence row (a Delete
    # there would bill its whole size, twice): that row is left to expire.
    [commit] = [w for w in writes if any(_key(a) == execution["sk"] for a in w)]
    assert all(_key(a) != kept["sk"] for a in commit)
    assert _rows(h, "learning-evidence") == [kept]


def test_a_retried_load_evidence_learns_from_what_the_first_attempt_kept(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, state = h.turn(BUDGET)
    runs = h.service._runs
    # The first attempt kept its evidence, then died before it wrote the execution row.
    real_begin = runs.begin

    def crash(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the function was killed")

    monkeypatch.setattr(runs, "begin", crash)
    with pytest.raises(RuntimeError):
        _step(h, name, state, "LoadEvidence", "evidence")
    assert _rows(h, "learning-execution") == []
    [first] = _rows(h, "learning-evidence")
    monkeypatch.setattr(runs, "begin", real_begin)
    # The retry loads other evidence (the pool changed meanwhile): the first one stands,
    # so the execution row, the evidence and the model's answer all agree.
    real_load = h.pool.load_evidence

    def other(ref: Any, upto: int) -> Any:
        loaded = real_load(ref, upto)
        assert loaded is not None
        extra = replace(loaded.items[0], id="i-other", content="Something else entirely.")
        return replace(loaded, items=(*loaded.items, extra))

    monkeypatch.setattr(h.pool, "load_evidence", other)
    _step(h, name, state, "LoadEvidence", "evidence")
    assert state["evidence"]["items"] == 1
    [execution] = _rows(h, "learning-execution")
    assert execution["status"] == "running"
    assert execution["itemIds"] == ["i-01"]
    assert _rows(h, "learning-evidence") == [first]
    monkeypatch.setattr(h.pool, "load_evidence", real_load)
    _step(h, name, state, "CallModel", "model")
    assert "Something else" not in h.model.calls[0].user
    _step(h, name, state, "ApplyLearning", "result")
    assert state["result"]["status"] == "succeeded"
    assert h.pool.entries(REF)["budget"]["sources"] == ["i-01"]


def test_a_load_evidence_repeated_after_the_row_began_changes_nothing(h: Harness) -> None:
    name, state = h.turn(BUDGET)
    _step(h, name, state, "LoadEvidence", "evidence")
    first = state["evidence"]
    before = {r["sk"]: dict(r) for r in h.store.query(PK).records}
    _step(h, name, state, "LoadEvidence", "evidence")  # the other copy of the execution
    assert state["evidence"] == first
    assert {r["sk"]: dict(r) for r in h.store.query(PK).records} == before


def test_a_failed_run_leaves_its_execution_row_small_and_its_evidence_to_expire(
    h: Harness,
) -> None:
    def refuse(request: Any) -> str:
        from agent_memory.ports import ModelFailure

        raise ModelFailure("config", "the model refused", retryable=False)

    h.model.script = refuse
    name, payload = h.turn(BUDGET)
    state = h.drive(name, payload)
    assert state["failure"]["status"] == "failed"
    [execution] = _rows(h, "learning-execution")
    assert (execution["status"], "evidence" in execution) == ("failed", False)
    [kept] = _rows(h, "learning-evidence")
    assert kept["ttl"] > 0
    # The next turn's run reads the same evidence again and learns it.
    h.model.script = None
    name, payload = h.turn("And I travel by train.")
    assert h.drive(name, payload)["result"]["status"] == "succeeded"
    assert h.pool.head(REF)["position"] == 2


def test_the_list_of_executions_never_counts_evidence_rows(h: Harness) -> None:
    for text in (BUDGET, "I travel by train.", "I like window seats."):
        name, payload = h.turn(text)
        assert h.drive(name, payload)["result"]["status"] == "succeeded"
    assert len(_rows(h, "learning-evidence")) == 3
    listed = h.service.executions(REF, limit=2)
    assert [e.status for e in listed] == ["succeeded", "succeeded"]
    assert [e.item_ids for e in listed] == [["i-03"], ["i-02"]]
    assert len(h.service.executions(REF)) == 3


# -- erasure -------------------------------------------------------------------------------

BOT_PK = learn_pk("bot", "bot_1@acme")


def _bot_run(runs: ExecutionRepository, chat: str, n: int, *, begin: bool = True) -> Run:
    run = Run("bot", "acme", "bot_1@acme", f"bot-{chat}-{n}", 1_000 + n, "turn", n, ("chat", chat))
    runs.keep_evidence(run, _evidence_of(run), 1_000 + n)
    if begin:
        runs.begin(run, 1_000 + n, Began(0, ["i-01"]))
    return run


def _evidence_of(run: Run) -> str:
    """A minimal evidence JSON of `run` (its chat's items are not needed here)."""
    kind, source = run.source or ("", "")
    pool = {"kind": "bot", "org_id": run.org_id, "pool_id": run.pool_id}
    return json.dumps(
        {
            "pool": pool | {"source": {"kind": kind, "id": source}},
            "position": 0,
            "upto": run.upto,
            "items": [],
            "memory": [],
            "model": None,
            "allowed_kinds": [],
            "detail": None,
            "person": None,
        }
    )


def _erase_chat(store: InMemoryStore, chat_id: str) -> None:
    store.write([Put({"pk": chat_pk(chat_id), "sk": keys.HEAD, "type": CHAT_DELETING})])
    chat = Chat(chat_id, "bot_1", "acme", "ana", None, "chat")
    ErasureRepository(store).delete_chat(chat, ("bot", "bot_1@acme"))


def test_erasing_a_chat_deletes_the_evidence_rows_of_its_runs() -> None:
    store = InMemoryStore()
    runs = ExecutionRepository(store, FakeCipher())
    _bot_run(runs, "chat_1", 1)
    _bot_run(runs, "chat_1", 2, begin=False)  # kept, its execution row never written
    other = _bot_run(runs, "chat_2", 3)
    assert len(store.query(BOT_PK).records) == 5  # three evidence rows, two executions

    _erase_chat(store, "chat_1")

    left = store.query(BOT_PK).records
    assert sorted(r["sk"] for r in left) == sorted([other.sk, other.evidence_sk])


def test_erasing_a_chat_whose_only_trace_is_an_evidence_row_deletes_it() -> None:
    store = InMemoryStore()
    runs = ExecutionRepository(store, FakeCipher())
    _bot_run(runs, "chat_1", 1, begin=False)
    _erase_chat(store, "chat_1")
    assert store.query(BOT_PK).records == []


def test_keep_evidence_returns_the_first_attempts_evidence() -> None:
    store = InMemoryStore()
    runs = ExecutionRepository(store, FakeCipher())
    run = Run("bot", "acme", "bot_1@acme", "bot-chat_1-1", 1_000, "turn", 1, ("chat", "chat_1"))
    assert runs.keep_evidence(run, '{"a": 1}', 5_000) == '{"a": 1}'
    assert runs.keep_evidence(run, '{"a": 2}', 6_000) == '{"a": 1}'
    kept = store.get(run.pk, run.evidence_sk)
    assert kept is not None
    assert (kept["ttl"], kept["chatId"]) == (5 + ROW_TTL_S, "chat_1")
    runs.begin(run, 6_000, Began(0, []))
    row = runs.get(run, evidence=True)
    assert row is not None
    assert runs.evidence(row) == '{"a": 1}'
    alone = runs.get(run)  # read without its evidence row
    assert alone is not None
    assert runs.evidence(alone) is None
    with pytest.raises(WriteConflict):
        runs.begin(run, 6_001, Began(0, []))
