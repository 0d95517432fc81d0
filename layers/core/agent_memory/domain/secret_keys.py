"""Keys and tokens: by their format (private keys, cloud keys, vendors' tokens, bearer tokens),
named in words ("my API key is ..."), or a long random string that looks like a credential."""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

from agent_memory.domain.secret_links import URL
from agent_memory.domain.secret_words import (
    API_TOKEN,
    BARE_VALUE,
    CLOUD_KEY,
    FOR,
    IS,
    NOW,
    PRIVATE_KEY,
    RANDOM_STRING,
    VALUE,
    LazyPattern,
    Rule,
    credential,
    key_like,
    wordset,
)

_PRIVATE_KEY = LazyPattern(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_AWS_KEY_ID = LazyPattern(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")
_GOOGLE_KEY = LazyPattern(r"\bAIza[0-9A-Za-z_-]{35}\b")
# Well-known token formats: OpenAI/Anthropic, Stripe, GitHub, GitLab, Slack, npm, PyPI, JWT.
_TOKEN_FORMATS = LazyPattern(
    r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"
    r"|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\bxox[abposre]-[A-Za-z0-9-]{10,}"
    r"|\bnpm_[A-Za-z0-9]{30,}"
    r"|\bpypi-[A-Za-z0-9_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
)
_BEARER = LazyPattern(r"\bbearer\s+[A-Za-z0-9._~+/-]{16,}", re.IGNORECASE)


_NAMED_SECRET_WORD = (
    r"(?:api[\s_-]?keys?|access[\s_-]?keys?(?:[\s_-]?id)?|secret(?:[\s_-]?(?:access[\s_-]?)?key)?"
    r"|client[\s_-]?secret|private[\s_-]?key|auth(?:entication)?[\s_-]?token|access[\s_-]?token"
    r"|refresh[\s_-]?token|bearer[\s_-]?token|session[\s_-]?token|tokens?|credentials?"
    r"|apikey|api[\s_-]?schlüssel|geheimer\s+schlüssel|clé\s+(?:d['\u2019]\s*)?api|clé\s+secrète"
    r"|clave\s+(?:de\s+)?api|jeton|signing[\s_-]?key|webhook[\s_-]?secret)"
)
# Not after a colon: "arn:aws:secretsmanager:...:secret:name" names a secret, it is not one.
_NAMED_SECRET = LazyPattern(
    rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE
)
_NAMED_SECRET_BARE = LazyPattern(rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{BARE_VALUE}", re.IGNORECASE)
# "my OpenAI key is 9f8e7d6c": any key, when its value has digits and letters (never "the
# key is under the mat", "the key to success is ...").
_ANY_KEY = LazyPattern(rf"(?<!:)\bkeys?\b{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE)

_CANDIDATE = LazyPattern(r"[A-Za-z0-9+=_-]{32,}")

NAMED_STEMS = wordset("key secret token cred schlüssel clé clave jeton")


# A private key, a cloud key or a token by its format alone.
FORMAT_RULES = (
    Rule(PRIVATE_KEY, _PRIVATE_KEY),
    Rule(CLOUD_KEY, _AWS_KEY_ID),
    Rule(API_TOKEN, _GOOGLE_KEY),
    Rule(API_TOKEN, _TOKEN_FORMATS),
    Rule(API_TOKEN, _BEARER),
)


def _named_value(match: re.Match[str], _text: str) -> bool:
    """The value of a named key or token: quoted, or a key rather than a word."""
    return bool(match.group("quote")) or key_like(match.group("value"))


def _bare_value(match: re.Match[str], _text: str) -> bool:
    return credential(match.group("value"), loose=False, minimum=8)


def _key_value(match: re.Match[str], _text: str) -> bool:
    """The value of a key of any name: digits with letters, or long and not a word."""
    value = match.group("value").strip(".,;!?)")
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    return len(value) >= 8 and ((has_digit and has_alpha) or (len(value) >= 20 and has_digit))


# A key or token said in words ("my API key is ...").
NAMED_RULES = (
    Rule(API_TOKEN, _NAMED_SECRET, _named_value, (NAMED_STEMS,)),
    Rule(API_TOKEN, _ANY_KEY, _key_value, (NAMED_STEMS,)),
    Rule(API_TOKEN, _NAMED_SECRET_BARE, _bare_value, (NAMED_STEMS,)),
)


def random_string(text: str) -> str | None:
    for url_free in URL.split(text):
        for candidate in _CANDIDATE.findall(url_free):
            if _random(candidate):
                return RANDOM_STRING
    return None


def _random(candidate: str) -> bool:
    """Base64/base62-like, mixes letters and digits, and close to uniformly random."""
    letters = sum(ch.isalpha() for ch in candidate)
    digits = sum(ch.isdigit() for ch in candidate)
    # Random strings switch between letters and digits often; slugs and names rarely do.
    switches = sum(
        a.isdigit() != b.isdigit()
        for a, b in itertools.pairwise(candidate)
        if a.isalnum() and b.isalnum()
    )
    if letters < 4 or digits < 2 or switches < 3:
        return False
    if re.fullmatch(r"[0-9a-fA-F-]+", candidate):
        return False  # hashes and UUIDs identify things, they do not open them
    counts = Counter(candidate)
    entropy = -sum(n / len(candidate) * math.log2(n / len(candidate)) for n in counts.values())
    return entropy >= 4.0
