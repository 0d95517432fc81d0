"""Codes, PINs and payment cards: one-time and recovery codes, door, gate and safe codes, PINs
(after their word, "the gate opens with 2580#", "gate: 2580#"), and card numbers whose Luhn
check digit is right."""

from __future__ import annotations

import re

from agent_memory.domain.secret_words import (
    CARD,
    FOR,
    IS,
    NOT_A_VALUE,
    NOW,
    ONE_TIME_CODE,
    PIN,
    UNITS,
    LazyPattern,
    Rule,
    lazy,
    wordset,
)

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


def _code_pattern(word: str) -> LazyPattern:
    # With "is" a place may come between ("the PIN for my card is ..."); without, the code
    # follows its word at once ("PIN 4921", "OTP: 123456").
    return lazy(rf"\b{word}\b(?:{FOR}\s*{IS}\s*{NOW}|\s*[:#]?\s*){_CODE_VALUE}", re.IGNORECASE)


_OTP = _code_pattern(_OTP_WORD)
_PIN = _code_pattern(_PIN_WORD)
# "the gate opens with 2580#", "das Tor öffnet mit 2580".
_OPENS_WITH = lazy(
    r"\b(?:gate|door|garage|lock|safe|alarm|padlock|lockbox|tor|tür|tresor|porte|portail"
    r"|coffre|puerta|port[oó]n|portal|candado)\s+(?:opens?|unlocks?|disarms?|öffnet|s['\u2019]"
    r"ouvre|se\s+abre|abre)\s+(?:with|using|mit|avec|con)\s+(?:the\s+)?(?:code\s+)?" + _CODE_VALUE,
    re.IGNORECASE,
)
# "gate: 2580#": a door's name, a colon and digits only ("gate: B22" is a boarding gate).
_DOOR_COLON = lazy(
    r"\b(?:gate|door|garage|alarm|safe|lockbox|tor|tür|porte|portail|puerta|port[oó]n)\s*[:=]"
    r"\s*[*#]?(?P<value>\d{3,8})#?(?![\w-])",
    re.IGNORECASE,
)


# Payment cards: 13 to 19 digits, together or in groups (4-4-4-4, 4-6-5 for Amex).
_CARD = lazy(
    r"(?<![\d+.,/:-])(?:\d{13,19}|\d{4}(?:[ -]\d{4}){2}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{4,5})"
    r"(?![\d.,/:-]\d)"
)
# A long number after these words is a reference, not a card (unless a card is named too).
_REFERENCE = lazy(
    r"\b(?:order|invoice|tracking|reference|booking|ticket|shipment|parcel|customer|bestellung"
    r"|rechnung|sendung|commande|facture|pedido|factura|envío)\b",
    re.IGNORECASE,
)
_CARD_WORD = lazy(
    r"\b(?:cards?|karte|carte|tarjeta|visa|mastercard|amex|maestro|cb)\b", re.IGNORECASE
)

CODE_STEMS = wordset(
    """code key pin pass token otp cvv cvc verification schlüssel prüfnummer digo geheimzahl
    combination puk entsperr"""
)
OPENS_STEMS = wordset("open unlock disarm öffnet ouvre abre")


def card_secret(text: str) -> str | None:
    """A payment card number, unless a reference word comes before it without a card word."""
    if sum(ch.isdigit() for ch in text) >= 13 and any(
        _card(m, text) for m in _CARD().finditer(text)
    ):
        return CARD
    return None


def _code(match: re.Match[str], _text: str) -> bool:
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


# A code or PIN after its word, or a door's code.
CODE_RULES = (
    Rule(ONE_TIME_CODE, _OTP, _code, (CODE_STEMS,)),
    Rule(PIN, _PIN, _code, (CODE_STEMS,)),
    Rule(PIN, _OPENS_WITH, _code, (OPENS_STEMS,)),
    Rule(PIN, _DOOR_COLON, needs=(frozenset(":"),)),
)


def _card(match: re.Match[str], text: str) -> bool:
    before = text[max(0, match.start() - 40) : match.start()]
    if _REFERENCE().search(before) and not _CARD_WORD().search(before):
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
