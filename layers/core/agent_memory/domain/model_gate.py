"""The one gate on model output (DESIGN.md, "One engine"), before any rule of a pool.

A model proposes; before a pool's own rules judge a proposal, the gate asks three things of
it, each refusal with one named reason:

- what it keeps: no secret in its content (domain/secrets.py) nor in its labels (topics and
  keys are plaintext metadata). A label is read as it is, word by word, and with its words in
  reverse order: a topic is a set of words, not a sentence ("hunter2-password");
- what it cites: only the run's evidence (its new items), or entries every reader of the run
  may see;
- what it changes: only entries every reader of the run may see; a rename changes every
  entry carrying its topic, so all of them must be, and one that covers none is refused.

What a refusal leaves in a log (`refusal_record`) is its reason, its op, its place in the
answer and the ids in the run's scope: never content, topics, keys or a model's made-up id,
since a log is read by people who may not read the entries or items behind it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.secrets import key_secret, looks_secret

# One reason for every secret; `what` names its kind ("a password"), never the secret.
SECRET = "looks like {what}, which memory never keeps"
NOT_EVIDENCE = "cites an item that is not one of this run's new items"
NOT_SHOWN = "cites an entry that not every reader of this run may see, or that does not exist"
NOT_YOURS = "changes an entry that not every reader of this run may see, or that does not exist"
RENAME_NOT_YOURS = (
    "a rename covers every entry with the topic: not every reader of this run may see all of "
    "them, or none carries it"
)

Secret = Callable[[str], str | None]

_WORDS = re.compile(r"[^A-Za-z0-9]+")


@dataclass(frozen=True)
class Scope:
    """What one run may touch: its evidence items, and the entries every reader of the run
    may see (a container, so a pool may answer from its audience judge)."""

    items: Container[str]
    entries: Container[str]

    def known(self, ids: Iterable[str]) -> list[str]:
        """The ids that name an item or entry of this scope, once each, in order."""
        return [i for i in dict.fromkeys(ids) if i in self.items or i in self.entries]


@dataclass(frozen=True)
class Proposal:
    """One change a model proposes, as the gate reads it."""

    op: str
    # What would be kept sealed (an entry's words).
    content: tuple[str, ...] = ()
    # What would be kept as plaintext metadata (topics, keys).
    labels: tuple[str, ...] = ()
    # Items and entries it cites as its sources.
    items: tuple[str, ...] = ()
    entries: tuple[str, ...] = ()
    # Entries it changes (invalidates, retracts); for a rename, every entry carrying its topic.
    changes: tuple[str, ...] = ()
    rename: bool = False

    @property
    def ids(self) -> tuple[str, ...]:
        return (*self.items, *self.entries, *self.changes)


def label_secret(label: str, secret: Secret = looks_secret) -> str | None:
    """What kind of secret a label holds: as it is, word by word, and its words reversed."""
    found = key_secret(label, secret)
    if found:
        return found
    words = [w for w in _WORDS.split(label) if w]
    return secret(" ".join(reversed(words))) if len(words) > 1 else None


def secret_reason(
    content: Sequence[str], labels: Sequence[str], secret: Secret = looks_secret
) -> str | None:
    """The SECRET reason when a text or a label holds a secret (its kind only), else None."""
    for text in content:
        found = text and secret(text)
        if found:
            return SECRET.format(what=found)
    for label in labels:
        found = label and label_secret(label, secret)
        if found:
            return SECRET.format(what=found)
    return None


def gate_reason(proposal: Proposal, scope: Scope) -> str | None:
    """Why the gate refuses `proposal` in `scope` (None: the pool's rules judge it next)."""
    reason = secret_reason(proposal.content, proposal.labels)
    if reason is not None:
        return reason
    if any(item not in scope.items for item in proposal.items):
        return NOT_EVIDENCE
    if any(entry not in scope.entries for entry in proposal.entries):
        return NOT_SHOWN
    outside = any(entry not in scope.entries for entry in proposal.changes)
    if proposal.rename and (outside or not proposal.changes):
        return RENAME_NOT_YOURS
    return NOT_YOURS if outside else None


def refusal_record(op: str, index: int, reason: str, ids: Sequence[str] = ()) -> dict[str, Any]:
    """A refused change as a log keeps it (API.md's `{"change": {...}, "reason": str}`): its op,
    its place in the answer and `ids` (those of the run's scope only: `Scope.known`)."""
    return {"change": {"op": op, "index": index, "ids": list(ids)}, "reason": reason}


def without_secrets(text: str) -> str:
    """`text` without the lines that hold a secret (a log of observations, notes)."""
    lines = text.splitlines()
    kept = [line for line in lines if not (line.strip() and looks_secret(line))]
    return text if len(kept) == len(lines) else "\n".join(kept)
