"""Secrets that memory never keeps: passwords, logins, codes, keys, tokens, card numbers,
links that give access, and what recovers an account (recovery phrases, security answers,
bank account numbers).

`looks_secret(text)` answers what kind of secret the text holds (a short phrase such as
"a password"), else None; `key_secret(key)` does the same for a memory key or topic, whose
words are joined by '-', '_' or '.'. Both err on the side of refusing: a fact dropped by
mistake is cheap (a person can Remember it), a password kept in memory and repeated in every
later turn is not. They still let ordinary facts pass ("my budget is 1500 EUR", "the meeting
is at 10:30", "my password manager is 1Password", a docs URL, a commit hash, a UUID, a phone
number, a hotel room, "I am allergic to peanuts", "I live in Berlin").

Our own rules read prose in English, German, French and Spanish (a password, wifi key or
code word given before or after its word, with or without "is", "X as my password", a
passphrase of plain words, a login with its password, one-time, recovery, gate and door
codes, PINs, payment cards with a valid Luhn digit, long random strings near or away from a
key word); domain/secret_links.py reads links, domain/secret_accounts.py recovery phrases,
security answers and bank accounts, and detect-secrets' plugins (domain/secret_detectors.py)
add the token formats of many vendors. The corpus that specifies them all is
tests/support/secret_corpus.py.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable

from agent_memory.domain.secret_accounts import (
    BANK_ACCOUNT,
    RECOVERY_PHRASE,
    SECURITY_ANSWER,
    account_secret,
)
from agent_memory.domain.secret_detectors import library_finding
from agent_memory.domain.secret_links import URL, access_link
from agent_memory.domain.secret_words import (
    BARE_VALUE,
    COMMON_USERS,
    FOR,
    IS,
    IS_WORD,
    NOT_A_VALUE,
    NOT_A_VALUE_BEFORE,
    NOW,
    OWNERS,
    UNITS,
    VALUE,
    WHO_USES,
    credential,
    is_value,
    key_like,
    windows,
    wordset,
)

__all__ = [
    "ACCESS_LINK",
    "API_TOKEN",
    "BANK_ACCOUNT",
    "CARD",
    "CLOUD_KEY",
    "LOGIN",
    "ONE_TIME_CODE",
    "PASSWORD",
    "PIN",
    "PRIVATE_KEY",
    "RANDOM_STRING",
    "RECOVERY_PHRASE",
    "SECURITY_ANSWER",
    "key_secret",
    "looks_secret",
]

PRIVATE_KEY = "a private key"
PASSWORD = "a password"
LOGIN = "a login with its password"
CLOUD_KEY = "a cloud access key"
API_TOKEN = "an API key or token"
ACCESS_LINK = "a link that gives access"
ONE_TIME_CODE = "a one-time or recovery code"
PIN = "a PIN or an access code"
CARD = "a payment card number"
RANDOM_STRING = "a long random string that looks like a credential"

_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b")
_GOOGLE_KEY = re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")
# Well-known token formats: OpenAI/Anthropic, Stripe, GitHub, GitLab, Slack, npm, PyPI, JWT.
_TOKEN_FORMATS = re.compile(
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
_BEARER = re.compile(r"\bbearer\s+[A-Za-z0-9._~+/-]{16,}", re.IGNORECASE)

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
_PASSWORD = re.compile(
    rf"\b{_PASSWORD_WORD}\b{_COMPOUND}{WHO_USES}{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE
)
# "password hunter2", "pass: hunter2": no "is", so the value must look like one.
_PASSWORD_BARE = re.compile(
    rf"\b(?:{_PASSWORD_WORD}\b{_COMPOUND}|pass(?=\s*[:=])){BARE_VALUE}", re.IGNORECASE
)
# "I changed my password to Blue42!".
_PASSWORD_TO = re.compile(
    rf"\b(?:changed|set|reset|updated|switched|changé|cambié|cambiado|geändert)\s+"
    rf"(?:\w+\s+){{0,3}}?{_PASSWORD_WORD}{FOR}\s+(?:to|in|en|auf|à|a)\s+{VALUE}",
    re.IGNORECASE,
)
# "I sign in with the password sunshine": after "with", any word that is not about it.
_PASSWORD_WITH = re.compile(
    rf"\b(?:with|using|mit|avec|con)\s+(?:(?:the|a|das|dem|le|la|el)\s+)?{_PASSWORD_WORD}\b"
    rf"{_COMPOUND}\s+{VALUE}",
    re.IGNORECASE,
)
# "password's hunter2": a contraction, so the value must look like one ("password's length").
_PASSWORD_S = re.compile(rf"\b{_PASSWORD_WORD}['\u2019]s\s+{VALUE}", re.IGNORECASE)
# "my password? it's hunter2".
_PASSWORD_ITS = re.compile(
    rf"\b{_PASSWORD_WORD}\b{_COMPOUND}\s*[?:,\u2013\u2014-]+\s*(?:it['\u2019]?s|it\s+is"
    rf"|that['\u2019]?s|c['\u2019]est|das\s+ist|es\s+ist|es)\s+{VALUE}",
    re.IGNORECASE,
)
# "wifi: LetMeIn2024": a network's name has no need of digits and letters together.
_NETWORK_BARE = re.compile(rf"\b(?:wi-?fi|wlan)\b\s*[:=]\s*{VALUE}", re.IGNORECASE)
_VALUE_FIRST = re.compile(
    r"(?P<start>^|[.!?:;,(]\s*|\n)?(?<![\w-])"
    r"(?:(?P<quote>[\"`«“„\u2018][^\"`»”\u2019\n]{2,60}[\"`»”\u2019])|(?P<value>[^\s\"'`«»“”„\u2018\u2019]{2,}))"
    rf"\s+{IS_WORD}\s+(?:{OWNERS}\s+|what\s+(?:i|we|you|he|she|they)\s+use\s+(?:as|for)\s+)?"
    r"(?:[\w-]+\s+){0,2}?"
    rf"(?:{_PASSWORD_WORD}|pin|pin-?code|passcode|geheimzahl)\b{_COMPOUND}",
    re.IGNORECASE,
)
# "I log in with Sunshine99 as my password", "Sonne99 als Passwort", "Sol99 como contraseña":
# found by "as", the value is the word before it.
_AS_PASSWORD = re.compile(
    rf"\s(?:as|als|comme|como)\s+(?:{OWNERS}\s+)?(?:(?:new|neues|nouveau|nueva)\s+)?"
    rf"{_PASSWORD_WORD}\b{_COMPOUND}",
    re.IGNORECASE,
)
# "I use LetMeIn2024 for the wifi": what opens a network, a device or an account.
_USE_FOR = re.compile(
    rf"\b(?:use|type|enter)\s+{VALUE}\s+(?:for|on|to\s+(?:log|sign|get)\s+in(?:to)?)\s+"
    r"(?:the\s+|my\s+|our\s+)?(?:wi-?fi|wlan|router|network|account|login|laptop|computer"
    r"|phone|e-?mail|mail|vpn|server|drive|safe)\b",
    re.IGNORECASE,
)
# A passphrase is plain words: "the passphrase is correct horse battery staple".
_PASSPHRASE = re.compile(
    rf"\b(?:pass\s*phrase|passphrase|phrase\s+(?:de\s+passe|secrète)|frase\s+de\s+contrase(?:ñ|n)a"
    rf"|passwortsatz){FOR}\s*{IS}\s*(?P<words>[^.!?;\n]+)",
    re.IGNORECASE,
)

# --- logins ---------------------------------------------------------------------------------

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
_LOGIN = re.compile(rf"\b{_LOGIN_WORD}\b{FOR}\s*{IS}\s*{_USER_PASS}", re.IGNORECASE)
# Without "is" (a key's words: "admin login root hunter2"), a space may part the two.
_LOGIN_BARE = re.compile(
    r"\b(?:logins?|log-ins?|logons?|sign-?ins?|creds|credentials?)\s+"
    + rf"(?!(?:{IS_WORD}|are|were|sind|sont|son)\b)"
    + _USER_PASS.replace(_SEPARATOR, rf"(?:{_SEPARATOR}|\s+)"),
    re.IGNORECASE,
)
_USER_THEN_PASS = re.compile(
    r"\buser(?:name)?\s*[:=]?\s*(?P<user>[^\s,;]{2,64})[,;]?\s+"
    rf"(?:pass(?:word)?|pw|pwd|kennwort|passwort)\s*[:=]?{VALUE}",
    re.IGNORECASE,
)
# "login for the router is admin and the pass is Tiger!88": a login word, then a password
# word in the same sentence ("pass" alone counts here, never elsewhere: a boarding pass).
_LOGIN_THEN_PASSWORD = re.compile(
    r"\b(?:logins?|log-ins?|sign-?ins?|accounts?|user(?:name)?|(?:be)?nutzer(?:name)?"
    r"|utilisateur|identifiant|usuario|zugang)\b[^.!?\n]{0,60}?\b(?:pass(?:word|wort)?|pw|pwd"
    rf"|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|clave|senha)\b(?:(?P<is>{FOR}\s*{IS})|\s*[:=]|\s)"
    rf"{VALUE}",
    re.IGNORECASE,
)
# "to log in to the router use admin / Tiger!88".
_LOG_IN_WITH_PAIR = re.compile(
    rf"\b(?:log(?:ged|s)?[\s-]*(?:in|into|on)|sign[\s-]*in)\b[^.!?\n]{{0,40}}?\b(?:use|with|using"
    rf"|as|type|enter)\s+{_USER_PASS}",
    re.IGNORECASE,
)
# "log into the router as admin with Tiger!88".
_LOG_IN_AS = re.compile(
    r"\blog(?:ged|s)?[\s-]*(?:in|into|on)\b[^.!?\n]{0,40}?\bas\s+(?P<user>[^\s,]{2,64})\s+"
    rf"(?:with|using)\s+(?:the\s+)?(?:pass(?:word)?\s+)?{VALUE}",
    re.IGNORECASE,
)

# --- codes and PINs -------------------------------------------------------------------------

# One-time, verification, recovery and backup codes; card security codes.
_OTP_WORD = (
    r"(?:(?:one[- ]time|otp|2fa|mfa|two[- ]factor|verification|security|recovery|backup"
    r"|authenticator|auth|authentication|login|sign[- ]in|reset|sms|totp|tan)"
    r"\s+(?:codes?|keys?|pins?|passwords?|tokens?)"
    r"|otp|totp|cvv2?|cvc2?|card\s+verification\s+(?:code|value)"
    r"|bestätigungscode|wiederherstellungscode|wiederherstellungsschlüssel|sicherheitscode"
    r"|einmalcode|einmalpasswort|backup-codes?|prüfnummer"
    r"|codes?\s+(?:de\s+)?(?:vérification|récupération|secours|sécurité|unique)"
    r"|mot\s+de\s+passe\s+à\s+usage\s+unique"
    r"|c[oó]digos?\s+(?:de\s+)?(?:verificaci[oó]n|recuperaci[oó]n|seguridad"
    r"|respaldo|un\s+solo\s+uso))"
)
# Door, gate, alarm, safe and phone-unlock codes; PINs.
_PIN_WORD = (
    r"(?:pin(?:\s*-?\s*(?:code|nummer|number))?|passcode|geheimzahl|code\s+pin|puk2?"
    r"|(?:door|gate|garage|alarm|safe|lock|keypad|entry|building|front[- ]door|access"
    r"|entrance|lockbox|key\s*box|unlock|padlock)\s+(?:codes?|combination|pin|pattern)"
    r"|(?:codes?|combination)\s+(?:for|to|of)\s+(?:open\s+|unlock\s+)?(?:the\s+|my\s+|our\s+)?"
    r"(?:front\s+|back\s+"
    r"|main\s+)?(?:door|gate|garage|alarm|safe|building|lock|lockbox|entrance|padlock)"
    r"|türcode|tür-code|zugangscode|alarmcode|torcode|tresorcode|schlüsselkasten-code"
    r"|entsperr(?:code|-?pin|muster)"
    r"|code\s+(?:für\s+(?:das|die|den)\s+|fürs\s+|zum\s+|zur\s+)(?:tor|tür|haus|haustür"
    r"|garage|alarmanlage|safe|tresor|eingang)"
    r"|digicode|code\s+(?:de\s+la\s+porte|d['\u2019]accès|d['\u2019]entrée|de\s+l['\u2019]alarme"
    r"|du\s+portail|de\s+la\s+porte\s+d['\u2019]entrée|du\s+coffre|du\s+garage"
    r"|de\s+l['\u2019]immeuble|de\s+déverrouillage)"
    r"|c[oó]digo\s+(?:de\s+(?:la\s+)?(?:puerta|acceso|entrada|alarma|portal|caja\s+fuerte"
    r"|desbloqueo)|del\s+(?:port[oó]n|portal|garaje|edificio|candado)))"
)
_CODE_VALUE = r"[*#]?(?<![\w-])(?P<value>[A-Za-z0-9][A-Za-z0-9 -]{1,40}?[A-Za-z0-9])(?![\w-])"


def _code_pattern(word: str) -> re.Pattern[str]:
    # With "is" a place may come between ("the PIN for my card is ..."); without, the code
    # follows its word at once ("PIN 4921", "OTP: 123456").
    return re.compile(
        rf"\b{word}\b(?:{FOR}\s*{IS}\s*{NOW}|\s*[:#]?\s*){_CODE_VALUE}", re.IGNORECASE
    )


_OTP = _code_pattern(_OTP_WORD)
_PIN = _code_pattern(_PIN_WORD)
# "the gate opens with 2580#", "das Tor öffnet mit 2580".
_OPENS_WITH = re.compile(
    r"\b(?:gate|door|garage|lock|safe|alarm|padlock|lockbox|tor|tür|tresor|porte|portail"
    r"|coffre|puerta|port[oó]n|portal|candado)\s+(?:opens?|unlocks?|disarms?|öffnet|s['\u2019]"
    r"ouvre|se\s+abre|abre)\s+(?:with|using|mit|avec|con)\s+(?:the\s+)?(?:code\s+)?" + _CODE_VALUE,
    re.IGNORECASE,
)
# "gate: 2580#": a door's name, a colon and digits only ("gate: B22" is a boarding gate).
_DOOR_COLON = re.compile(
    r"\b(?:gate|door|garage|alarm|safe|lockbox|tor|tür|porte|portail|puerta|port[oó]n)\s*[:=]"
    r"\s*[*#]?(?P<value>\d{3,8})#?(?![\w-])",
    re.IGNORECASE,
)

# --- cards ----------------------------------------------------------------------------------

# Payment cards: 13 to 19 digits, together or in groups (4-4-4-4, 4-6-5 for Amex).
_CARD = re.compile(
    r"(?<![\d+.,/:-])(?:\d{13,19}|\d{4}(?:[ -]\d{4}){2}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{4,5})"
    r"(?![\d.,/:-]\d)"
)
# A long number after these words is a reference, not a card (unless a card is named too).
_REFERENCE = re.compile(
    r"\b(?:order|invoice|tracking|reference|booking|ticket|shipment|parcel|customer|bestellung"
    r"|rechnung|sendung|commande|facture|pedido|factura|envío)\b",
    re.IGNORECASE,
)
_CARD_WORD = re.compile(
    r"\b(?:cards?|karte|carte|tarjeta|visa|mastercard|amex|maestro|cb)\b", re.IGNORECASE
)

# --- named keys and tokens ------------------------------------------------------------------

_NAMED_SECRET_WORD = (
    r"(?:api[\s_-]?keys?|access[\s_-]?keys?(?:[\s_-]?id)?|secret(?:[\s_-]?(?:access[\s_-]?)?key)?"
    r"|client[\s_-]?secret|private[\s_-]?key|auth(?:entication)?[\s_-]?token|access[\s_-]?token"
    r"|refresh[\s_-]?token|bearer[\s_-]?token|session[\s_-]?token|tokens?|credentials?"
    r"|apikey|api[\s_-]?schlüssel|geheimer\s+schlüssel|clé\s+(?:d['\u2019]\s*)?api|clé\s+secrète"
    r"|clave\s+(?:de\s+)?api|jeton|signing[\s_-]?key|webhook[\s_-]?secret)"
)
# Not after a colon: "arn:aws:secretsmanager:...:secret:name" names a secret, it is not one.
_NAMED_SECRET = re.compile(
    rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE
)
_NAMED_SECRET_BARE = re.compile(rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{BARE_VALUE}", re.IGNORECASE)
# "my OpenAI key is 9f8e7d6c": any key, when its value has digits and letters (never "the
# key is under the mat", "the key to success is ...").
_ANY_KEY = re.compile(rf"(?<!:)\bkeys?\b{FOR}\s*{IS}\s*{NOW}{VALUE}", re.IGNORECASE)

_CANDIDATE = re.compile(r"[A-Za-z0-9+=_-]{32,}")

# Word stems that each family of rules needs in the (lowercased) text before its patterns
# run: a substring test is ~100 times cheaper than the patterns, and most facts have none.
_PASSWORD_STEMS = wordset(
    """pass pw kennw mdp contrase clave senha phrase pin geheimzahl key schlüssel clé word
    wort mot palabra wifi wi-fi wlan"""
)
_LOGIN_STEMS = wordset(
    "log sign cred account zugang anmeld identif acceso user usuario nutzer utilisateur"
)
_LOGIN_PASSWORD_STEMS = wordset("pass pw kennw mot contrase clave senha")
_CODE_STEMS = wordset(
    """code key pin pass token otp cvv cvc verification schlüssel prüfnummer digo geheimzahl
    combination puk entsperr"""
)
_USE_STEMS = frozenset(("use ", "type ", "enter "))
_OPENS_STEMS = wordset("open unlock disarm öffnet ouvre abre")
_NAMED_STEMS = wordset("key secret token cred schlüssel clé clave jeton")
# Longer texts are read in windows around these words (every family's stems, and doors).
_RULE_WORDS = re.compile(
    "|".join(
        re.escape(stem)
        for stem in sorted(
            _PASSWORD_STEMS
            | _LOGIN_STEMS
            | _CODE_STEMS
            | _OPENS_STEMS
            | _NAMED_STEMS
            | _USE_STEMS
            | wordset("gate door garage alarm safe lockbox tor tür porte portail puerta port")
        )
    )
)
# The password rules start from one of these words (and "pass:").
_PASSWORD_HIT = re.compile(rf"\b{_PASSWORD_WORD}|\bpass\s*[:=]|\bwi-?fi|\bwlan")
_KEY_SEPARATORS = re.compile(r"[-_.]+")
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
    if _PRIVATE_KEY.search(text):
        return PRIVATE_KEY
    if _AWS_KEY_ID.search(text):
        return CLOUD_KEY
    if _GOOGLE_KEY.search(text) or _TOKEN_FORMATS.search(text) or _BEARER.search(text):
        return API_TOKEN
    found = library_finding(text)
    if found:
        return found
    if access_link(text):
        return ACCESS_LINK
    lowered = text.lower()
    found = account_secret(text, lowered)
    if found:
        return found
    if sum(ch.isdigit() for ch in text) >= 13 and any(_card(m, text) for m in _CARD.finditer(text)):
        return CARD
    return _phrased(text, lowered) or _random_string(text)


def key_secret(key: str, looks: Callable[[str], str | None] = looks_secret) -> str | None:
    """What kind of secret a memory key (or topic) holds, or None: the key as it is, its
    words ("admin-login-root-hunter2" reads "admin login root hunter2"), and a value-like
    word beside a secret's name in either order ("hunter2-password", "wifi-key-letmein24")."""
    words = _KEY_SEPARATORS.sub(" ", key).strip()
    return looks(key) or looks(words) or _named_in_key(words.lower().split())


def _named_in_key(words: list[str]) -> str | None:
    for position, word in enumerate(words):
        if word in _TECHNICAL or not credential(word, loose=False, minimum=5):
            continue
        near = words[max(0, position - 2) : position] + words[position + 1 : position + 3]
        if any(other in _KEY_SECRET_WORDS for other in near):
            return PASSWORD
    return None


def _has(lowered: str, stems: frozenset[str]) -> bool:
    return any(stem in lowered for stem in stems)


def _phrased(text: str, lowered: str) -> str | None:
    """Secrets said in words: logins, codes, PINs, passwords and named keys."""
    for window, window_lowered in windows(text, lowered, _RULE_WORDS):
        found = _phrased_in(window, window_lowered)
        if found:
            return found
    return None


def _phrased_in(text: str, lowered: str) -> str | None:
    if _has(lowered, _LOGIN_STEMS) and _login(text, lowered):
        return LOGIN
    if _has(lowered, _CODE_STEMS):
        if any(_code(m) for m in _OTP.finditer(text)):
            return ONE_TIME_CODE
        if any(_code(m) for m in _PIN.finditer(text)):
            return PIN
    if _has(lowered, _OPENS_STEMS) and any(_code(m) for m in _OPENS_WITH.finditer(text)):
        return PIN
    if ":" in text and _DOOR_COLON.search(text):
        return PIN
    if _has(lowered, _USE_STEMS) and any(
        credential(match.group("value"), loose=False) for match in _USE_FOR.finditer(text)
    ):
        return PASSWORD
    if _has(lowered, _PASSWORD_STEMS) and any(
        _password(window, window_lowered)
        for window, window_lowered in windows(text, lowered, _PASSWORD_HIT, before=100)
    ):
        return PASSWORD
    if _has(lowered, _NAMED_STEMS) and _named_secret(text):
        return API_TOKEN
    return None


def _named_secret(text: str) -> bool:
    for match in _NAMED_SECRET.finditer(text):
        if key_like(match.group("value")) or match.group("quote"):
            return True
    if any(_key_value(match.group("value")) for match in _ANY_KEY.finditer(text)):
        return True
    return any(
        credential(match.group("value"), loose=False, minimum=8)
        for match in _NAMED_SECRET_BARE.finditer(text)
    )


def _key_value(value: str) -> bool:
    """The value of a key of any name: digits with letters, or long and not a word."""
    value = value.strip(".,;!?)")
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    return len(value) >= 8 and ((has_digit and has_alpha) or (len(value) >= 20 and has_digit))


def _password(text: str, lowered: str) -> bool:
    for match in _PASSWORD.finditer(text):
        if match.group("quote") or is_value(match.group("value"), text, match.end()):
            return True
    for match in _PASSWORD_WITH.finditer(text):
        if match.group("quote") or is_value(match.group("value"), text, match.end()):
            return True
    for match in _PASSWORD_ITS.finditer(text):
        if is_value(match.group("value"), text, match.end()):
            return True
    strict = itertools.chain(_PASSWORD_BARE.finditer(text), _PASSWORD_TO.finditer(text))
    if "'s" in lowered or "\u2019s" in lowered:
        strict = itertools.chain(strict, _PASSWORD_S.finditer(text))
    if any(credential(match.group("value"), loose=False) for match in strict):
        return True
    for match in _NETWORK_BARE.finditer(text) if ":" in text or "=" in text else ():
        value = match.group("value")
        if credential(value, loose=False) and any(ch.isdigit() for ch in value):
            return True
    for match in _PASSPHRASE.finditer(text):
        words = [w.lower().strip(",\"'`") for w in match.group("words").split()]
        if len([w for w in words if w and w not in NOT_A_VALUE]) >= 2:
            return True
    for match in _VALUE_FIRST.finditer(text):
        if match.group("quote"):
            return True
        # At the start of a sentence any word counts: "Sommer ist mein Passwort".
        if _said_first(match.group("value"), loose=match.group("start") is not None):
            return True
    for match in _AS_PASSWORD.finditer(text):
        before = text[: match.start()].rsplit(None, 1)
        if before and _said_first(before[-1].strip("\"'`«»“”„\u2018\u2019"), loose=True):
            return True
    return False


def _said_first(value: str, *, loose: bool) -> bool:
    """A value said before its word ("hunter2 is my password", "X as my password")."""
    value = value.strip(".,;!?")
    if value.lower() in NOT_A_VALUE_BEFORE or value.lower() in NOT_A_VALUE:
        return False
    return credential(value, loose=loose)


def _login(text: str, lowered: str) -> bool:
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
    if not _has(lowered, _LOGIN_PASSWORD_STEMS):
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


def _code(match: re.Match[str]) -> bool:
    """A code after its word: with a digit ("4711", "8f3k-29dj") or in capital groups."""
    value = match.group("value")
    first = value.split()[0]
    if first.lower() in NOT_A_VALUE:
        return False
    digits = sum(ch.isdigit() for ch in value)
    if digits >= 3 or (digits and any(ch.isalpha() for ch in first)):
        return not _counts_something(value)
    return bool(re.fullmatch(r"[A-Z0-9]{4,}(?:-[A-Z0-9]{4,})+", first))


def _counts_something(value: str) -> bool:
    """ "4 digits", "6 characters long": the length of a code, not the code."""
    words = value.lower().split()
    return len(words) >= 2 and words[0].isdigit() and words[1] in UNITS


def _card(match: re.Match[str], text: str) -> bool:
    before = text[max(0, match.start() - 40) : match.start()]
    if _REFERENCE.search(before) and not _CARD_WORD.search(before):
        return False
    return _luhn_card(match.group())


def _luhn_card(candidate: str) -> bool:
    """13 to 19 digits of a card network (2-6 first) whose Luhn check digit is right."""
    digits = [int(ch) for ch in candidate if ch.isdigit()]
    if not 13 <= len(digits) <= 19 or digits[0] not in (2, 3, 4, 5, 6):
        return False
    if len(set(digits)) == 1:
        return False  # 4444 4444 4444 4444 is a placeholder
    total = 0
    for position, digit in enumerate(reversed(digits)):
        doubled = digit * 2 if position % 2 else digit
        total += doubled - 9 if doubled > 9 else doubled
    return total % 10 == 0


def _random_string(text: str) -> str | None:
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
