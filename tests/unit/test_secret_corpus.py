"""The secret corpus (tests/support/secret_corpus.py) as the spec of domain/secrets.py: each
secret is refused with its kind, each ordinary fact passes, in text and in keys."""

from __future__ import annotations

import time

import pytest

from agent_memory.domain.secret_words import (
    ACCESS_LINK,
    API_TOKEN,
    BANK_ACCOUNT,
    CARD,
    CLOUD_KEY,
    LOGIN,
    ONE_TIME_CODE,
    PASSWORD,
    PIN,
    PRIVATE_KEY,
    RECOVERY_PHRASE,
    SECURITY_ANSWER,
)
from agent_memory.domain.secrets import key_secret, looks_secret
from tests.support.secret_corpus import ORDINARY, ORDINARY_KEYS, SECRET_KEYS, SECRETS

# Secrets said around their words, as outside testers typed them into chats (session, agent
# and bot memory): codes with spaces or spelled out, combinations, a password beside its value.
PHRASED_SECRETS = [
    ("Always use hunter2 to log in.", PASSWORD),
    ("Decided: use hunter2 as the shared password.", PASSWORD),
    ("Always unlock the laptop with Tr0ub4dor&3.", PASSWORD),
    ("My ATM PIN is 4 4 5 6.", PIN),
    ("Mein PIN ist 4 4 5 6", PIN),
    ("My PIN is four seven one one.", PIN),
    ("The bank login is ana.smith and the passcode 7 7 8 8.", PIN),
    ("The admin user is root and it's hunter2.", LOGIN),
    ("The gate code is 1 2 3 4", PIN),
    ("The alarm code is 9 8 7 6.", PIN),
    ("The front-door code is 5 5 6 6.", PIN),
    ("My invite code is XK4-99P-QQ2.", PIN),
    ("The license key is 7QX2-KD9P-44MZ-P0WQ.", API_TOKEN),
    ("hunter2 opens everything", PASSWORD),
    ("Remember: hunter2 is what I type at the login prompt", PASSWORD),
    ("The vault code: 99-12-07.", PIN),
    ("ana's locker combination is 31-7-22.", PIN),
    ("ana's bike lock combo is 4821.", PIN),
    ("ana's phone unlock pattern is L-shape 14789.", PIN),
    ("ana's nickname is hunter2 and their password too.", PASSWORD),
    ("ana's nickname is hunter2, which is also their password.", PASSWORD),
    ("ana's password is the same as their nickname, hunter2.", PASSWORD),
    ("ana's PIN is four seven one one.", PIN),
]
# Sentences near those phrasings that hold no secret.
PHRASED_ORDINARY = [
    "The gate code is 4 digits long.",
    "The alarm code is on the fridge.",
    "The gate code has 4 digits.",
    "My password is at least 12 characters long.",
    "The password policy changed in 2024.",
    "I reset my password after the v2 release.",
    "Ticket ABC-1234 is about the login page.",
    "I use python3 to run the login script.",
    "My locker is number 12.",
    "The admin user is root.",
    "My nickname is Hunter.",
    "Version 2.4.1 unlocks dark mode.",
]


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_a_secret_is_refused_with_its_kind(text: str, kind: str) -> None:
    assert looks_secret(text) == kind


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_a_secret_is_refused_inside_a_longer_message(text: str, kind: str) -> None:
    assert looks_secret(f"Thanks for the help today! {text}. See you tomorrow.") is not None


@pytest.mark.parametrize("text", ORDINARY)
def test_an_ordinary_fact_is_kept(text: str) -> None:
    assert looks_secret(text) is None


@pytest.mark.parametrize(("text", "kind"), PHRASED_SECRETS)
def test_a_secret_said_around_its_words_is_refused_with_its_kind(text: str, kind: str) -> None:
    assert looks_secret(text) == kind
    assert looks_secret(f"Thanks for the help today! {text}. See you tomorrow.") is not None


@pytest.mark.parametrize("text", PHRASED_ORDINARY)
def test_a_sentence_near_those_phrasings_is_kept(text: str) -> None:
    assert looks_secret(text) is None


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_a_key_that_holds_a_secret_is_refused(key: str) -> None:
    assert key_secret(key) is not None


@pytest.mark.parametrize("key", ORDINARY_KEYS)
def test_an_ordinary_key_is_kept(key: str) -> None:
    assert key_secret(key) is None


def test_the_corpus_covers_every_kind_and_enough_phrasings() -> None:
    assert {kind for _text, kind in SECRETS} == {
        PASSWORD,
        LOGIN,
        ACCESS_LINK,
        API_TOKEN,
        CLOUD_KEY,
        PRIVATE_KEY,
        ONE_TIME_CODE,
        PIN,
        CARD,
        RECOVERY_PHRASE,
        SECURITY_ANSWER,
        BANK_ACCOUNT,
    }
    assert len(SECRETS) >= 100
    assert len(ORDINARY) >= 100
    assert len({text for text, _kind in SECRETS}) == len(SECRETS)
    assert len(set(ORDINARY)) == len(ORDINARY)


def test_the_corpus_is_checked_fast_enough_for_every_proposed_change() -> None:
    texts = [text for text, _kind in SECRETS] + ORDINARY
    looks_secret("warm up")  # the detector library is imported at the first check
    started = time.process_time()
    for text in texts:
        looks_secret(text)
    per_text = (time.process_time() - started) / len(texts)
    # Typical timings on this machine are near 0.1 ms; the bound leaves room for busy CI.
    assert per_text < 0.002
