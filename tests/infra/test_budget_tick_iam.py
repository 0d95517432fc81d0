"""The budget tick's IAM policy (template.yaml BudgetTickFunction, ADR 0055), and CallModel's
charge: every request the tick makes is allowed, nothing else is."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.iam import MACHINE_ARN, Request, item, policy, sealed

# What LearningService.wake does: the deferred notes (Query, Delete), the wait (the link,
# the execution row, then a consistent read of the event: no transaction), the event (Put,
# Get), the waiters (Query), the rows of runs saved before (Update, Get).
ALLOWED = [
    ("Query", "LEARN#deferred#budget:day:2026-12-02"),
    ("DeleteItem", "LEARN#deferred#budget:day:2026-12-02"),
    ("PutItem", "LEARN#bot#bot_1@org_1"),
    ("PutItem", "WAIT#budget:day:2026-12-02"),
    ("BatchGetItem", "WAIT#budget:day:2026-12-02"),
    ("GetItem", "WAIT#budget:day:2026-12-02"),
    ("Query", "WAIT#budget:day:2026-12-02"),
    ("UpdateItem", "LEARN#bot#bot_1@org_1"),
    ("GetItem", "LEARN#bot#bot_1@org_1"),
]
REFUSED = [
    # The wait is no transaction (ADR 0073).
    ("ConditionCheckItem", "WAIT#budget:day:2026-12-02"),
    ("GetItem", "CHAT#chat_1"),
    ("PutItem", "BOTMEM#bot_1#org_1"),
    ("UpdateItem", "BOT#bot_1"),
    ("GetItem", "TOKEN#ab12"),
    ("PutItem", "ORG#org_1"),
]


@pytest.mark.parametrize(("action", "pk"), ALLOWED)
def test_the_tick_may_do_what_waking_learning_needs(
    template: dict[str, Any], action: str, pk: str
) -> None:
    assert policy(template, "BudgetTickFunction").allows(item(action, pk))


@pytest.mark.parametrize(("action", "pk"), REFUSED)
def test_the_tick_reads_no_content_and_writes_no_memory(
    template: dict[str, Any], action: str, pk: str
) -> None:
    assert not policy(template, "BudgetTickFunction").allows(item(action, pk))


def test_the_tick_opens_no_content_and_starts_only_learning(template: dict[str, Any]) -> None:
    tick = policy(template, "BudgetTickFunction")
    for field_name in ("item", "entry", "details", "learning"):
        assert not tick.allows(sealed("Decrypt", field_name))
    assert tick.allows(Request("states:StartExecution", MACHINE_ARN))
    assert not tick.allows(Request("states:StartExecution", MACHINE_ARN.replace("-learning", "-x")))


def test_call_model_charges_the_bots_spend_row_only(template: dict[str, Any]) -> None:
    call_model = policy(template, "CallModelFunction")
    assert call_model.allows(item("UpdateItem", "BOT#bot_1"))
    assert not call_model.allows(item("GetItem", "BOT#bot_1"))
    assert not call_model.allows(item("UpdateItem", "BOTMEM#bot_1#org_1"))
