"""Secrets said around their words (codes with spaces or spelled out, a password named beside
its value, what one logs in with, a secret announced before it comes) are never learned by
`local/rules`, neither as content nor as a key; a sentence too long to keep is skipped."""

from __future__ import annotations

import pytest

from agent_memory.adapters.rules_model import RulesModel
from agent_memory.domain.bounds import MAX_ENTRY_CONTENT
from agent_memory.domain.consolidation import PoolRules, consolidate
from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.proposals import (
    MEMORY_KINDS,
    ProposedChange,
    ProposedRemember,
    parse_changes,
)
from agent_memory.domain.tasks.memory_changes import MEMORY_CHANGES, LearningRequest

# What outside testers typed into a chat (each is in the corpus of test_secret_corpus.py too).
SAID = [
    "Always use hunter2 to log in.",
    "Decided: use hunter2 as the shared password.",
    "Always unlock the laptop with Tr0ub4dor&3.",
    "My ATM PIN is 4 4 5 6.",
    "Mein PIN ist 4 4 5 6",
    "My PIN is four seven one one.",
    "The bank login is ana.smith and the passcode 7 7 8 8.",
    "The admin user is root and it's hunter2.",
    "The gate code is 1 2 3 4",
    "The alarm code is 1 2 3 4.",
    "The front-door code is 1 2 3 4.",
    "My invite code is XK4-99P-QQ2.",
    "hunter2 opens everything",
    "Remember: hunter2 is what I type at the login prompt",
    "My nickname is hunter2 and my password too.",
    "My nickname is hunter2, which is also my password.",
    "My password is the same as my nickname, hunter2.",
]
# The secrets each printed in the content or a key of an earlier answer.
SECRET_VALUES = ("hunter2", "Tr0ub4dor", "4 4 5 6", "7 7 8 8", "1 2 3 4", "XK4", "seven")


def _learned(*texts: str) -> tuple[ProposedChange, ...]:
    items = tuple(EvidenceItem(f"i-{n}", "user", text) for n, text in enumerate(texts))
    request = LearningRequest("session", items, (), MEMORY_KINDS, None)
    return parse_changes(RulesModel().propose(MEMORY_CHANGES.request(request)).text)


def _holds_a_secret(changes: tuple[ProposedChange, ...]) -> bool:
    said = " ".join(f"{c.key} {getattr(c, 'content', '')}" for c in changes).lower()
    return any(value.lower() in said for value in SECRET_VALUES)


@pytest.mark.parametrize("text", SAID)
def test_a_secret_said_around_its_words_is_not_learned(text: str) -> None:
    for said in (text, f"Remember that {text}", f"Remember: {text}"):
        assert not _holds_a_secret(_learned(said)), said


def test_a_secret_announced_in_one_item_and_given_in_the_next_is_not_learned() -> None:
    changes = _learned("My password is the following.", "Remember: hunter2.")
    assert changes == ()


def test_a_secret_announced_hides_the_rest_of_its_item_only_and_the_next_item() -> None:
    changes = _learned(
        "My budget is 1500 EUR. The PIN is as follows. Remember: hunter2.",
        "Remember: Tr0ub4dor.",
        "I live in Berlin.",
    )
    assert sorted(c.key for c in changes) == ["budget", "home-city"]


def test_a_sentence_about_a_password_still_teaches_what_it_says() -> None:
    changes = _learned("My password manager is 1Password.")
    assert [c.key for c in changes] == ["password-manager"]


def test_a_sentence_too_long_to_keep_is_skipped_and_the_rest_is_learned() -> None:
    changes = _learned("Always " + "check " * 2000, "My budget is 1500 EUR.")
    assert [c.key for c in changes] == ["budget"]
    assert all(len(getattr(c, "content", "")) <= MAX_ENTRY_CONTENT for c in changes)


@pytest.mark.parametrize(
    "text", ["The gate code is 1 2 3 4", "Decided: use hunter2 as the shared password."]
)
def test_a_model_proposed_change_that_holds_a_secret_is_rejected(text: str) -> None:
    items = (EvidenceItem("i-1", "user", text),)
    change = ProposedRemember("gate", text, "decision", ("i-1",))
    decision = consolidate([change], {}, PoolRules.of(MEMORY_KINDS, items))
    assert decision.accepted == ()
    assert "which memory never keeps" in decision.rejected[0].reason
