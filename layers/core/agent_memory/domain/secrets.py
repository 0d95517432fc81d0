"""Secrets that memory never keeps: passwords, logins, codes, keys, tokens, card numbers and
links that give access.

`looks_secret(text)` answers what kind of secret the text holds (a short phrase such as
"a password"), else None; `key_secret(key)` does the same for a memory key, whose words are
joined by '-', '_' or '.'. Both err on the side of refusing: a fact dropped by mistake is
cheap (a person can Remember it), a password kept in memory and repeated in every later turn
is not. They still let ordinary facts pass ("my budget is 1500 EUR", "the meeting is at
10:30", "my password manager is 1Password", a docs URL, a commit hash, a UUID, a phone
number, a hotel room).

Our own rules read prose in English, German, French and Spanish (a password given before or
after its word, with or without "is", a passphrase of plain words, a login with its password,
one-time, recovery and door codes, PINs, payment cards with a valid Luhn digit, URLs and
connection strings with credentials, long random strings near or away from a key word);
detect-secrets' plugins (domain/secret_detectors.py) add the token formats of many vendors.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from urllib.parse import parse_qsl, urlsplit

from agent_memory.domain.secret_detectors import library_finding


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


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

# --- words ----------------------------------------------------------------------------------

# "is" in the four languages, and the signs that assign a value.
_IS = (
    r"(?:is|was|are|were|equals|ist|war|lautet|sind|lauten|est|était|sont|es|era|son|é|è"
    r"|:|=|->|=>)"
)
# "is" as a word, for a value given before its name ("hunter2 is my password").
_IS_WORD = r"(?:is|was|ist|war|est|était|es|era|é|è)"
# "is now ...": the value comes after these.
_NOW = r"(?:(?:now|still|currently|jetzt|nun|maintenant|désormais|ahora|todavía)\s+)?"
# A place or purpose between the word and "is": "the password for the staging db is ...".
_FOR = (
    r"(?:\s+(?:for|of|to|on|at|für|zum|zur|vom|von|pour|du|de|des|de\s+la|para|del|de\s+mi)"
    r"\s+[\w .@'\u2019-]{1,40}?)?"
)
# An optional opening quote: a quoted value is a value whatever its words.
# A value never starts like a variable, a call or a list ("$TOKEN", "(default", "[...]").
_VALUE = r"\s*(?P<quote>[\"'`«“„\u2018]?)(?P<value>(?![$({\[<])[^\s\"'`«»“”„\u2018\u2019]{2,})"
# The same without "is": after a space or a colon, never glued on ("token-based").
_BARE_VALUE = rf"(?:\s*[:=]\s*|\s+)(?!-){_VALUE}"

_PASSWORD_WORD = (
    r"(?:pass(?:word|wort|phrase|code|wd)s?|pwd|pw|kennw(?:ort|örter)|passphrase"
    r"|mot\s+de\s+passe|mots\s+de\s+passe|mdp|phrase\s+(?:de\s+passe|secrète)"
    r"|contrase(?:ñ|n)as?|clave\s+(?:de\s+acceso|secreta)|senha|frase\s+de\s+contrase(?:ñ|n)a)"
)
# Nouns that make "password" part of another thing: "my password manager is 1Password".
_COMPOUND = (
    r"(?!(?:\s*-\s*|\s+)(?:managers?|vaults?|safes?|polic(?:y|ies)|resets?|fields?|hints?|rules?"
    r"|requirements?|strength|changes?|expiry|expiration|prompts?|generators?|lists?|files?"
    r"|protection|protected|recovery|reuse|hash(?:es)?|length|complexity|forms?|pages?"
    r"|screens?|dialog|box|entry|input|menu|settings?|verwaltung|manager|gestionnaire"
    r"|gestor|less)\b)"
)
_PASSWORD = re.compile(
    rf"\b{_PASSWORD_WORD}\b{_COMPOUND}{_FOR}\s*{_IS}\s*{_NOW}{_VALUE}", re.IGNORECASE
)
# "password hunter2", "pass: hunter2": no "is", so the value must look like one.
_PASSWORD_BARE = re.compile(
    rf"\b(?:{_PASSWORD_WORD}\b{_COMPOUND}|pass(?=\s*[:=])){_BARE_VALUE}", re.IGNORECASE
)
# "I changed my password to Blue42!".
_PASSWORD_TO = re.compile(
    rf"\b(?:changed|set|reset|updated|switched|changé|cambié|cambiado|geändert)\s+"
    rf"(?:\w+\s+){{0,3}}?{_PASSWORD_WORD}{_FOR}\s+(?:to|in|en|auf|à|a)\s+{_VALUE}",
    re.IGNORECASE,
)
# "hunter2 is my password", "Sommer2024 ist mein Passwort", "gato2020 es mi contraseña".
_OWNERS = (
    r"(?:my|the|our|your|his|her|their|mein|meine|unser|unsere|dein|deine|das|die|der|sein"
    r"|seine|ihr|ihre|mon|ma|notre|votre|ton|ta|le|la|son|sa|mi|tu|su|el|nuestra|nuestro)"
)
_VALUE_FIRST = re.compile(
    r"(?P<start>^|[.!?:;,(]\s*|\n)?(?<![\w-])"
    r"(?:(?P<quote>[\"`«“„\u2018][^\"`»”\u2019\n]{2,60}[\"`»”\u2019])|(?P<value>[^\s\"'`«»“”„\u2018\u2019]{2,}))"
    rf"\s+{_IS_WORD}\s+(?:{_OWNERS}\s+)?(?:[\w-]+\s+){{0,2}}?"
    rf"(?:{_PASSWORD_WORD}|pin|pin-?code|passcode|geheimzahl)\b{_COMPOUND}",
    re.IGNORECASE,
)
# A passphrase is plain words: "the passphrase is correct horse battery staple".
_PASSPHRASE = re.compile(
    rf"\b(?:pass\s*phrase|passphrase|phrase\s+(?:de\s+passe|secrète)|frase\s+de\s+contrase(?:ñ|n)a"
    rf"|passwortsatz){_FOR}\s*{_IS}\s*(?P<words>[^.!?;\n]+)",
    re.IGNORECASE,
)

# Words that follow "password is" in sentences about a password rather than giving it.
_NOT_A_VALUE = _wordset(
    """required needed necessary wrong incorrect invalid expired missing empty blank too not
    the a an my your their our his her its stored saved kept set changed reset rotated managed
    weak strong secure long short case-sensitive different same ok okay fine correct protected
    hashed encrypted in on at of for by with from via into being still now also always never
    only what which whatever something anything nothing here there below above attached
    visible hidden shown sent printed written known unknown lost forgotten easy hard simple
    complicated complex good bad great terrible awful new old current this that these those
    it shared private personal optional mandatory generated random unique temporary repeated
    compromised leaked exposed reused used emailed texted displayed masked salted checked
    verified validated accepted rejected ignored cached logged copied pasted typed entered
    requested updated deleted removed revoked disabled enabled locked blocked
    erforderlich nötig notwendig falsch ungültig abgelaufen gespeichert geändert zu nicht
    kein keine ein eine der die das dem den mein meine im auf sicher stark schwach neu alt
    gleich lang kurz requis requise nécessaire faux fausse incorrect expiré expirée
    enregistré enregistrée changé changée trop pas le la les un une mon ma dans sur sécurisé
    fort forte faible nouveau nouvelle même long longue court courte requerido requerida
    necesaria necesario incorrecto incorrecta caducado caducada guardado guardada cambiado
    cambiada demasiado no el los las una mi en sobre segura seguro fuerte débil nueva nuevo
    igual larga largo corta corto"""
)
# "The password is 12 characters long": a number of something is not the value.
_UNITS = _wordset(
    """characters character chars letters digits symbols long days weeks months years hours
    minutes old times zeichen stellen tage caractères chiffres jours caracteres dígitos días"""
)
# Words that stand in front of "is my password" without being it: "What is my password?".
_NOT_A_VALUE_BEFORE = _wordset(
    """what which who where how why when that this it here there mine yours ours one so then
    also and or but name number date word same was wie was welches das dies es hier da
    quel quelle quoi ce cela ça qui où cuál cuáles qué eso esto esta este aquí ahí"""
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
_LOGIN = re.compile(rf"\b{_LOGIN_WORD}\b{_FOR}\s*{_IS}\s*{_USER_PASS}", re.IGNORECASE)
# Without "is" (a key's words: "admin login root hunter2"), a space may part the two.
_LOGIN_BARE = re.compile(
    r"\b(?:logins?|log-ins?|logons?|sign-?ins?|creds|credentials?)\s+"
    + rf"(?!(?:{_IS_WORD}|are|were|sind|sont|son)\b)"
    + _USER_PASS.replace(_SEPARATOR, rf"(?:{_SEPARATOR}|\s+)"),
    re.IGNORECASE,
)
_USER_THEN_PASS = re.compile(
    r"\buser(?:name)?\s*[:=]?\s*(?P<user>[^\s,;]{2,64})[,;]?\s+"
    rf"(?:pass(?:word)?|pw|pwd|kennwort|passwort)\s*[:=]?{_VALUE}",
    re.IGNORECASE,
)
# Accounts whose name says little; with one of these, any password after it counts.
_COMMON_USERS = _wordset(
    "root admin administrator user sa postgres ubuntu pi guest test ec2-user oracle mysql"
)
# "root:hunter2@db.example.com", without a scheme.
_USER_PASS_HOST = re.compile(
    r"(?<![\w/])(?P<user>[\w.+-]{1,64}):(?P<value>[^\s@/:]{3,})@[A-Za-z0-9-]+"
    r"(?:\.[A-Za-z0-9-]+)+"
)
# "mailto:ana@example.com", "Email:ana@example.com": an address, not user:password@host.
_ADDRESS_LABELS = _wordset("mailto sip sips xmpp im email e-mail mail contact to from cc bcc")

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
# Door, gate, alarm and safe codes; PINs.
_PIN_WORD = (
    r"(?:pin(?:\s*-?\s*(?:code|nummer|number))?|passcode|geheimzahl|code\s+pin"
    r"|(?:door|gate|garage|alarm|safe|lock|keypad|entry|building|front[- ]door|access"
    r"|entrance|lockbox|key\s*box)\s+(?:codes?|combination|pin)"
    r"|codes?\s+(?:for|to|of)\s+(?:the\s+)?(?:front\s+|back\s+|main\s+)?(?:door|gate|garage"
    r"|alarm|safe|building|lock|lockbox|entrance)"
    r"|türcode|tür-code|zugangscode|alarmcode|torcode|tresorcode|schlüsselkasten-code"
    r"|digicode|code\s+(?:de\s+la\s+porte|d['\u2019]accès|d['\u2019]entrée|de\s+l['\u2019]alarme|du\s+portail"
    r"|de\s+la\s+porte\s+d['\u2019]entrée|du\s+coffre)"
    r"|c[oó]digo\s+(?:de\s+(?:la\s+)?(?:puerta|acceso|entrada|alarma|portal|caja\s+fuerte)))"
)
_CODE_VALUE = r"#?(?<![\w-])(?P<value>[A-Za-z0-9][A-Za-z0-9 -]{1,40}?[A-Za-z0-9])(?![\w-])"


def _code_pattern(word: str) -> re.Pattern[str]:
    # With "is" a place may come between ("the PIN for my card is ..."); without, the code
    # follows its word at once ("PIN 4921", "OTP: 123456").
    return re.compile(
        rf"\b{word}\b(?:{_FOR}\s*{_IS}\s*{_NOW}|\s*[:#]?\s*){_CODE_VALUE}", re.IGNORECASE
    )


_OTP = _code_pattern(_OTP_WORD)
_PIN = _code_pattern(_PIN_WORD)

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

_NAMED_SECRET_WORD = (
    r"(?:api[\s_-]?keys?|access[\s_-]?keys?(?:[\s_-]?id)?|secret(?:[\s_-]?(?:access[\s_-]?)?key)?"
    r"|client[\s_-]?secret|private[\s_-]?key|auth(?:entication)?[\s_-]?token|access[\s_-]?token"
    r"|refresh[\s_-]?token|bearer[\s_-]?token|session[\s_-]?token|tokens?|credentials?"
    r"|apikey|api[\s_-]?schlüssel|geheimer\s+schlüssel|clé\s+(?:d['\u2019]\s*)?api|clé\s+secrète"
    r"|clave\s+(?:de\s+)?api|jeton|signing[\s_-]?key|webhook[\s_-]?secret)"
)
# Not after a colon: "arn:aws:secretsmanager:...:secret:name" names a secret, it is not one.
_NAMED_SECRET = re.compile(
    rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{_FOR}\s*{_IS}\s*{_NOW}{_VALUE}", re.IGNORECASE
)
_NAMED_SECRET_BARE = re.compile(rf"(?<!:)\b{_NAMED_SECRET_WORD}\b{_BARE_VALUE}", re.IGNORECASE)

# Any scheme: https, ftp, postgres, mysql, mongodb+srv, redis, amqp, ...
_URL = re.compile(r"\b[a-z][a-z0-9+.-]{1,30}://[^\s<>\"'`)\]]+", re.IGNORECASE)
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

# Word stems that each family of rules needs in the (lowercased) text before its patterns
# run: a substring test is ~100 times cheaper than the patterns, and most facts have none.
_PASSWORD_STEMS = _wordset("pass pw kennw mdp contrase clave senha phrase pin geheimzahl")
_LOGIN_STEMS = _wordset("log sign cred account zugang anmeld identif acceso user usuario")
_CODE_STEMS = _wordset(
    """code key pin pass token otp cvv cvc verification schlüssel prüfnummer digo geheimzahl
    combination"""
)
_NAMED_STEMS = _wordset("key secret token cred schlüssel clé clave jeton")
_KEY_SEPARATORS = re.compile(r"[-_.]+")


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
    if "://" in text and any(_is_access_link(url) for url in _URL.findall(text)):
        return ACCESS_LINK
    if "@" in text and _user_pass_host(text):
        return ACCESS_LINK
    if sum(ch.isdigit() for ch in text) >= 13 and any(_card(m, text) for m in _CARD.finditer(text)):
        return CARD
    return _phrased(text, text.lower()) or _random_string(text)


def key_secret(key: str, looks: Callable[[str], str | None] = looks_secret) -> str | None:
    """What kind of secret a memory key holds, or None: the key as it is, and its words
    ("admin-login-root-hunter2" reads "admin login root hunter2")."""
    return looks(key) or looks(_KEY_SEPARATORS.sub(" ", key).strip())


def _user_pass_host(text: str) -> bool:
    for match in _USER_PASS_HOST.finditer(text):
        user = match.group("user").lower()
        if user not in _ADDRESS_LABELS and (
            _credential(match.group("value"), loose=False) or user in _COMMON_USERS
        ):
            return True
    return False


def _has(lowered: str, stems: frozenset[str]) -> bool:
    return any(stem in lowered for stem in stems)


def _phrased(text: str, lowered: str) -> str | None:
    """Secrets said in words: logins, codes, PINs, passwords and named keys."""
    if _has(lowered, _LOGIN_STEMS) and _login(text):
        return LOGIN
    if _has(lowered, _CODE_STEMS):
        if any(_code(m) for m in _OTP.finditer(text)):
            return ONE_TIME_CODE
        if any(_code(m) for m in _PIN.finditer(text)):
            return PIN
    if _has(lowered, _PASSWORD_STEMS) and _password(text):
        return PASSWORD
    if _has(lowered, _NAMED_STEMS) and _named_secret(text):
        return API_TOKEN
    return None


def _named_secret(text: str) -> bool:
    for match in _NAMED_SECRET.finditer(text):
        if _looks_like_credential(match.group("value")) or match.group("quote"):
            return True
    return any(
        _credential(match.group("value"), loose=False, minimum=8)
        for match in _NAMED_SECRET_BARE.finditer(text)
    )


def _password(text: str) -> bool:
    for match in _PASSWORD.finditer(text):
        if match.group("quote") or _value(match.group("value"), text, match.end()):
            return True
    for match in itertools.chain(_PASSWORD_BARE.finditer(text), _PASSWORD_TO.finditer(text)):
        if _credential(match.group("value"), loose=False):
            return True
    for match in _PASSPHRASE.finditer(text):
        words = [w.lower().strip(",\"'`") for w in match.group("words").split()]
        if len([w for w in words if w and w not in _NOT_A_VALUE]) >= 2:
            return True
    for match in _VALUE_FIRST.finditer(text):
        if match.group("quote"):
            return True
        value = match.group("value").strip(".,;!?")
        if value.lower() in _NOT_A_VALUE_BEFORE or value.lower() in _NOT_A_VALUE:
            continue
        if _credential(value, loose=match.group("start") is not None):
            return True
    return False


def _login(text: str) -> bool:
    matches = itertools.chain(
        _LOGIN.finditer(text), _LOGIN_BARE.finditer(text), _USER_THEN_PASS.finditer(text)
    )
    for match in matches:
        user = match.group("user").strip(".,;!?").lower()
        password = match.group("value").strip(".,;!?")
        if password.lower() in _NOT_A_VALUE or user in _NOT_A_VALUE:
            continue
        if _credential(password, loose=False) or (
            user in _COMMON_USERS and _credential(password, loose=True)
        ):
            return True
    return False


def _code(match: re.Match[str]) -> bool:
    """A code after its word: with a digit ("4711", "8f3k-29dj") or in capital groups."""
    value = match.group("value")
    first = value.split()[0]
    if first.lower() in _NOT_A_VALUE:
        return False
    digits = sum(ch.isdigit() for ch in value)
    if digits >= 3 or (digits and any(ch.isalpha() for ch in first)):
        return not _counts_something(value)
    return bool(re.fullmatch(r"[A-Z0-9]{4,}(?:-[A-Z0-9]{4,})+", first))


def _counts_something(value: str) -> bool:
    """ "4 digits", "6 characters long": the length of a code, not the code."""
    words = value.lower().split()
    return len(words) >= 2 and words[0].isdigit() and words[1] in _UNITS


def _value(value: str, text: str, end: int) -> bool:
    """A word after "password is" that is the password, not something about it."""
    value = value.strip(".,;!?)")
    if len(value) < 2 or value.lower() in _NOT_A_VALUE:
        return False
    after = [word.lower().strip(".,;") for word in text[end : end + 30].split()[:1]]
    if value.isdigit() and after and after[0] in _UNITS:
        return False  # "is 12 characters long"
    # "is kept in the vault": a lowercase participle followed by a preposition.
    return not (value.islower() and value.endswith("ed") and after and after[0] in _NOT_A_VALUE)


def _credential(value: str, *, loose: bool, minimum: int = 4) -> bool:
    """A token that is a password or key: any plain word when `loose` (after "is" where
    nothing else fits), otherwise digits with letters, mixed case, or symbols."""
    value = value.strip(".,;:!?)")
    if value.lower() in _NOT_A_VALUE or len(value) < (3 if loose else minimum):
        return False
    if loose:
        return True
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    mixed = any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)
    symbols = any(not ch.isalnum() for ch in value) and has_alpha
    return (has_digit and has_alpha) or mixed or symbols


def _looks_like_credential(value: str) -> bool:
    """A value after "api key is" / "token:" that is a key, not a word ("expired")."""
    value = value.strip(".,;!?")
    if value.lower() in _NOT_A_VALUE or len(value) < 6:
        return False
    has_digit = any(ch.isdigit() for ch in value)
    mixed = any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)
    symbols = any(ch in "_-./+=" for ch in value)
    return has_digit or mixed or symbols or len(value) >= 20


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


def _random_string(text: str) -> str | None:
    for url_free in _URL.split(text):
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
