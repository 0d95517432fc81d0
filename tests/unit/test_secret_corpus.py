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


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_a_secret_is_refused_with_its_kind(text: str, kind: str) -> None:
    assert looks_secret(text) == kind


@pytest.mark.parametrize(("text", "kind"), SECRETS)
def test_a_secret_is_refused_inside_a_longer_message(text: str, kind: str) -> None:
    assert looks_secret(f"Thanks for the help today! {text}. See you tomorrow.") is not None


@pytest.mark.parametrize("text", ORDINARY)
def test_an_ordinary_fact_is_kept(text: str) -> None:
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
