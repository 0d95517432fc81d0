"""Secrets that reach an account without being its password: a wallet's recovery phrase, the
answer to a security question (a mother's maiden name), a bank account number.

`account_secret(text)` names the kind, or None. A recovery phrase is found by its name
("my seed phrase is ...", in four languages) or, without one, as a run of 12 or more words of
a BIP-39 word list (the `mnemonic` package's lists, read at the first long text): prose never
strings that many list words together (the longest run in this repository's documents is 5).
An IBAN counts when its ISO 13616 check digits are right; an account number when a bank is
named beside it (a sort code, a routing number, "bank").
"""

from __future__ import annotations

import functools
import re
from unicodedata import normalize

from agent_memory.domain.secret_words import (
    BANK_ACCOUNT,
    FOR,
    IS,
    NOT_A_VALUE,
    RECOVERY_PHRASE,
    SECURITY_ANSWER,
    Rule,
    first_kind,
    has_stem,
    lazy,
    valued,
    windows,
    wordset,
)

_SEED_NAME = (
    r"(?:(?:secret\s+)?(?:seed|recovery|backup|mnemonic|wallet)[\s-]+(?:phrase|words?|sentence)"
    r"|wallet\s+seed|mnemonic|(?:the\s+)?(?:12|15|18|21|24|twelve|twenty[\s-]four)[\s-]+words?"
    r"|wiederherstellungs(?:phrase|satz|wörter)|seed-?(?:phrase|wörter)"
    r"|phrase\s+(?:secrète\s+)?(?:de\s+récupération|mnémonique)|mots\s+de\s+récupération"
    r"|frase\s+(?:semilla|de\s+recuperaci[oó]n)|palabras\s+de\s+recuperaci[oó]n|semilla)"
)
_SEED_STEMS = wordset(
    """seed recover backup mnemoni mnémoni wallet words wiederherstell récupération semilla
    recuperaci"""
)
_SEED_HIT = lazy("|".join(sorted(_SEED_STEMS)))
_SEED_NAMED = lazy(rf"\b{_SEED_NAME}\b{FOR}\s*{IS}\s*(?P<words>[^.!?;\n]+)", re.IGNORECASE)
# What may part the words of a phrase: spaces, commas, numbering on its own ("1. left, 2. stay";
# never digits glued to a word: "question1 answer1" is no phrase).
_PUNCTUATION = " \t\r\n,;:.)(-"
_BETWEEN_WORDS = lazy(r"[\s,;:.()-]*(?:\s\d{1,2}[.):]?\s+)?")
_WORD = lazy(r"([^\W\d_]+)")
_LATIN_LISTS = ("english", "spanish", "french", "italian", "portuguese", "czech")
_PHRASE_WORDS = 12

_ANSWER = (
    r"(?:(?:the\s+)?answers?\s+(?:to|for|of)\s+(?:\w+\s+){0,2}?(?:security|secret)\s+questions?"
    r"|(?:security|secret)(?:\s+question)?\s+answers?"
    r"|(?:mother|mom|mum|mama|mommy|mummy)['\u2019]?s?\s+maiden\s+name"
    r"|maiden\s+name\s+of\s+(?:my|his|her|their|the)\s+mother"
    r"|antwort\s+auf\s+(?:\w+\s+)?sicherheitsfrage|sicherheitsantwort"
    r"|(?:mädchenname|geburtsname)\s+(?:\w+\s+)?mutter"
    r"|réponse\s+(?:à|a)\s+(?:\w+\s+)?question\s+(?:secrète|de\s+sécurité)"
    r"|nom\s+de\s+jeune\s+fille"
    r"|respuesta\s+(?:a|de)\s+(?:\w+\s+)?pregunta\s+(?:secreta|de\s+seguridad)"
    r"|apellido\s+de\s+soltera)"
)
# ("jeune" stands for "nom de jeune fille": a stem is one word.)
_ANSWER_STEMS = wordset(
    """question born née geboren answer antwort réponse respuesta maiden mädchen geburtsname
    jeune soltera"""
)
_SECURITY_ANSWER = lazy(
    # The question may be quoted between: the answer to the question "first pet" is ...
    rf"\b{_ANSWER}\b(?:\s+[\"“'][^\"”'\n]{{1,40}}[\"”'])?{FOR}\s*{IS}\s*"
    r"(?P<value>[^\s.,;!?]{2,})",
    re.IGNORECASE,
)
# "my first pet's name, for the security question, is Rex": the question set apart, then a
# value ("my security question is boring" says nothing of the answer).
_QUESTION_IS = lazy(
    r"\b(?:security|secret)\s+questions?\s*[,:)\"\u201d'-]+\s*(?:\w+\s+){0,3}?(?:is|was)\s+"
    r"(?P<value>[^\s.,;!?]{2,})",
    re.IGNORECASE,
)
# "my mother was born Smith", "meine Mutter ist eine geborene Schneider".
_BORN = lazy(
    r"\b(?:mother|mom|mum|mutter|mère|madre)\b[^.!?\n]{0,25}?\b(?:born|née|nee|geborene|geb\.)"
    r"\s+(?P<value>[^\s.,;!?]{2,})",
    re.IGNORECASE,
)
# "security question: first pet? answer: Fluffy".
_QUESTION_THEN_ANSWER = lazy(
    r"\b(?:security|secret)\s+question\b.{0,80}?\banswer\s*[:=]\s*(?P<value>[^\s.,;!?]{2,})",
    re.IGNORECASE,
)

# Two letters, two check digits, then 11 to 30 letters or digits, grouped by 4 or not.
_IBAN = lazy(r"\b[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){11,30}\b", re.IGNORECASE)
_ACCOUNT_NUMBER = lazy(
    r"\b(?:(?:bank\s+)?account\s+(?:number|no\.?|nr\.?|#)|kontonummer|num[ée]ro\s+de\s+compte"
    rf"|n[uú]mero\s+de\s+cuenta){FOR}\s*{IS}?\s*(?P<value>\d[\d -]{{4,20}}\d)",
    re.IGNORECASE,
)
_BANK_WORDS = lazy(
    r"\b(?:sort\s+code|routing|aba|bank|banks|blz|bankleitzahl|bic|swift|iban|rib|banque"
    r"|banco|bancaria|clabe)\b",
    re.IGNORECASE,
)


def _iban(match: re.Match[str], _text: str) -> bool:
    candidate = re.sub(r"[ -]", "", match.group()).upper()
    return 15 <= len(candidate) <= 34 and _iban_checks(candidate)


def _at_a_bank(_match: re.Match[str], text: str) -> bool:
    return bool(_BANK_WORDS().search(text))


_ACCOUNT_RULES = (
    Rule(BANK_ACCOUNT, _IBAN, _iban),
    Rule(BANK_ACCOUNT, _ACCOUNT_NUMBER, _at_a_bank, (wordset("account konto compte cuenta"),)),
    Rule(SECURITY_ANSWER, _SECURITY_ANSWER, valued, (_ANSWER_STEMS,)),
    Rule(SECURITY_ANSWER, _QUESTION_IS, valued, (_ANSWER_STEMS,)),
    Rule(SECURITY_ANSWER, _BORN, valued, (_ANSWER_STEMS,)),
    Rule(SECURITY_ANSWER, _QUESTION_THEN_ANSWER, needs=(_ANSWER_STEMS,)),
)


def account_secret(text: str, lowered: str) -> str | None:
    """The kind of account secret in `text` (`lowered` is its lowercase), or None."""
    found = first_kind(_ACCOUNT_RULES, text, lowered)
    if found is None and (_named_phrase(text, lowered) or _listed_phrase(lowered)):
        return RECOVERY_PHRASE
    return found


def _iban_checks(iban: str) -> bool:
    """ISO 13616: the country and check digits moved to the end, letters as 10..35, mod 97 = 1."""
    rearranged = iban[4:] + iban[:4]
    digits = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(digits) % 97 == 1


def _named_phrase(text: str, lowered: str) -> bool:
    """A phrase after its name: four or more plain words, none of them about the phrase."""
    if not has_stem(lowered, _SEED_STEMS):
        return False
    matches = (
        match
        for window, window_lowered in windows(text, lowered, _SEED_HIT)
        for match in _SEED_NAMED().finditer(window)
    )
    for match in matches:
        words = [w.lower() for w in re.split(r"[\s,]+", match.group("words")) if w]
        first = words[:4]
        if len(first) == 4 and all(w.isalpha() and w not in NOT_A_VALUE for w in first):
            return True
    return False


def _listed_phrase(lowered: str) -> bool:
    """Twelve or more words in a row from one BIP-39 list, apart only by spaces, commas or
    numbering."""
    if lowered.count(" ") + lowered.count(",") + lowered.count("\n") < _PHRASE_WORDS - 1:
        return False
    if not lowered.isascii():
        lowered = normalize("NFC", lowered)
    every, lists = _word_lists()
    if _longest_run(lowered.split(), every) < _PHRASE_WORDS:
        return False  # the cheap look: most texts stop here
    # Split by words: separators at even places, words at odd ones.
    parts = _WORD().split(lowered)
    run: list[str] = []
    for position in range(1, len(parts), 2):
        word, before = parts[position], parts[position - 1]
        if word not in every:
            run = []
            continue
        if run and not _BETWEEN_WORDS().fullmatch(before):
            run = []
        run.append(word)
        last = run[-_PHRASE_WORDS:]
        # Twelve words drawn from 2048 repeat one rarely: "beta beta beta ..." is no phrase.
        varied = len(last) == _PHRASE_WORDS and len(set(last)) >= _PHRASE_WORDS - 2
        if varied and any(all(w in words for w in last) for words in lists):
            return True
    return False


def _longest_run(tokens: list[str], every: frozenset[str]) -> int:
    longest = run = 0
    for token in tokens:
        word = token.strip(_PUNCTUATION)
        if word in every:
            run += 1
            longest = max(longest, run)
        elif not word.isdigit():
            run = 0
    return longest


@functools.cache
def _word_lists() -> tuple[frozenset[str], tuple[frozenset[str], ...]]:
    # Imported here: only a text long enough to hold a phrase needs the lists.
    from importlib.resources import files

    folder = files("mnemonic").joinpath("wordlist")
    # The lists are decomposed (NFD); people type composed letters.
    lists = tuple(
        frozenset(normalize("NFC", folder.joinpath(f"{name}.txt").read_text("utf-8")).split())
        for name in _LATIN_LISTS
    )
    return frozenset().union(*lists), lists
