"""The gate on model output (domain/model_gate.py): its rules, one reason each, and what a
run's log keeps of an answer none of which is applied."""

from __future__ import annotations

import json

import pytest

from agent_memory.domain import model_gate as gate
from agent_memory.domain.proposals import ProposedForget, ProposedRemember
from agent_memory.domain.tasks.answers import InvalidModelOutput
from agent_memory.domain.tasks.learning_changes import (
    LEARNING_CHANGES,
    LearningChanges,
    LearningInput,
)
from agent_memory.domain.tasks.memory_changes import MEMORY_CHANGES

SCOPE = gate.Scope(items=frozenset({"i-01", "i-02"}), entries=frozenset({"mem_mine"}))


@pytest.mark.parametrize(
    ("proposal", "reason"),
    [
        (gate.Proposal("fact", ("Ana likes tea.",), ("tea",), items=("i-01",)), None),
        (gate.Proposal("fact", ("x",), items=("i-03",)), gate.NOT_EVIDENCE),
        (gate.Proposal("observation", ("x",), entries=("mem_mine",)), None),
        (gate.Proposal("observation", ("x",), entries=("mem_theirs",)), gate.NOT_SHOWN),
        (gate.Proposal("invalidate", changes=("mem_mine",)), None),
        (gate.Proposal("invalidate", changes=("mem_theirs",)), gate.NOT_YOURS),
        (gate.Proposal("renameTopic", changes=("mem_mine",), rename=True), None),
        (
            gate.Proposal("renameTopic", changes=("mem_mine", "mem_theirs"), rename=True),
            gate.RENAME_NOT_YOURS,
        ),
        (gate.Proposal("renameTopic", rename=True), gate.RENAME_NOT_YOURS),
        # A secret is refused first, whatever else is wrong.
        (
            gate.Proposal("fact", ("Ana's password is hunter2.",), items=("i-09",)),
            gate.SECRET.format(what="a password"),
        ),
        (
            gate.Proposal("fact", ("Notes.",), ("hunter2-password",), items=("i-01",)),
            gate.SECRET.format(what="a password"),
        ),
    ],
)
def test_each_refusal_has_its_reason(proposal: gate.Proposal, reason: str | None) -> None:
    assert gate.gate_reason(proposal, SCOPE) == reason


@pytest.mark.parametrize(
    ("label", "secret"),
    [
        ("hunter2-password", True),
        ("password-hunter2", True),
        ("sk-live-4ec39hqlyjwdarjtt1zdp7dc", True),
        ("password-reset", False),
        ("reset-password", False),
        ("wifi-password", False),
        ("api-key-rotation", False),
        ("trip-planning", False),
        ("career", False),
    ],
)
def test_a_label_is_read_as_it_is_word_by_word_and_reversed(label: str, secret: bool) -> None:
    assert (gate.label_secret(label) is not None) == secret


def test_a_refusal_is_recorded_by_op_place_ids_and_reason() -> None:
    assert gate.refusal_record("fact", 2, gate.NOT_EVIDENCE, SCOPE.known(["i-01", "x y"])) == {
        "change": {"op": "fact", "index": 2, "ids": ["i-01"]},
        "reason": gate.NOT_EVIDENCE,
    }


def test_an_answer_none_of_which_is_applied_is_logged_without_its_words() -> None:
    answer = LearningChanges.model_validate(
        {
            "changes": [
                {
                    "op": "fact",
                    "content": "Ben goes to Globex.",
                    "topics": ["globex"],
                    "sources": [],
                },
                {"op": "renameTopic", "from": "globex", "to": "career"},
            ]
        }
    )
    described = LEARNING_CHANGES.describe(answer)
    assert described == [{"op": "fact", "index": 0}, {"op": "renameTopic", "index": 1}]
    kept = MEMORY_CHANGES.describe(
        (
            ProposedRemember("budget", "The budget is 1500 EUR.", "fact", ("i-01",)),
            ProposedForget("password-hunter2", ("i-01",)),
        )
    )
    assert "1500" not in json.dumps(kept)
    assert "hunter2" not in json.dumps(kept)


def test_a_model_answer_with_a_made_up_field_is_refused_without_repeating_it() -> None:
    answer = json.dumps({"changes": [{"op": "invalidate", "id": "m", "Ben goes to Globex": 1}]})
    with pytest.raises(InvalidModelOutput) as refused:
        LEARNING_CHANGES.parse(answer, LearningInput((), ()))
    assert "Globex" not in refused.value.message
    assert refused.value.message == "an unknown field in changes.0"
