"""Semantic recall's pending rows (persistence/recall_pending.py) under the IAM
each function already has: the save puts them (a plain write before it), the indexing steps mark
them, the schedule's tick reads and deletes them and starts the flush through a wait."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.persistence.recall_pending import pending_pk
from tests.support.iam import item, policy

PENDING = pending_pk("th_1")


@pytest.mark.parametrize(
    ("function", "action"),
    [
        ("ApiThreadsFunction", "PutItem"),
        ("LoadEvidenceFunction", "UpdateItem"),
        ("ApplyLearningFunction", "UpdateItem"),
        ("BudgetTickFunction", "Query"),
        ("BudgetTickFunction", "DeleteItem"),
        # The flush's wait and its run's row, as for a deferred run.
        ("BudgetTickFunction", "PutItem"),
        ("BudgetTickFunction", "UpdateItem"),
    ],
)
def test_each_function_may_do_its_part_on_the_pending_rows(
    template: dict[str, Any], function: str, action: str
) -> None:
    assert policy(template, function).allows(item(action, PENDING))


def test_the_tick_still_reads_no_thread(template: dict[str, Any]) -> None:
    tick = policy(template, "BudgetTickFunction")
    assert not tick.allows(item("GetItem", "THREAD#th_1"))
    assert not tick.allows(item("Query", "THREAD#th_1"))


@pytest.mark.parametrize("action", ["PutItem", "Query", "DeleteItem"])
def test_the_api_puts_reads_and_deletes_the_users_tail_rows(
    template: dict[str, Any], action: str
) -> None:
    # The save puts the row in the user's partition; the turn's recall reads and deletes it.
    assert policy(template, "ApiThreadsFunction").allows(item(action, "RESOURCE#org_1#usr_1"))
