"""The batch rules of semantic recall's indexing (domain/recall_batches.py)."""

from __future__ import annotations

from agent_memory.domain.observation import idle
from agent_memory.domain.recall_batches import (
    IDLE_MS,
    batch_due,
    batch_size,
    may_be_observed_out,
)


def test_the_batch_is_the_last_n_up_to_what_fills_one_billed_put() -> None:
    # Titan v2's 1,024 dimensions: 30 vectors of 4,296 bytes fill 128 KB.
    assert batch_size(10, 1024) == 10
    assert batch_size(100, 1024) == 30
    assert batch_size(None, 1024) == 30  # the observer on: every unobserved message shown
    assert batch_size(None, 384) == 75
    assert batch_size(0, 1024) == 1  # lastMessages off: every save indexes


def test_a_batch_is_due_when_a_multiple_of_it_is_reached() -> None:
    assert not batch_due(0, 9, 10)
    assert batch_due(0, 10, 10)
    assert batch_due(8, 12, 10)
    assert not batch_due(12, 19, 10)  # an idle flush indexed part of this batch
    assert batch_due(12, 20, 10)
    assert batch_due(4, 5, 1)


def test_observed_out_and_idle() -> None:
    assert not may_be_observed_out(300, 30_000, idle_activation=False)
    assert may_be_observed_out(30_001, 30_000, idle_activation=False)
    assert may_be_observed_out(0, 30_000, idle_activation=True)
    assert not idle(1_000, 1_000 + IDLE_MS - 1, IDLE_MS)
    assert idle(1_000, 1_000 + IDLE_MS, IDLE_MS)
