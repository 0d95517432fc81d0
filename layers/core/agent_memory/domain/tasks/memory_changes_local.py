"""The local answer of `memory_changes`: a small deterministic extractor (`local/rules`).

It reads plain statements in the user's own items (never tool or App results) and answers
in the same JSON protocol as the real models, so the domain parses and checks it the same
way. Recognized, one sentence at a time:

- "remember (that) ..."        -> the statement below, or a fact keyed by its subject
                                  ("the hotel is near the station" -> "hotel")
- "my X is Y"                  -> fact, key = slug of X ("budget")
- "I prefer/like/love ..."     -> preference ("I don't like/I dislike/I hate ..." too)
- "always ..." / "never ..."   -> procedure
- "we decided ..." / "let's use ..." / "we will use ..." -> decision
- "forget (that|about) X"      -> forget the active entry whose key matches X

A key comes from what a statement is about (X in "my X is Y"), never from the value Y: keys
are plaintext metadata. A sentence that holds a secret (domain/secrets.py) is not read at
all, and a key that would hold one is not proposed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agent_memory.domain.proposals import (
    KEY_PATTERN,
    ForgetAnswer,
    MemoryChangesAnswer,
    RememberAnswer,
)
from agent_memory.domain.secrets import key_secret, looks_secret


class _Item(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def app(self) -> str | None: ...


class _Entry(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...


class Consolidation(Protocol):
    """The input of `memory_changes`, as the extractor reads it."""

    @property
    def items(self) -> Sequence[_Item]: ...
    @property
    def memory(self) -> Sequence[_Entry]: ...
    @property
    def allowed_kinds(self) -> Sequence[str]: ...
    @property
    def person(self) -> str | None: ...


def local_changes(request: Consolidation) -> MemoryChangesAnswer:
    """Changes for the plain user statements among the new items."""
    changes = _Extractor(request).run()
    return MemoryChangesAnswer(changes=[change.answer() for change in changes])


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_POLITE = re.compile(r"^(?:(?:please|pls|ok|okay|so|and|also|oh|btw|by the way)[,\s]+)+", re.I)
_FORGET = re.compile(r"^forget\s+(?:(?:that|about|the fact that)\s+)?(?P<what>.+)$", re.I)
_REMEMBER = re.compile(
    r"^(?:remember|note|keep in mind|don't forget|do not forget)\s*(?:that\b|:)?\s*(?P<what>.+)$",
    re.I,
)
_MY_X_IS = re.compile(r"^my\s+(?P<x>[\w' -]{1,60}?)\s+(?P<verb>is|are|was|were)\s+(?P<y>.+)$", re.I)
# "the hotel is near the station": the subject, before its verb, names the fact.
_X_IS = re.compile(
    r"^(?:(?:the|our|their|his|her|its|this|that|a|an)\s+)?(?P<x>[\w' -]{1,60}?)\s+"
    r"(?:is|are|was|were|will\s+be|has|have|had|starts?|ends?|leaves?|arrives?)\s+\S",
    re.I,
)
_PREFER = re.compile(
    r"^i\s+(?:really\s+|much\s+|usually\s+|generally\s+)?"
    r"(?P<verb>prefer|like|love|enjoy|want|would like|would rather have)\s+(?P<what>.+)$",
    re.I,
)
_DISLIKE = re.compile(
    r"^i\s+(?:really\s+)?(?:don't|do not|dislike|hate)\s*(?:like|want|love|enjoy)?\s+(?P<what>.+)$",
    re.I,
)
_PROCEDURE = re.compile(r"^(?P<verb>always|never)\s+(?P<what>.+)$", re.I)
_DECISION = re.compile(
    r"^(?:(?:we|i|the team)\s+(?:have\s+|has\s+)?decided\s+(?:that\s+|to\s+|on\s+)?(?P<what>.+)"
    r"|let'?s\s+(?P<use>use\s+.+)"
    r"|(?:we|the team)\s*(?:'ll|will)\s+(?P<will>use\s+.+))$",
    re.I,
)
_STOP_WORDS = frozenset(
    str.split(
        """a an the my our your their his her its this that these those to of for in on at by with
    and or but is are was were be been it i we you me us them they he she please
    all any some every each before after when then than so just also really very that's"""
    )
)
_PRONOUNS = ((re.compile(r"\bmy\b", re.I), "their"), (re.compile(r"\bme\b", re.I), "them"))


@dataclass(frozen=True)
class _Change:
    op: str
    key: str
    source: str
    content: str = ""
    kind: str = ""

    def answer(self) -> RememberAnswer | ForgetAnswer:
        if self.op == "forget":
            return ForgetAnswer(op="forget", key=self.key, sources=[self.source])
        return RememberAnswer.model_validate(
            {
                "op": "remember",
                "key": self.key,
                "content": self.content,
                "kind": self.kind,
                "sources": [self.source],
            }
        )


class _Extractor:
    def __init__(self, request: Consolidation) -> None:
        # Only what the user wrote: tool and App results are outside data.
        self.items = [i for i in request.items if i.role == "user" and i.app is None]
        self.allowed = set(request.allowed_kinds)
        self.subject = request.person or "The user"
        self.active = {e.key: e for e in request.memory if e.status == "active"}
        self.retracted = {e.key for e in request.memory if e.status != "active"}
        # One change per key: a later statement about the same key replaces an earlier one.
        self.changes: dict[str, _Change] = {}

    def run(self) -> list[_Change]:
        for item in self.items:
            for sentence in _sentences(item.content):
                self._sentence(sentence, item.id)
        return list(self.changes.values())

    def _sentence(self, sentence: str, source: str) -> None:
        if looks_secret(sentence):
            return
        forget = _FORGET.match(sentence)
        if forget:
            key = self._existing_key(forget.group("what"))
            if key is not None:
                self._put(_Change("forget", key, source))
            return
        remember = _REMEMBER.match(sentence)
        statement = remember.group("what") if remember else sentence
        found = self._statement(statement, explicit=remember is not None)
        if found is None:
            return
        key, content, kind = found
        key = self._reuse(key, kind)
        if (
            kind not in self.allowed
            or key in self.retracted
            or not KEY_PATTERN.fullmatch(key.lower())
            or looks_secret(content)
            or key_secret(key)
        ):
            return
        self._put(_Change("remember", key, source, content, kind))

    def _statement(self, text: str, *, explicit: bool) -> tuple[str, str, str] | None:
        text = text.strip().rstrip(".!?").strip()
        if not text:
            return None
        my = _MY_X_IS.match(text)
        if my:
            what = my.group("x").strip()
            verb = my.group("verb").lower()
            value = _third_person(my.group("y"))
            return _slug(what), f"{_possessive(self.subject)} {what} {verb} {value}.", "fact"
        prefer = _PREFER.match(text)
        if prefer:
            what = _third_person(prefer.group("what"))
            verb = {"prefer": "prefers", "like": "likes", "love": "loves", "enjoy": "enjoys"}.get(
                prefer.group("verb").lower(), "wants"
            )
            return _slug(what), f"{self.subject} {verb} {what}.", "preference"
        dislike = _DISLIKE.match(text)
        if dislike:
            what = _third_person(dislike.group("what"))
            return f"no-{_slug(what)}", f"{self.subject} does not like {what}.", "preference"
        procedure = _PROCEDURE.match(text)
        if procedure:
            what = _third_person(procedure.group("what"))
            verb = procedure.group("verb").capitalize()
            key = _slug(what) if verb == "Always" else f"never-{_slug(what)}"
            return key, f"{verb} {what}.", "procedure"
        decision = _DECISION.match(text)
        if decision:
            what = decision.group("what") or decision.group("use") or decision.group("will")
            what = _third_person(what)
            return _slug(what), f"Decided: {what}.", "decision"
        if explicit:
            fact = _third_person(text)
            subject = _X_IS.match(fact)
            # Keyed by the subject; a statement without a verb is all subject.
            key = _slug(subject.group("x")) if subject else _slug(fact, limit=3)
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
        words = set(_words(my.group("x") if my else what))
        candidates = [*self.active, *(k for k, c in self.changes.items() if c.op == "remember")]
        for key in candidates:
            if key.lower() == _slug(what) or (my and key.lower() == _slug(my.group("x"))):
                return key
        for key in candidates:
            parts = set(re.split(r"[-_.]", key.lower())) - {""}
            if parts and parts <= words:
                return key
        return None

    def _put(self, change: _Change) -> None:
        self.changes.pop(change.key, None)
        self.changes[change.key] = change


def _sentences(text: str) -> list[str]:
    parts = (_POLITE.sub("", part.strip()) for part in _SENTENCE_END.split(text))
    return [part for part in parts if part]


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP_WORDS]


def _slug(text: str, limit: int = 4) -> str:
    words = _words(text)[:limit] or re.findall(r"[a-z0-9]+", text.lower())[:limit]
    return "-".join(words)[:100] or "note"


def _third_person(text: str) -> str:
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(replacement, text)
    return text.strip()


def _possessive(subject: str) -> str:
    return f"{subject}'" if subject.endswith("s") else f"{subject}'s"
