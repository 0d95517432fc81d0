"""Secrets that memory never keeps: passwords, keys, tokens and links that give access.

`looks_secret(text)` answers the reason when the text holds one, else None. It errs on the
side of refusing: a fact dropped by mistake is cheap (a person can Remember it), a password
kept in memory and repeated in every later turn is not. It still lets ordinary facts pass
("my budget is 1500 EUR", a docs URL, a commit hash, a UUID).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from urllib.parse import parse_qsl, urlsplit


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


PRIVATE_KEY = "a private key"
PASSWORD = "a password"
CLOUD_KEY = "a cloud access key"
API_TOKEN = "an API key or token"
ACCESS_LINK = "a link that gives access"
RANDOM_STRING = "a long random string that looks like a credential"

_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")
_GOOGLE_KEY = re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")
# Well-known token formats: OpenAI/Anthropic, Stripe, GitHub, GitLab, Slack, npm, PyPI, JWT.
_TOKEN_FORMATS = re.compile(
    r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{16,}"
    r"|\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\bxox[abposre]-[A-Za-z0-9-]{10,}"
    r"|\bnpm_[A-Za-z0-9]{30,}"
    r"|\bpypi-[A-Za-z0-9_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
)
_BEARER = re.compile(r"\bbearer\s+[A-Za-z0-9._~+/-]{16,}", re.IGNORECASE)

_PASSWORD = re.compile(
    r"\b(?:password|passwort|passphrase|passcode|passwd|pwd|pin(?:\s+code)?)s?\b"
    r"(?:\s+(?:for|of|to|on|at)\s+[\w .@'-]{1,40}?)?"
    r"\s*(?:is|was|are|:|=|->)\s*[\"'`]?(?P<value>[^\s\"'`]{2,})",
    re.IGNORECASE,
)
# Words that follow "password is" in sentences about a password rather than giving it.
_NOT_A_VALUE = _wordset(
    """required needed necessary wrong incorrect invalid expired missing empty blank too not
    the a an my your their our stored saved kept set changed reset rotated managed weak strong
    secure long short case-sensitive different same ok fine correct protected hashed encrypted
    in on at of for being still now also always never only"""
)
_NAMED_SECRET = re.compile(
    r"\b(?:api[\s_-]?key|access[\s_-]?key(?:[\s_-]?id)?|secret(?:[\s_-]?(?:access[\s_-]?)?key)?"
    r"|client[\s_-]?secret|private[\s_-]?key|auth(?:entication)?[\s_-]?token|access[\s_-]?token"
    r"|refresh[\s_-]?token|bearer[\s_-]?token|session[\s_-]?token|token|credentials?)\b"
    r"\s*(?:is|was|:|=|->)\s*[\"'`]?(?P<value>[^\s\"'`]{6,})",
    re.IGNORECASE,
)

_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s<>\"'`)\]]+", re.IGNORECASE)
# Query or fragment parameters that carry a credential (pre-signed S3, SAS, OAuth, API keys).
_ACCESS_PARAMS = _wordset(
    """token access_token id_token refresh_token auth auth_token authtoken key api_key apikey
    api-key signature sig x-amz-signature x-amz-credential x-amz-security-token
    x-goog-signature x-goog-credential googleaccessid key-pair-id password pass pwd passwd
    secret client_secret session sessionid sid jwt otp ticket invite invite_code magic
    magic_link login_token reset_token code_challenge st"""
)
# Path words of invitation, sign-in and password-reset links.
_ACCESS_PATH = re.compile(
    r"(?:^|/)(?:invite|invites|invitation|invitations|join|joinchat|magic|magic[-_]?link"
    r"|magiclink|login[-_]?link|signin[-_]?link|passwordless|reset|reset[-_]?password"
    r"|password[-_]?reset|recover|recovery|activate|activation|verify|confirm|onboard)(?:/|$)",
    re.IGNORECASE,
)
# Hosts whose links are invitations by themselves.
_INVITE_HOSTS = ("discord.gg", "chat.whatsapp.com", "join.slack.com", "t.me")

_CANDIDATE = re.compile(r"[A-Za-z0-9+=_-]{32,}")


def looks_secret(text: str) -> str | None:
    """Why `text` must not be kept in memory (a short reason), or None when it may be."""
    if _PRIVATE_KEY.search(text):
        return PRIVATE_KEY
    if _AWS_KEY_ID.search(text):
        return CLOUD_KEY
    if _GOOGLE_KEY.search(text) or _TOKEN_FORMATS.search(text) or _BEARER.search(text):
        return API_TOKEN
    for url in _URL.findall(text):
        if _is_access_link(url):
            return ACCESS_LINK
    for match in _PASSWORD.finditer(text):
        if match.group("value").lower().strip(".,;!?") not in _NOT_A_VALUE:
            return PASSWORD
    for match in _NAMED_SECRET.finditer(text):
        if _looks_like_credential(match.group("value")):
            return API_TOKEN
    for url_free in _URL.split(text):
        for candidate in _CANDIDATE.findall(url_free):
            if _random(candidate):
                return RANDOM_STRING
    return None


def _is_access_link(url: str) -> bool:
    try:
        parts = urlsplit(url.rstrip(".,;!?"))
        password = parts.password
        host = (parts.hostname or "").lower()
    except ValueError:
        return False
    if password:
        return True
    params = [*parse_qsl(parts.query, keep_blank_values=False)]
    params += parse_qsl(parts.fragment, keep_blank_values=False)
    if any(name.lower() in _ACCESS_PARAMS and len(value) >= 4 for name, value in params):
        return True
    path = parts.path.rstrip("/")
    if host in _INVITE_HOSTS or host.endswith(".discord.gg"):
        return len(path.strip("/")) >= 4
    if _ACCESS_PATH.search(path):
        # An invite/reset path with a code after it, or a code in the query string.
        tail = [segment for segment in path.split("/") if segment]
        codes = [*tail[-1:], *(value for _name, value in params)]
        return any(_looks_like_code(code) for code in codes)
    return False


def _looks_like_code(value: str) -> bool:
    """A one-off code: long enough and not a plain word."""
    if len(value) < 6 or _ACCESS_PATH.search("/" + value + "/"):
        return False
    return any(ch.isdigit() for ch in value) or (len(value) >= 16 and not value.isalpha())


def _looks_like_credential(value: str) -> bool:
    """A value after "api key is" / "token:" that is a key, not a word ("expired")."""
    value = value.strip(".,;!?")
    if value.lower() in _NOT_A_VALUE or len(value) < 6:
        return False
    has_digit = any(ch.isdigit() for ch in value)
    mixed = any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)
    symbols = any(ch in "_-./+=" for ch in value)
    return has_digit or mixed or symbols or len(value) >= 20


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
