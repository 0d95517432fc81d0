"""Logins said in words: a user name with its password ("admin login is root / hunter2", "log
into the router as admin with Tiger!88"), in English, German, French and Spanish."""

from __future__ import annotations

import itertools
import re

from agent_memory.domain.secret_words import (
    COMMON_USERS,
    FOR,
    IS,
    IS_WORD,
    NOT_A_VALUE,
    VALUE,
    LazyPattern,
    credential,
    has_stem,
    is_value,
    wordset,
)

LOGIN = "a login with its password"


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


def login_secret(text: str, lowered: str) -> bool:
    matches = [_LOGIN.finditer(text), _LOGIN_BARE.finditer(text), _USER_THEN_PASS.finditer(text)]
    if "log" in lowered or "sign" in lowered:
        matches += [_LOG_IN_AS.finditer(text), _LOG_IN_WITH_PAIR.finditer(text)]
    for match in itertools.chain(*matches):
        user = match.group("user").strip(".,;!?").lower()
        password = match.group("value").strip(".,;!?")
        if password.lower() in NOT_A_VALUE or user in NOT_A_VALUE:
            continue
        if credential(password, loose=False) or (
            user in COMMON_USERS and credential(password, loose=True)
        ):
            return True
    if not has_stem(lowered, _LOGIN_PASSWORD_STEMS):
        return False
    for match in _LOGIN_THEN_PASSWORD.finditer(text):
        value = match.group("value")
        if match.group("quote") or (
            is_value(value, text, match.end())
            if match.group("is")
            else credential(value, loose=False)
        ):
            return True
    return False
