"""The words and the mechanism the secret rules share (domain/secrets.py and its detectors):
the kinds of secret they name, how the four languages say "is", where a value starts, which
words after "password is" say something *about* a password instead of giving it, and `Rule`,
one pattern with the check its matches must pass.

Patterns here are fragments to compose (`rf"...{IS}..."`), read case-insensitively, into
each rule's `lazy` pattern.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

# The kinds of secret, as a refusal names them ("looks like a password"): never the secret.
PASSWORD = "a password"
LOGIN = "a login with its password"
ACCESS_LINK = "a link that gives access"
API_TOKEN = "an API key or token"
CLOUD_KEY = "a cloud access key"
PRIVATE_KEY = "a private key"
RANDOM_STRING = "a long random string that looks like a credential"
ONE_TIME_CODE = "a one-time or recovery code"
PIN = "a PIN or an access code"
CARD = "a payment card number"
RECOVERY_PHRASE = "a wallet seed or recovery phrase"
SECURITY_ANSWER = "an answer to a security question"
BANK_ACCOUNT = "a bank account number"


# A rule's regular expression, compiled at its first call: `PATTERN().search(text)`.
LazyPattern = Callable[[], re.Pattern[str]]


def lazy(source: str, flags: int = 0) -> LazyPattern:
    """`source` compiled at the first call. The secret rules' patterns take about 20 ms to
    compile: a process pays that when it first checks a text, not while it starts (a
    learning step that checks none never pays it)."""
    return functools.cache(lambda: re.compile(source, flags))


def wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


def matched(_match: re.Match[str], _text: str) -> bool:
    """Any match of the rule's pattern is a secret (a format that nothing else has)."""
    return True


@dataclass(frozen=True)
class Rule:
    """A secret of `kind` where a match of `pattern` passes `accept` (given the match and the
    whole text). The rule runs only when the lowered text holds a stem of each set in
    `needs`: a substring test is ~100 times cheaper than a pattern, and most facts have none."""

    kind: str
    pattern: LazyPattern
    accept: Callable[[re.Match[str], str], bool] = matched
    needs: tuple[frozenset[str], ...] = ()


def first_kind(rules: Iterable[Rule], text: str, lowered: str) -> str | None:
    """The kind of the first of `rules` that finds a secret in `text` (`lowered` is its
    lowercase), or None."""
    for rule in rules:
        if all(has_stem(lowered, stems) for stems in rule.needs) and any(
            rule.accept(match, text) for match in rule.pattern().finditer(text)
        ):
            return rule.kind
    return None


# "is" in the four languages, and the signs that assign a value.
IS = (
    r"(?:is|was|are|were|equals|ist|war|lautet|sind|lauten|est|était|sont|es|era|son|é|è"
    r"|:|=|->|=>)"
)
# "is" as a word, for a value given before its name ("hunter2 is my password").
IS_WORD = r"(?:is|was|ist|war|est|était|es|era|é|è)"
# "is now ...": the value comes after these.
NOW = r"(?:(?:now|still|currently|jetzt|nun|maintenant|désormais|ahora|todavía)\s+)?"
# A place or purpose between the word and "is": "the password for the staging db is ...".
FOR = (
    r"(?:\s+(?:for|of|to|on|at|with|für|fürs|zum|zur|vom|von|bei|pour|du|de|des|de\s+la|avec"
    r"|para|del|con"
    r"|de\s+mi)\s+[\w .@'\u2019-]{1,40}?)?"
)
# Who uses it, between the word and "is": "the password I use for everything is ...".
WHO_USES = (
    r"(?:\s+(?:that\s+|which\s+)?(?:i|we|you|he|she|they)\s+(?:use|used|have|had|chose|set"
    r"|picked)\b)?"
)
# An optional opening quote: a quoted value is a value whatever its words.
# A value never starts like a variable, a call or a list ("$TOKEN", "(default", "[...]").
VALUE = r"\s*(?P<quote>[\"'`«“„\u2018]?)(?P<value>(?![$({\[<])[^\s\"'`«»“”„\u2018\u2019]{2,})"
# The same without "is": after a space or a colon, never glued on ("token-based").
BARE_VALUE = rf"(?:\s*[:=]\s*|\s+)(?!-){VALUE}"
# "hunter2 is my password", "Sommer2024 ist mein Passwort", "gato2020 es mi contraseña".
OWNERS = (
    r"(?:my|the|our|your|his|her|their|mein|meine|unser|unsere|dein|deine|das|die|der|sein"
    r"|seine|ihr|ihre|mon|ma|notre|votre|ton|ta|le|la|son|sa|mi|tu|su|el|nuestra|nuestro)"
)

# Words that follow "password is" in sentences about a password rather than giving it.
NOT_A_VALUE = wordset(
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
    you i we they he she me us them and or but if then about under behind inside beside near
    none yet tbd very really quite pretty so secret confidential sehr ziemlich geheim
    vertraulich très secrète secret muy bastante secreto secreta
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
UNITS = wordset(
    """characters character chars letters digits symbols long days weeks months years hours
    minutes old times zeichen stellen tage caractères chiffres jours caracteres dígitos días"""
)
# Words that stand in front of "is my password" without being it: "What is my password?".
NOT_A_VALUE_BEFORE = wordset(
    """what which who where how why when that this it here there mine yours ours one so then
    also and or but name number date word same was wie was welches das dies es hier da
    quel quelle quoi ce cela ça qui où cuál cuáles qué eso esto esta este aquí ahí"""
)
# Accounts whose name says little; with one of these, any password after it counts.
COMMON_USERS = wordset(
    "root admin administrator user sa postgres ubuntu pi guest test ec2-user oracle mysql"
)


def has_stem(lowered: str, stems: frozenset[str]) -> bool:
    """Whether a lowered text holds one of `stems` (what a rule `needs`)."""
    return any(stem in lowered for stem in stems)


def valued(match: re.Match[str], text: str) -> bool:
    """A rule's check: the match's `value` (a word after "password is") is the secret, not
    something about it."""
    value = match.group("value").strip(".,;!?)")
    if len(value) < 2 or value.lower() in NOT_A_VALUE:
        return False
    after = [word.lower().strip(".,;") for word in text[match.end() : match.end() + 30].split()[:1]]
    if value.isdigit() and after and after[0] in UNITS:
        return False  # "is 12 characters long"
    # "is kept in the vault": a lowercase participle followed by a preposition.
    return not (value.islower() and value.endswith("ed") and after and after[0] in NOT_A_VALUE)


def stated(match: re.Match[str], text: str) -> bool:
    """A rule's check: the match's value is quoted, or is the secret."""
    return bool(match.group("quote")) or valued(match, text)


def strict(match: re.Match[str], _text: str) -> bool:
    """A rule's check where no "is" comes before the value: it must look like a credential."""
    return credential(match.group("value"), loose=False)


def credential(value: str, *, loose: bool, minimum: int = 4) -> bool:
    """A token that is a password or key: any plain word when `loose` (after "is" where
    nothing else fits), otherwise digits with letters, mixed case, or symbols."""
    value = value.strip(".,;:!?)")
    if value.lower() in NOT_A_VALUE or len(value) < (3 if loose else minimum):
        return False
    if loose:
        return True
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    mixed = any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)
    symbols = any(not ch.isalnum() for ch in value) and has_alpha
    return (has_digit and has_alpha) or mixed or symbols


def key_like(value: str) -> bool:
    """A value after "api key is" / "token:" that is a key, not a word ("expired")."""
    value = value.strip(".,;!?")
    if value.lower() in NOT_A_VALUE or len(value) < 6:
        return False
    has_digit = any(ch.isdigit() for ch in value)
    mixed = any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)
    symbols = any(ch in "_-./+=" for ch in value)
    return has_digit or mixed or symbols or len(value) >= 20


# Texts longer than this are read in windows: a rule spans a sentence or two, and a scan of
# 8000 characters costs each rule about 1 ms.
WHOLE = 1000


def windows(
    text: str, lowered: str, hits: LazyPattern, *, before: int = 150
) -> Iterator[tuple[str, str]]:
    """`(text, lowered)` itself when short, else the windows around each hit of `hits` in
    `lowered` (`before` characters before it, 250 after, merged where they overlap), each
    starting at a word."""
    if len(text) <= WHOLE:
        yield text, lowered
        return
    spans: list[tuple[int, int]] = []
    for hit in hits().finditer(lowered):
        start, end = max(0, hit.start() - before), hit.end() + 250
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    for start, end in spans:
        first = lowered.find(" ", start) + 1 if start else 0
        yield text[first:end], lowered[first:end]
