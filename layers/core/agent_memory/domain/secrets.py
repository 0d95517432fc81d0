"""Secrets that memory never keeps: passwords, logins, codes, keys, tokens, card numbers,
links that give access, and what recovers an account.

`looks_secret(text)` names the kind of secret a text holds ("a password"), else None;
`key_secret(key)` does the same for a memory key or topic. Both err on the side of refusing:
a fact dropped by mistake is cheap to Remember again, a password repeated in every later turn
is not. Ordinary facts pass ("my password manager is 1Password", a commit hash, a phone
number). This module reads passwords, wifi keys and logins ("admin login is root / hunter2",
"log into the router as admin with Tiger!88") in English, German, French and Spanish;
secret_codes, secret_keys (with detect-secrets' plugins) and secret_accounts read the other
kinds. The corpus that specifies them all is tests/support/secret_corpus.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agent_memory.domain.secret_accounts import account_secret
from agent_memory.domain.secret_codes import CODE_RULES, CODE_STEMS, OPENS_STEMS, card_secret
from agent_memory.domain.secret_keys import (
    FORMAT_RULES,
    NAMED_RULES,
    NAMED_STEMS,
    access_link,
    library_finding,
    random_string,
)
from agent_memory.domain.secret_phrasings import phrased_secret
from agent_memory.domain.secret_words import (
    BARE_VALUE,
    COMMON_USERS,
    FOR,
    IS,
    IS_WORD,
    LOGIN,
    NOT_A_VALUE,
    NOT_A_VALUE_BEFORE,
    NOW,
    OWNERS,
    PASSWORD,
    VALUE,
    WHO_USES,
    Rule,
    credential,
    first_kind,
    has_stem,
    lazy,
    stated,
    strict,
    valued,
    windows,
    wordset,
)

# --- logins: a user name with its password ---------------------------------------------------

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
_LOGIN = lazy(rf"\b{_LOGIN_WORD}\b{FOR}\s*{IS}\s*{_USER_PASS}", re.IGNORECASE)
# Without "is" (a key's words: "admin login root hunter2"), a space may part the two.
_LOGIN_BARE = lazy(
    r"\b(?:logins?|log-ins?|logons?|sign-?ins?|creds|credentials?)\s+"
    + rf"(?!(?:{IS_WORD}|are|were|sind|sont|son)\b)"
    + _USER_PASS.replace(_SEPARATOR, rf"(?:{_SEPARATOR}|\s+)"),
    re.IGNORECASE,
)
_USER_THEN_PASS = lazy(
    r"\buser(?:name)?\s*[:=]?\s*(?P<user>[^\s,;]{2,64})[,;]?\s+"
    rf"(?:pass(?:word)?|pw|pwd|kennwort|passwort)\s*[:=]?{VALUE}",
    re.IGNORECASE,
)
# "login for the router is admin and the pass is Tiger!88": a login word, then a password
# word in the same sentence ("pass" alone counts here, never elsewhere: a boarding pass).
_LOGIN_THEN_PASSWORD = lazy(
    r"\b(?:logins?|log-ins?|sign-?ins?|accounts?|user(?:name)?|(?:be)?nutzer(?:name)?"
    r"|utilisateur|identifiant|usuario|zugang)\b[^.!?\n]{0,60}?\b(?:pass(?:word|wort)?|pw|pwd"
    rf"|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|clave|senha)\b(?:(?P<is>{FOR}\s*{IS})|\s*[:=]|\s)"
    rf"{VALUE}",
    re.IGNORECASE,
)
# "to log in to the router use admin / Tiger!88".
_LOG_IN_WITH_PAIR = lazy(
    rf"\b(?:log(?:ged|s)?[\s-]*(?:in|into|on)|sign[\s-]*in)\b[^.!?\n]{{0,40}}?\b(?:use|with|using"
    rf"|as|type|enter)\s+{_USER_PASS}",
    re.IGNORECASE,
)
# "log into the router as admin with Tiger!88".
_LOG_IN_AS = lazy(
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


# --- passwords, wifi keys and code words ----------------------------------------------------

_PASSWORD_WORD = (
    r"(?:pass(?:word|wort|phrase|code|wd)s?|pwd|pw|kennw(?:ort|örter)|passphrase"
    r"|mot\s+de\s+passe|mots\s+de\s+passe|mdp|phrase\s+(?:de\s+passe|secrète)"
    r"|contrase(?:ñ|n)as?|clave\s+(?:de\s+acceso|secreta)|senha|frase\s+de\s+contrase(?:ñ|n)a"
    # The key of a wifi network is its password.
    r"|(?:wi-?fi|wlan|wpa2?|wep|network|netzwerk|router)[\s-]*(?:key|schlüssel)"
    r"|(?:wi-?fi|wlan|router)[\s-]*(?:pass|code)|c(?:ode|ódigo|odigo)\s+(?:du\s+|del\s+)?wi-?fi"
    r"|cl[ée]\s+(?:du\s+|de\s+)?(?:wi-?fi|wpa|r[ée]seau)"
    r"|clave\s+(?:del\s+|de\s+la\s+)?(?:wi-?fi|wpa|red)"
    # A code word, safe word or secret word is a password said aloud.
    r"|code[\s-]?words?|secret\s+words?|safe[\s-]?words?|codewort|losungswort"
    r"|mot\s+(?:de\s+code|secret)|palabra\s+(?:clave|secreta))"
)
# Nouns that make "password" part of another thing: "my password manager is 1Password".
_COMPOUND = (
    r"(?!(?:\s*-\s*|\s+)(?:managers?|vaults?|safes?|polic(?:y|ies)|resets?|fields?|hints?|rules?"
    r"|requirements?|strength|changes?|expiry|expiration|prompts?|generators?|lists?|files?"
    r"|protection|protected|recovery|reuse|hash(?:es)?|length|complexity|forms?|pages?"
    r"|screens?|dialog|box|entry|input|menu|settings?|verwaltung|manager|gestionnaire"
    r"|gestor|less|authentication|auth|logins?|access|based|only|games?)\b)"
)
_PASSWORD = lazy(
    rf"\b{_PASSWORD_WORD}\b{_COMPOUND}{WHO_USES}{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE
)
# "password hunter2", "pass: hunter2": no "is", so the value must look like one.
_PASSWORD_BARE = lazy(
    rf"\b(?:{_PASSWORD_WORD}\b{_COMPOUND}|pass(?=\s*[:=])){BARE_VALUE}", re.IGNORECASE
)
# "I changed my password to Blue42!".
_PASSWORD_TO = lazy(
    rf"\b(?:changed|set|reset|updated|switched|changé|cambié|cambiado|geändert)\s+"
    rf"(?:\w+\s+){{0,3}}?{_PASSWORD_WORD}{FOR}\s+(?:to|in|en|auf|à|a)\s+{VALUE}",
    re.IGNORECASE,
)
# "I sign in with the password sunshine": after "with", any word that is not about it.
_PASSWORD_WITH = lazy(
    rf"\b(?:with|using|mit|avec|con)\s+(?:(?:the|a|das|dem|le|la|el)\s+)?{_PASSWORD_WORD}\b"
    rf"{_COMPOUND}\s+{VALUE}",
    re.IGNORECASE,
)
# "password's hunter2": a contraction, so the value must look like one ("password's length").
_PASSWORD_S = lazy(rf"\b{_PASSWORD_WORD}['\u2019]s\s+{VALUE}", re.IGNORECASE)
# "my password? it's hunter2".
_PASSWORD_ITS = lazy(
    rf"\b{_PASSWORD_WORD}\b{_COMPOUND}\s*[?:,\u2013\u2014-]+\s*(?:it['\u2019]?s|it\s+is"
    rf"|that['\u2019]?s|c['\u2019]est|das\s+ist|es\s+ist|es)\s+{VALUE}",
    re.IGNORECASE,
)
# "wifi: LetMeIn2024": a network's name has no need of digits and letters together.
_NETWORK_BARE = lazy(rf"\b(?:wi-?fi|wlan)\b\s*[:=]\s*{VALUE}", re.IGNORECASE)
_VALUE_FIRST = lazy(
    r"(?P<start>^|[.!?:;,(]\s*|\n)?(?<![\w-])"
    r"(?:(?P<quote>[\"`«“„\u2018][^\"`»”\u2019\n]{2,60}[\"`»”\u2019])|(?P<value>[^\s\"'`«»“”„\u2018\u2019]{2,}))"
    rf"\s+{IS_WORD}\s+(?:{OWNERS}\s+|what\s+(?:i|we|you|he|she|they)\s+use\s+(?:as|for)\s+)?"
    r"(?:[\w-]+\s+){0,2}?"
    rf"(?:{_PASSWORD_WORD}|pin|pin-?code|passcode|geheimzahl)\b{_COMPOUND}",
    re.IGNORECASE,
)
# "I log in with Sunshine99 as my password", "Sonne99 als Passwort", "Sol99 como contraseña":
# found by "as", the value is the word before it.
_AS_PASSWORD = lazy(
    rf"\s(?:as|als|comme|como)\s+(?:{OWNERS}\s+)?(?:(?:new|neues|nouveau|nueva)\s+)?"
    rf"{_PASSWORD_WORD}\b{_COMPOUND}",
    re.IGNORECASE,
)
# "I use LetMeIn2024 for the wifi": what opens a network, a device or an account.
_USE_FOR = lazy(
    rf"\b(?:use|type|enter)\s+{VALUE}\s+(?:for|on|to\s+(?:log|sign|get)\s+in(?:to)?)\s+"
    r"(?:the\s+|my\s+|our\s+)?(?:wi-?fi|wlan|router|network|account|login|laptop|computer"
    r"|phone|e-?mail|mail|vpn|server|drive|safe)\b",
    re.IGNORECASE,
)
# A passphrase is plain words: "the passphrase is correct horse battery staple".
_PASSPHRASE = lazy(
    rf"\b(?:pass\s*phrase|passphrase|phrase\s+(?:de\s+passe|secrète)|frase\s+de\s+contrase(?:ñ|n)a"
    rf"|passwortsatz){FOR}\s*{IS}\s*(?P<words>[^.!?;\n]+)",
    re.IGNORECASE,
)


# The stems the password rules need (as a `Rule` needs them).
_PASSWORD_STEMS = wordset(
    """pass pw kennw mdp contrase clave senha phrase pin geheimzahl key schlüssel clé word
    wort mot palabra wifi wi-fi wlan"""
)
_USE_STEMS = frozenset(("use ", "type ", "enter "))
# Longer texts are read in windows around these words (every family's stems, and doors).
_RULE_WORDS = lazy(
    "|".join(
        re.escape(stem)
        for stem in sorted(
            _PASSWORD_STEMS
            | LOGIN_STEMS
            | CODE_STEMS
            | OPENS_STEMS
            | NAMED_STEMS
            | _USE_STEMS
            | wordset("gate door garage alarm safe lockbox tor tür porte portail puerta port")
        )
    )
)
# The password rules start from one of these words (and "pass:").
_PASSWORD_HIT = lazy(rf"\b{_PASSWORD_WORD}|\bpass\s*[:=]|\bwi-?fi|\bwlan")
_KEY_SEPARATORS = lazy(r"[-_.]+")
# Words of a key that name a secret, and technical words beside them that are not one.
_KEY_SECRET_WORDS = wordset(
    """password passwords passwort kennwort pass pw pwd passcode passphrase pin code key token
    secret login wifi wlan wpa mdp clave contrasena"""
)
_TECHNICAL = wordset(
    """oauth1 oauth2 sha1 sha256 sha384 sha512 md5 ipv4 ipv6 http2 http3 web3 wpa2 wpa3 tls12
    tls13 aes128 aes256 utf8 utf16 base32 base64 x509 pkcs8 pkcs12 ed25519 rsa2048 rsa4096
    argon2 bcrypt2 pbkdf2"""
)


def looks_secret(text: str) -> str | None:
    """What kind of secret `text` holds (a short phrase for a rejection reason), or None.

    The phrase names the kind only, never the secret."""
    lowered = text.lower()
    return (
        first_kind(FORMAT_RULES, text, lowered)
        or library_finding(text)
        or access_link(text)
        or account_secret(text, lowered)
        or card_secret(text)
        or _phrased(text, lowered)
        or phrased_secret(text, lowered)
        or random_string(text)
    )


def key_secret(key: str, looks: Callable[[str], str | None] = looks_secret) -> str | None:
    """What kind of secret a memory key (or topic) holds, or None: the key as it is, its
    words ("admin-login-root-hunter2" reads "admin login root hunter2"), and a value-like
    word beside a secret's name in either order ("hunter2-password", "wifi-key-letmein24")."""
    words = _KEY_SEPARATORS().sub(" ", key).strip()
    return looks(key) or looks(words) or _named_in_key(words.lower().split())


def _named_in_key(words: list[str]) -> str | None:
    for position, word in enumerate(words):
        if word in _TECHNICAL or not credential(word, loose=False, minimum=5):
            continue
        near = words[max(0, position - 2) : position] + words[position + 1 : position + 3]
        if any(other in _KEY_SECRET_WORDS for other in near):
            return PASSWORD
    return None


def _phrased(text: str, lowered: str) -> str | None:
    """Secrets said in words: logins, codes, PINs, passwords and named keys."""
    for window, window_lowered in windows(text, lowered, _RULE_WORDS):
        found = _phrased_in(window, window_lowered)
        if found:
            return found
    return None


def _phrased_in(text: str, lowered: str) -> str | None:
    found = first_kind(_PHRASED_RULES, text, lowered)
    if found:
        return found
    if has_stem(lowered, _PASSWORD_STEMS) and any(
        first_kind(_PASSWORD_RULES, window, window_lowered)
        for window, window_lowered in windows(text, lowered, _PASSWORD_HIT, before=100)
    ):
        return PASSWORD
    return first_kind(NAMED_RULES, text, lowered)


def _network_key(match: re.Match[str], text: str) -> bool:
    """A network's key: a name has no need of digits and letters together."""
    return strict(match, text) and any(ch.isdigit() for ch in match.group("value"))


def _passphrase(match: re.Match[str], _text: str) -> bool:
    words = [w.lower().strip(",\"'`") for w in match.group("words").split()]
    return len([w for w in words if w and w not in NOT_A_VALUE]) >= 2


def _value_first(match: re.Match[str], _text: str) -> bool:
    """ "hunter2 is my password": at the start of a sentence any word counts ("Sommer ist
    mein Passwort")."""
    return bool(match.group("quote")) or _said_first(
        match.group("value"), loose=match.group("start") is not None
    )


def _as_password(match: re.Match[str], text: str) -> bool:
    """ "X as my password": the value is the word before "as"."""
    before = text[: match.start()].rsplit(None, 1)
    return bool(before) and _said_first(before[-1].strip("\"'`«»“”„\u2018\u2019"), loose=True)


def _said_first(value: str, *, loose: bool) -> bool:
    """A value said before its word ("hunter2 is my password", "X as my password")."""
    value = value.strip(".,;!?")
    if value.lower() in NOT_A_VALUE_BEFORE or value.lower() in NOT_A_VALUE:
        return False
    return credential(value, loose=loose)


_PHRASED_RULES = (*LOGIN_RULES, *CODE_RULES, Rule(PASSWORD, _USE_FOR, strict, (_USE_STEMS,)))
# The password rules: a value after the password's word ("password is X", "with the
# password X", "X? it's Y"); without "is", where the value must look like one; a passphrase;
# a value said before its word ("hunter2 is my password", "X as my password").
_PASSWORD_RULES = (
    Rule(PASSWORD, _PASSWORD, stated),
    Rule(PASSWORD, _PASSWORD_WITH, stated),
    Rule(PASSWORD, _PASSWORD_ITS, valued),
    Rule(PASSWORD, _PASSWORD_BARE, strict),
    Rule(PASSWORD, _PASSWORD_TO, strict),
    Rule(PASSWORD, _PASSWORD_S, strict, (frozenset(("'s", "\u2019s")),)),
    Rule(PASSWORD, _NETWORK_BARE, _network_key, (frozenset(":="),)),
    Rule(PASSWORD, _PASSPHRASE, _passphrase),
    Rule(PASSWORD, _VALUE_FIRST, _value_first),
    Rule(PASSWORD, _AS_PASSWORD, _as_password),
)
