"""Logins said in words: a user name with its password ("admin login is root / hunter2", "log
into the router as admin with Tiger!88"), in English, German, French and Spanish."""

from __future__ import annotations

import re

from agent_memory.domain.secret_words import (
    COMMON_USERS,
    FOR,
    IS,
    IS_WORD,
    LOGIN,
    NOT_A_VALUE,
    VALUE,
    LazyPattern,
    Rule,
    credential,
    strict,
    valued,
    wordset,
)

# "admin login is root / hunter2", "login: admin/admin", "user root pass hunter2".
_LOGIN_WORD = (
    r"(?:logins?|log-ins?|logons?|sign-?ins?|credentials?|creds|accounts?|zugangsdaten"
    r"|anmeldedaten|anmeldung|identifiants?|credenciales|acceso|usuario\s+y\s+contrase(?:ñ|n)a"
    r"|user(?:name)?\s+and\s+password)"
)
_SEPARATOR = r"(?:\s*[/:|,]\s*|\s+(?:and|with|pw|pass(?:word)?|und|et|y)\s+)"
_USER_PASS = (
    r"(?P<quote>[\"'`]?)(?P<user>[^\s/:|,\"'`]{2,64})"
    rf"{_SEPARATOR}[\"'`]?(?P<value>[^\s\"'`]{{3,}})"
)
_LOGIN = LazyPattern(rf"\b{_LOGIN_WORD}\b{FOR}\s*{IS}\s*{_USER_PASS}", re.IGNORECASE)
# Without "is" (a key's words: "admin login root hunter2"), a space may part the two.
_LOGIN_BARE = LazyPattern(
    r"\b(?:logins?|log-ins?|logons?|sign-?ins?|creds|credentials?)\s+"
    + rf"(?!(?:{IS_WORD}|are|were|sind|sont|son)\b)"
    + _USER_PASS.replace(_SEPARATOR, rf"(?:{_SEPARATOR}|\s+)"),
    re.IGNORECASE,
)
_USER_THEN_PASS = LazyPattern(
    r"\buser(?:name)?\s*[:=]?\s*(?P<user>[^\s,;]{2,64})[,;]?\s+"
    rf"(?:pass(?:word)?|pw|pwd|kennwort|passwort)\s*[:=]?{VALUE}",
    re.IGNORECASE,
)
# "login for the router is admin and the pass is Tiger!88": a login word, then a password
# word in the same sentence ("pass" alone counts here, never elsewhere: a boarding pass).
_LOGIN_THEN_PASSWORD = LazyPattern(
    r"\b(?:logins?|log-ins?|sign-?ins?|accounts?|user(?:name)?|(?:be)?nutzer(?:name)?"
    r"|utilisateur|identifiant|usuario|zugang)\b[^.!?\n]{0,60}?\b(?:pass(?:word|wort)?|pw|pwd"
    rf"|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|clave|senha)\b(?:(?P<is>{FOR}\s*{IS})|\s*[:=]|\s)"
    rf"{VALUE}",
    re.IGNORECASE,
)
# "to log in to the router use admin / Tiger!88".
_LOG_IN_WITH_PAIR = LazyPattern(
    rf"\b(?:log(?:ged|s)?[\s-]*(?:in|into|on)|sign[\s-]*in)\b[^.!?\n]{{0,40}}?\b(?:use|with|using"
    rf"|as|type|enter)\s+{_USER_PASS}",
    re.IGNORECASE,
)
# "log into the router as admin with Tiger!88".
_LOG_IN_AS = LazyPattern(
    r"\blog(?:ged|s)?[\s-]*(?:in|into|on)\b[^.!?\n]{0,40}?\bas\s+(?P<user>[^\s,]{2,64})\s+"
    rf"(?:with|using)\s+(?:the\s+)?(?:pass(?:word)?\s+)?{VALUE}",
    re.IGNORECASE,
)

LOGIN_STEMS = wordset(
    "log sign cred account zugang anmeld identif acceso user usuario nutzer utilisateur"
)
_LOGIN_PASSWORD_STEMS = wordset("pass pw kennw mot contrase clave senha")


def _pair(match: re.Match[str], _text: str) -> bool:
    """A user name with a password: one that looks like it, or any after a common user."""
    user = match.group("user").strip(".,;!?").lower()
    password = match.group("value").strip(".,;!?")
    if password.lower() in NOT_A_VALUE or user in NOT_A_VALUE:
        return False
    return credential(password, loose=False) or (
        user in COMMON_USERS and credential(password, loose=True)
    )


def _password_after(match: re.Match[str], text: str) -> bool:
    """A password after its word: quoted, after "is" any value, else one that looks like it."""
    check = valued if match.group("is") else strict
    return bool(match.group("quote")) or check(match, text)


_LOG_IN_STEMS = wordset("log sign")
LOGIN_RULES = (
    Rule(LOGIN, _LOGIN, _pair, (LOGIN_STEMS,)),
    Rule(LOGIN, _LOGIN_BARE, _pair, (LOGIN_STEMS,)),
    Rule(LOGIN, _USER_THEN_PASS, _pair, (LOGIN_STEMS,)),
    Rule(LOGIN, _LOG_IN_AS, _pair, (_LOG_IN_STEMS,)),
    Rule(LOGIN, _LOG_IN_WITH_PAIR, _pair, (_LOG_IN_STEMS,)),
    Rule(LOGIN, _LOGIN_THEN_PASSWORD, _password_after, (LOGIN_STEMS, _LOGIN_PASSWORD_STEMS)),
)
