"""LoadEvidence's row of a run that waited is taken over by one conditional update of its
`waiting` row (a refused put bills its full size; nothing is written to release it); a run
without a row is put, and one begun already is refused."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain.errors import WriteConflict
from agent_memory.persistence.executions import ExecutionRepository
from agent_memory.persistence.runs import Began, Run
from agent_memory.service.learning_pools import PoolRef, SourceRef
from agent_memory.service.learning_start import is_wait_name, wait_name
from tests.support.in_memory import FakeCipher, InMemoryStore

POOL = PoolRef("bot", "acme", "bot_1@acme", SourceRef("session", "chat_1"))


class CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[list[Any]] = []

    def write(self, actions: Any) -> None:
        self.writes.append(list(actions))
        super().write(actions)


def _run(name: str) -> Run:
    return Run("bot", "acme", "bot_1@acme", name, 1_000, "confide", 7, ("chat", "chat_1"))


def test_a_wait_name_is_told_apart_from_a_turn_name() -> None:
    assert is_wait_name(wait_name(POOL, "turn:acme:chat_1:turn_1"))
    assert not is_wait_name("bot-acme-bot_1-acme-chat_1-7")


def test_a_waiting_wait_is_begun_by_one_write() -> None:
    store = CountingStore()
    runs = ExecutionRepository(store, FakeCipher())
    run = _run(wait_name(POOL, "turn:acme:chat_1:turn_1"))
    recorded = runs.wait(run, "turn:acme:chat_1:turn_1", 1_000)
    assert (recorded.repeated, recorded.happened) == (False, None)  # waiting
    assert runs.keep_evidence(run, "{}", 1_002) == "{}"
    store.writes.clear()
    runs.begin(run, 1_002, Began(0, ["i-1"]), waited=True)
    assert len(store.writes) == 1
    row = runs.get(run, evidence=True)
    assert row is not None
    assert (row.status, row.item_ids, row.run.upto) == ("running", ["i-1"], 7)
    assert row.record["upto"] == 7  # the started run's, not the wait's
    assert runs.evidence(row) == "{}"  # on its own row


def test_a_waited_name_without_a_row_is_put_and_a_begun_one_is_refused() -> None:
    runs = ExecutionRepository(CountingStore(), FakeCipher())
    run = _run(wait_name(POOL, "turn:acme:chat_1:turn_2"))
    runs.begin(run, 1_002, Began(0, []), waited=True)
    row = runs.get(run)
    assert row is not None
    assert row.status == "running"
    with pytest.raises(WriteConflict):
        runs.begin(run, 1_003, Began(0, []), waited=True)
