"""The local answer of `memory_changes`: a small deterministic extractor (`local/rules`).

It reads plain statements in the user's own items (never tool or App results) and answers
in the same JSON protocol as the real models, so the domain parses and checks it the same
way. Recognized, one clause at a time, in English, German, French and Spanish:

- what people say about themselves (domain/tasks/statements.py): "I am allergic to ...",
  "I live in ...", "call me ...", "I work at/as ...", "I am 34", "I am vegetarian", "I don't
  eat meat", and preferences ("I like/love/prefer/hate ...") -> a fact or preference keyed
  by its attribute (`allergy`, `home-city`, `preferred-name`); an attribute with several
  values keeps one entry each (`allergy`, `allergy-2`)
- their negations ("I no longer live in Berlin") -> forget the entries that hold the value
- "remember (that) ..."        -> the statement below, or a fact keyed by its subject
                                  ("the hotel is near the station" -> "hotel")
- "my X is Y"                  -> fact, key = slug of X ("budget")
- "always ..." / "never ..."   -> procedure
- "we decided ..." / "let's use ..." / "we will use ..." -> decision
- "forget (that|about) X"      -> forget the active entry whose key matches X

A key comes from what a statement is about, never from the value: keys are plaintext
metadata. A sentence that holds a secret (domain/secrets.py), alone or with the sentence
beside it, is not read at all; an item whose secret spans more sentences is not read either;
a sentence that announces a secret ("My password is the following.") hides the rest of its
item and the next item; and a key or content that would hold one, or a content over the
entry bound, is not proposed.
"""

from __future__ import annotations

import re

from agent_memory.domain.bounds import MAX_ENTRY_CONTENT
from agent_memory.domain.evidence import SaidItem, Statements
from agent_memory.domain.proposals import (
    KEY_PATTERN,
    ForgetAnswer,
    MemoryChangesAnswer,
    RememberAnswer,
)
from agent_memory.domain.secret_phrasings import announces_secret
from agent_memory.domain.secrets import key_secret, looks_secret
from agent_memory.domain.tasks.statement_rules import fold, in_english
from agent_memory.domain.tasks.statements import Statement, about_oneself, normalized, slug, words


def local_changes(request: Statements[SaidItem]) -> MemoryChangesAnswer:
    """Changes for the plain user statements among the new items."""
    return MemoryChangesAnswer(changes=_Extractor(request).run())


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_POLITE = re.compile(r"^(?:(?:please|pls|ok|okay|so|and|also|oh|btw|by the way)[,\s]+)+", re.I)
# "I live in Lyon and I work at Renault", "Ich wohne in Berlin und bin allergisch ...": a
# second clause starts with its own subject or a verb of the first person.
_CLAUSE = re.compile(
    r",?\s+(?:and|but|und|aber|et|mais|y|pero)\s+(?=(?:i|ich|je|j'|yo|bin|am|arbeite|wohne"
    r"|trabajo|vivo|soy|tengo|suis|travaille|habite)\b)",
    re.I,
)
_SUBJECTS = {"bin": "ich", "arbeite": "ich", "wohne": "ich", "am": "I"}
_FORGET = re.compile(r"^forget\s+(?:(?:that|about|the fact that)\s+)?(?P<what>.+)$", re.I)
_REMEMBER = re.compile(
    r"^(?:remember|note|keep in mind|don't forget|do not forget|merk dir|n'oublie pas"
    r"|recuerda)\s*(?:that\b|dass\b|que\b|:)?\s*(?P<what>.+)$",
    re.I,
)
_MY_X_IS = re.compile(
    r"^(?:my|mein|meine|meines|mon|ma|mes|mi|mis)\s+(?P<x>[\w' -]{1,60}?)\s+"
    r"(?P<verb>is|are|was|were|ist|sind|war|heißt|heisst|lautet|est|sont|s'appelle|es|son"
    r"|se\s+llama)\s+(?P<y>.+)$",
    re.I,
)
# Attributes said with their name in any language, kept under one key.
_ATTRIBUTES = in_english(
    """
    name: name vorname nom prenom nombre
    occupation: job beruf profession metier profesion trabajo
    birthday: birthday geburtstag anniversaire cumpleanos
    """
)
_ENGLISH_VERBS = {"is", "are", "was", "were"}
# "the hotel is near the station": the subject, before its verb, names the fact.
_X_IS = re.compile(
    r"^(?:(?:the|our|their|his|her|its|this|that|a|an)\s+)?(?P<x>[\w' -]{1,60}?)\s+"
    r"(?:is|are|was|were|will\s+be|has|have|had|starts?|ends?|leaves?|arrives?)\s+\S",
    re.I,
)
_PROCEDURE = re.compile(r"^(?P<verb>always|never)\s+(?P<what>.+)$", re.I)
_DECISION = re.compile(
    r"^(?:(?:we|i|the team)\s+(?:have\s+|has\s+)?decided\s+(?:that\s+|to\s+|on\s+)?(?P<what>.+)"
    r"|let'?s\s+(?P<use>use\s+.+)"
    r"|(?:we|the team)\s*(?:'ll|will)\s+(?P<will>use\s+.+))$",
    re.I,
)
_PRONOUNS = ((re.compile(r"\bmy\b", re.I), "their"), (re.compile(r"\bme\b", re.I), "them"))


Change = RememberAnswer | ForgetAnswer


class _Extractor:
    def __init__(self, request: Statements[SaidItem]) -> None:
        # Only what the user wrote: tool and App results are outside data.
        self.items = [i for i in request.items if i.role == "user" and i.app is None]
        self.allowed = set(request.allowed_kinds)
        self.subject = request.person or "The user"
        self.active = {e.key: e for e in request.memory if e.status == "active"}
        self.retracted = {e.key for e in request.memory if e.status != "active"}
        # One change per key: a later statement about the same key replaces an earlier one.
        self.changes: dict[str, Change] = {}

    def run(self) -> list[Change]:
        announced = False
        for item in self.items:
            sentences = _sentences(item.content)
            # "My password is the following." hides the rest of its item and the next item,
            # where the secret itself comes ("Remember: hunter2.").
            said = _before_announcement(sentences)
            hidden, announced = announced, len(said) < len(sentences)
            for sentence in [] if hidden else _readable(said):
                for clause in _clauses(sentence):
                    self._clause(clause, item.id)
        return list(self.changes.values())

    def _clause(self, text: str, source: str) -> None:
        forget = _FORGET.match(text)
        if forget:
            key = self._existing_key(forget.group("what"))
            if key is not None:
                self._put(ForgetAnswer(op="forget", key=key, sources=[source]))
            return
        remember = _REMEMBER.match(text)
        statement = remember.group("what") if remember else text
        personal = about_oneself(statement)
        if personal:
            for found in personal:
                self._personal(found, source)
            return
        plain = self._statement(statement, explicit=remember is not None)
        if plain is not None:
            key, content, kind = plain
            self._remember(self._reuse(key, kind), content, kind, source)

    def _personal(self, statement: Statement, source: str) -> None:
        if statement.negated:
            for key in self._holding(statement.key, statement.value):
                self._put(ForgetAnswer(op="forget", key=key, sources=[source]))
            return
        # The person's words may hold braces, even `{who}`: only the frame's own (first) is
        # filled in.
        content = statement.content.replace("{who}", self.subject, 1)
        self._remember(self._key_for(statement), content, statement.kind, source)

    def _key_for(self, statement: Statement) -> str:
        """The key a statement is kept under: the entry that already holds its value, the
        same preference said the other way round, the attribute, or its next free number."""
        for key in statement.reuse:
            if key in self.active:
                return key
        if not statement.many:
            return statement.key
        held = self._holding(statement.key, statement.value)
        if held:
            return held[0]
        taken = {*self.active, *self.retracted, *self.changes}
        key, number = statement.key, 1
        while key in taken:
            number += 1
            key = f"{statement.key}-{number}"
        return key

    def _holding(self, attribute: str, value: str) -> list[str]:
        """The active (or just proposed) entries of `attribute` whose content holds `value`."""
        family = re.compile(rf"{re.escape(attribute)}(?:-\d+)?")
        contents = {key: entry.content for key, entry in self.active.items()}
        contents |= {k: c.content for k, c in self.changes.items() if c.op == "remember"}
        wanted = fold(value)
        return [
            key
            for key, content in contents.items()
            if family.fullmatch(key) and wanted and wanted in fold(content)
        ]

    def _remember(self, key: str, content: str, kind: str, source: str) -> None:
        if (
            kind not in self.allowed
            or key in self.retracted
            or not KEY_PATTERN.fullmatch(key.lower())
            # A content over the bound fails the whole run, and every later run that reads it.
            or len(content) > MAX_ENTRY_CONTENT
            or looks_secret(content)
            or key_secret(key)
        ):
            return
        change = {"op": "remember", "key": key, "content": content, "kind": kind}
        self._put(RememberAnswer.model_validate({**change, "sources": [source]}))

    def _statement(self, text: str, *, explicit: bool) -> tuple[str, str, str] | None:
        text = normalized(text)
        if not text:
            return None
        my = _MY_X_IS.match(text)
        if my:
            what = my.group("x").strip()
            verb = my.group("verb").lower()
            verb = verb if verb in _ENGLISH_VERBS else "is"
            value = _third_person(my.group("y"))
            key = _ATTRIBUTES.get(slug(what), slug(what))
            return key, f"{_possessive(self.subject)} {what} {verb} {value}.", "fact"
        procedure = _PROCEDURE.match(text)
        if procedure:
            what = _third_person(procedure.group("what"))
            verb = procedure.group("verb").capitalize()
            key = slug(what) if verb == "Always" else f"never-{slug(what)}"
            return key, f"{verb} {what}.", "procedure"
        decision = _DECISION.match(text)
        if decision:
            what = decision.group("what") or decision.group("use") or decision.group("will")
            what = _third_person(what)
            return slug(what), f"Decided: {what}.", "decision"
        if explicit:
            fact = _third_person(text)
            subject = _X_IS.match(fact)
            # Keyed by the subject; a statement without a verb is all subject.
            key = slug(subject.group("x")) if subject else slug(fact, limit=3)
            return key, f"{fact[0].upper()}{fact[1:]}.", "fact"
        return None

    def _reuse(self, key: str, kind: str) -> str:
        """The existing key for the same fact: the same slug, or one ending like it."""
        for existing in (*self.active, *self.retracted):
            if existing.lower() == key:
                return existing
        for existing, entry in self.active.items():
            lowered = existing.lower()
            same_kind = entry.kind == kind
            if same_kind and (lowered.endswith("-" + key) or key.endswith("-" + lowered)):
                return existing
        return key

    def _existing_key(self, what: str) -> str | None:
        """The active (or just proposed) key that `what` names."""
        what = what.strip().rstrip(".!?")
        my = _MY_X_IS.match(what)
        said = set(words(my.group("x") if my else what))
        candidates = [*self.active, *(k for k, c in self.changes.items() if c.op == "remember")]
        for key in candidates:
            if key.lower() == slug(what) or (my and key.lower() == slug(my.group("x"))):
                return key
        for key in candidates:
            parts = set(re.split(r"[-_.]", key.lower())) - {""}
            if parts and parts <= said:
                return key
        return None

    def _put(self, change: Change) -> None:
        self.changes.pop(change.key, None)
        self.changes[change.key] = change


def _sentences(text: str) -> list[str]:
    parts = (_POLITE.sub("", part.strip()) for part in _SENTENCE_END.split(text))
    return [part for part in parts if part]


def _before_announcement(sentences: list[str]) -> list[str]:
    """The sentences before the first that says a secret comes next."""
    for position, sentence in enumerate(sentences):
        if announces_secret(sentence):
            return sentences[:position]
    return sentences


def _readable(sentences: list[str]) -> list[str]:
    """The sentences that hold no secret, alone or with the one before or after; none at
    all when a secret spans more of them ("1. left\\n2. stay ..." of a recovery phrase)."""
    alone = {position for position, sentence in enumerate(sentences) if looks_secret(sentence)}
    hidden = set(alone)
    for position in range(1, len(sentences)):
        pair = f"{sentences[position - 1]} {sentences[position]}"
        if not alone & {position - 1, position} and looks_secret(pair):
            hidden.update((position - 1, position))
    kept = [sentence for position, sentence in enumerate(sentences) if position not in hidden]
    if len(kept) > 1 and looks_secret("\n".join(kept)):
        return []
    return kept


def _clauses(sentence: str) -> list[str]:
    parts = _CLAUSE.split(sentence)
    clauses = [parts[0]]
    for part in parts[1:]:
        first = part.split(maxsplit=1)[0].lower()
        subject = _SUBJECTS.get(first)
        clauses.append(f"{subject} {part}" if subject else part)
    return clauses


def _third_person(text: str) -> str:
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(replacement, text)
    return text.strip()


def _possessive(subject: str) -> str:
    return f"{subject}'" if subject.endswith("s") else f"{subject}'s"
