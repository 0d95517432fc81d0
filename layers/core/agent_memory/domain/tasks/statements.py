"""What people plainly say about themselves, in English, German, French and Spanish: the
statements the `local/rules` extractor (memory_changes_local.py) keeps.

`about_oneself(sentence)` reads one sentence and answers its statements: the attribute it
is about (the key: `allergy`, `home-city`, `name`, never the value), the content in the third
person with `{who}` for the person, its kind, the value as said, and whether it takes the
value back ("I no longer live in Berlin": forget where memory has it). Some attributes hold
several values, one entry each ("I'm allergic to peanuts and shellfish": `allergy`,
`allergy-2`). Contents are English frames around the person's own words ("Ana lives in
München."), as the other learned contents are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent_memory.domain.secret_words import wordset
from agent_memory.domain.tasks.statement_rules import (
    LIST_SPLIT,
    RULES,
    Rule,
    fold,
    value,
)

FACT = "fact"
PREFERENCE = "preference"


@dataclass(frozen=True)
class Statement:
    """One thing a person says about themselves."""

    key: str
    content: str  # `{who}` stands for the person
    kind: str = FACT
    value: str = ""
    negated: bool = False  # takes `value` back: forget the entry that holds it
    many: bool = False  # the attribute holds several values, one entry each
    # Keys of the same preference said the other way round, reused when memory has one.
    reuse: tuple[str, ...] = ()


# --- preferences ------------------------------------------------------------------------------

_LIKE = re.compile(
    r"^(?:i\s+(?:really\s+|much\s+|usually\s+|generally\s+|also\s+)?(?P<en>prefer|like|love"
    r"|enjoy|adore|want|would\s+like|would\s+rather\s+have)"
    r"|i\s+am\s+(?:a\s+)?(?:big\s+|huge\s+)?(?P<fan>fan)\s+of"
    r"|ich\s+(?P<de>mag|liebe|bevorzuge)|j'(?P<fr>aime|adore)(?:\s+bien|\s+beaucoup)?"
    r"|je\s+(?P<fr2>préfère)|me\s+(?P<es>gusta|gustan|encanta|encantan)|(?P<es2>prefiero))"
    r"\s+(?P<v>.+)$",
    re.IGNORECASE,
)
_DISLIKE = re.compile(
    r"^(?:i\s+(?:really\s+)?(?:(?:do\s+not|no\s+longer)\s+(?:like|want|love|enjoy)"
    r"|dislike|hate)"
    r"|i\s+(?:cannot|can\s+not)\s+stand|ich\s+hasse|ich\s+mag\s+kein(?:e|en)?"
    r"|je\s+déteste|je\s+n'aime\s+(?:pas|plus)|odio|(?:ya\s+)?no\s+me\s+(?:gusta|gustan))"
    r"\s+(?P<v>.+?)$",
    re.IGNORECASE,
)
# "Ich mag Kaffee nicht (mehr)".
_DISLIKE_AFTER = re.compile(r"^ich\s+mag\s+(?P<v>.+?)\s+nicht(?:\s+mehr)?$", re.IGNORECASE)
_VERBS = {
    "prefer": "prefers",
    "like": "likes",
    "love": "loves",
    "enjoy": "enjoys",
    "adore": "loves",
}

_CONTRACTIONS = (
    (re.compile(r"\bi'm\b", re.I), "I am"),
    (re.compile(r"\bi've\b", re.I), "I have"),
    (re.compile(r"\b(do|does|did|is|are|was|were|have|has|would|could)n't\b", re.I), r"\1 not"),
    (re.compile(r"\bcan't\b", re.I), "cannot"),
    (re.compile(r"\bwon't\b", re.I), "will not"),
    (re.compile(r"\bname's\b", re.I), "name is"),
)


def normalized(sentence: str) -> str:
    """The sentence with one kind of apostrophe and English contractions spelt out."""
    text = sentence.replace("\u2019", "'").strip().rstrip(".!?").strip()
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def about_oneself(sentence: str) -> list[Statement]:
    """The statements `sentence` makes about the person who says it (none when it makes
    none): facts by their attribute, then preferences."""
    text = normalized(sentence)
    for rule in RULES:
        match = rule.pattern.match(text)
        found = _statements(rule, match) if match else []
        if found:
            return found
    return _preference(text)


def _statements(rule: Rule, match: re.Match[str]) -> list[Statement]:
    said = next(value for value in match.groupdict().values() if value)
    values = [value(part) for part in LIST_SPLIT.split(said)] if rule.split else [value(said)]
    found = []
    for one in filter(None, values):
        key = rule.key(one) if callable(rule.key) else rule.key
        if key is None:
            continue
        content = rule.frame.format(who="{who}", v=one)
        found.append(Statement(key, content, FACT, one, rule.negated, rule.many))
    return found


def _preference(text: str) -> list[Statement]:
    dislike = _DISLIKE.match(text) or _DISLIKE_AFTER.match(text)
    if dislike:
        what = value(dislike.group("v"))
        key = slug(what)
        return [
            Statement(f"no-{key}", f"{{who}} does not like {what}.", PREFERENCE, what, reuse=(key,))
        ]
    like = _LIKE.match(text)
    if not like:
        return []
    what = value(like.group("v"))
    english = (like.group("en") or "").lower()
    if like.group("fan"):
        content = f"{{who}} is a fan of {what}."
    elif english:
        content = f"{{who}} {_VERBS.get(english, 'wants')} {what}."
    elif like.group("fr2") or like.group("es2") or (like.group("de") or "").lower() == "bevorzuge":
        content = f"{{who}} prefers {what}."
    else:
        content = f"{{who}} likes {what}."
    key = slug(what)
    return [Statement(key, content, PREFERENCE, what, reuse=(f"no-{key}",))]


_STOP_WORDS = wordset(
    """a an the my our your their his her its this that these those to of for in on at by with and
    or but is are was were be been it i we you me us them they he she please all any some every
    each before after when then than so just also really very that's der die das den dem des
    ein eine einen und oder le la les l un une des du de d et ou el los las lo uno una y o del
    al"""
)


def words(text: str) -> list[str]:
    """The meaningful words of `text`, folded (stop words of the four languages left out)."""
    return [word for word in re.findall(r"[a-z0-9]+", fold(text)) if word not in _STOP_WORDS]


def slug(text: str, limit: int = 4) -> str:
    """A key from the words of `text` (stop words left out, accents folded)."""
    kept = words(text)[:limit] or re.findall(r"[a-z0-9]+", fold(text))[:limit]
    return "-".join(kept)[:100] or "note"
