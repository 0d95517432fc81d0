"""Secrets said around their words rather than after them: codes with spaces or spelled out
("My PIN is four seven one one", "the gate code is 1 2 3 4"), lock and locker combinations,
invite codes, a password named beside its value ("hunter2, which is also their password"),
what one types or unlocks with ("Always use hunter2 to log in", "hunter2 opens everything"),
and a sentence that announces a secret to come ("My password is the following.").
"""

from __future__ import annotations

import re

from agent_memory.domain.secret_words import (
    FOR,
    IS,
    LOGIN,
    NOT_A_VALUE,
    NOW,
    PASSWORD,
    PIN,
    UNITS,
    Rule,
    first_kind,
    lazy,
    windows,
    wordset,
)

_DIGIT_WORDS = (
    r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine|null|eins|zwei|drei|vier|fünf"
    r"|sechs|sieben|acht|neun|zéro|un|deux|trois|quatre|cinq|sept|huit|neuf|cero|uno|dos|tres"
    r"|cuatro|cinco|seis|siete|ocho|nueve)"
)
# What opens something: a PIN, a passcode, a door's, lock's or vault's code or combination.
_CODE_NAME = (
    r"(?:pin(?:\s*-?\s*(?:code|nummer|number))?|passcode|geheimzahl|code\s+pin|combination"
    r"|combo|kombination|combinaison|combinaci[oó]n|unlock\s+(?:pattern|code)"
    r"|(?:gate|door|front[\s-]*door|back[\s-]*door|garage|alarm|safe|vault|locker|lock|keypad"
    r"|entry|building|access|lockbox|padlock|invite|invitation|licen[cs]e|activation"
    r"|product|serial|tor|tür|tresor)[\s-]*(?:codes?|keys?|combos?|pins?|patterns?))"
)
# The code itself: digits, maybe in groups ("1 2 3 4", "99-12-07", "L-shape 14789"), letters
# with digits ("XK4-99P-QQ2"), or digits spelled out ("four seven one one").
_GROUP = r"[A-Za-z0-9]*\d[A-Za-z0-9]*"
_CODE = (
    rf"(?P<value>(?:[A-Za-z]+-[A-Za-z]+\s+)?{_GROUP}(?:[\s-]+{_GROUP})*"
    rf"|{_DIGIT_WORDS}(?:[\s,-]+{_DIGIT_WORDS}){{2,}})\b"
)
_CODE_SAID = lazy(rf"\b{_CODE_NAME}\b(?:{FOR}\s*{IS}\s*{NOW}|\s*[:#]?\s*){_CODE}", re.IGNORECASE)
# A value that looks like a password: letters with digits, or symbols among them.
_TOKEN = r"(?P<value>(?=[^\s]*[A-Za-z])(?=[^\s]*\d)[^\s,;\"'`()]{4,})"
_PASSWORD_WORD = (
    r"(?:pass(?:word|wort|code|phrase)s?|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|senha)"
)
_NOT_ABOUT = (
    r"(?!(?:\s*-\s*|\s+)(?:managers?|vaults?|polic(?:y|ies)|resets?|fields?|hints?|rules?"
    r"|requirements?|generators?|manager|gestor|gestionnaire|verwaltung)\b)"
)
# A password word and a value in one sentence, in either order ("nickname is hunter2 and
# their password too", "the password is the same as their nickname, hunter2").
_NAMED_BESIDE = (
    rf"\b{_PASSWORD_WORD}\b{_NOT_ABOUT}[^.!?\n]{{0,80}}?(?<![\w$-]){_TOKEN}",
    rf"(?<![\w$-]){_TOKEN}[^.!?\n]{{0,80}}?\b{_PASSWORD_WORD}\b{_NOT_ABOUT}",
)
# What one uses, types or unlocks with: "use hunter2 to log in", "unlock the laptop with X",
# "hunter2 opens everything", "hunter2 is what I type at the login prompt".
_OPENS = (
    rf"\b(?:use|type|enter)\s+{_TOKEN}\s+(?:to|for)\s+(?:log|sign|get|unlock|open|access)\b",
    rf"\b(?:unlock|open|log\s*(?:in|into|on)|sign\s*in(?:to)?|access)\b[^.!?\n]{{0,40}}?"
    rf"\b(?:with|using|by\s+typing)\s+{_TOKEN}",
    rf"(?<![\w$-]){_TOKEN}\s+(?:opens|unlocks|gets\s+(?:me\s+|us\s+)?into|logs\s+(?:me\s+)?in)\b",
    rf"(?<![\w$-]){_TOKEN}\s+is\s+what\s+(?:i|we|you|he|she|they)\s+(?:type|enter|use)\b",
)
# "The admin user is root and it's hunter2": a user name, then a word that is its password.
_USER_AND_ITS = lazy(
    r"\b(?:user(?:name)?|login|account|benutzer|utilisateur|usuario)\s+(?:is|ist|est|es|:)\s+"
    r"[^\s,]{2,64},?\s+(?:and|und|et|y)\s+(?:it['\u2019]s|it\s+is"
    r"|(?:its|the)\s+pass(?:word)?\s+is)\s+(?P<value>[^\s.,;!?]{3,})",
    re.IGNORECASE,
)
# "My password is the following.", "the PIN is:", "Mein Passwort ist folgendes".
_ANNOUNCED = lazy(
    rf"\b(?:{_PASSWORD_WORD}|{_CODE_NAME}|pin|login|credentials)\b{FOR}\s*(?:{IS}|will\s+be)"
    r"\s*(?:(?:the\s+)?(?:following|next|below|as\s+follows|this\s+one|coming)|folgendes"
    r"|folgende[sr]?|le\s+suivant|la\s+suivante|el\s+siguiente|la\s+siguiente|:?\s*$)",
    re.IGNORECASE,
)

_NUMBER = lazy(r"[\d.:/+-]+[a-z]{0,3}")
_TECHNICAL = lazy(
    r"(?:sha|md|aes|rsa|oauth|ipv|https?|tls|utf|base|pkcs|argon|bcrypt|pbkdf|x|ed|wpa|web|ec"
    r"|s|python|py|v)[\d.-]+"
)
_WORDS_NOT_CODES = wordset("digits chiffres ziffern dígitos characters zeichen caracteres")


def _code(match: re.Match[str], text: str) -> bool:
    """A code, not its length ("4 digits long") nor a word ("changed")."""
    said = match.group("value").lower().split()
    after = text[match.end() : match.end() + 30].lower().split()[:1]
    if (said and said[0] in NOT_A_VALUE) or (after and after[0].strip(".,;") in UNITS):
        return False
    return not any(word in _WORDS_NOT_CODES for word in said)


def _token(match: re.Match[str], _text: str) -> bool:
    """A value, not a number with its unit ("12h") nor a technical name ("sha256")."""
    value = match.group("value").strip(".!?:").lower()
    return not (_NUMBER().fullmatch(value) or _TECHNICAL().fullmatch(value))


def _its(match: re.Match[str], _text: str) -> bool:
    return match.group("value").lower() not in NOT_A_VALUE


_RULES = (
    Rule(PIN, _CODE_SAID, _code),
    Rule(LOGIN, _USER_AND_ITS, _its),
    *(Rule(PASSWORD, lazy(source, re.IGNORECASE), _token) for source in _NAMED_BESIDE + _OPENS),
)
_HITS = lazy(
    r"pin|pass|code|combo|combina|kombina|kennw|contrase|senha|key|pattern|geheimzahl|use"
    r"|type|enter|unlock|open|log|sign|access|user|account|nutzer|usuario"
)


def phrased_secret(text: str, lowered: str) -> str | None:
    """The kind of a secret said around its words in `text` (`lowered` its lowercase)."""
    for window, window_lowered in windows(text, lowered, _HITS):
        found = first_kind(_RULES, window, window_lowered)
        if found:
            return found
    return None


def announces_secret(text: str) -> bool:
    """Whether `text` says a secret comes next ("My password is the following.")."""
    return any(_ANNOUNCED().search(sentence) for sentence in re.split(r"(?<=[.!?])\s+", text))
