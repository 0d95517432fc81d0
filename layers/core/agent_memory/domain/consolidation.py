"""Consolidation rules: which of a model's proposed changes a memory pool accepts.

A model proposes, the domain disposes (seed 000, "After a Turn"). For every change:

- it names at least one source, and only items this run read (the unprocessed ones);
- App results (outside data) never support a change alone;
- one change per key: when an answer holds two or more changes for one key, all of them are
  rejected;
- a retracted fact stays retracted (only a direct Remember by a person brings it back);
- nothing that looks like a secret is kept (domain/secrets.py: passwords, logins, codes,
  PINs, keys, tokens, card numbers, access links), in the content or in the key: a key is
  plaintext metadata (the entry's row, the execution's `applied`, agent memory's log), so a
  change of either op whose key holds a secret is rejected, and the rejection keeps the key
  as `[redacted]`;
- the change is applied to the newest memory: an entry a person changed while the model
  worked keeps the person's edit;
- its kind is one the pool keeps; Forget needs an active entry.

Every rejection carries its reason. The rules are the same for every pool (session memory,
agent memory); the pool decides which kinds it keeps, and a run's items what may be read and
what is outside (`PoolRules.of`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.evidence import EvidenceItem
from agent_memory.domain.model_gate import label_secret, secret_reason
from agent_memory.domain.proposals import ProposedChange, ProposedForget, ProposedRemember
from agent_memory.domain.text import UNENCODABLE, encodable

DUPLICATE_KEY = "more than one change for this key in one answer"
NO_SOURCE = "names no source"
NOT_READ = "names a source that is not one of the new items: {source}"
OUTSIDE_ONLY = "only App results (outside data) support it"
KIND_NOT_KEPT = "kind {kind} is not kept in this memory"
STAYS_RETRACTED = "a retracted fact stays retracted; only a direct Remember brings it back"
UNKNOWN_KEY = "no entry has this key"
ALREADY_RETRACTED = "the entry is already retracted"
EDITED_MEANWHILE = "a person changed this entry while the model worked; the edit is kept"
TOO_MANY = "more changes than one step can apply; left for the next run"

REDACTED = "[redacted]"


@dataclass(frozen=True)
class Known:
    """What the newest memory holds under a key."""

    status: str
    # A person changed it after the model's snapshot was taken.
    edited_meanwhile: bool = False


@dataclass(frozen=True)
class PoolRules:
    allowed_kinds: Collection[str]
    # The sources a change may name: the unprocessed items this run read.
    readable: Collection[object]
    # Sources that are outside data (App tool results): never the only support of a change.
    outside: Collection[object] = ()
    # How many changes one step may apply (it commits in one transaction).
    max_changes: int = 90

    @classmethod
    def of(cls, allowed_kinds: Collection[str], items: Sequence[EvidenceItem]) -> PoolRules:
        """A run's rules: a change names its sources among the items the run read, and
        the App results among them are outside data."""
        return cls(
            allowed_kinds=allowed_kinds,
            readable=frozenset(item.id for item in items),
            outside=frozenset(item.id for item in items if item.app),
        )


@dataclass(frozen=True)
class Rejection:
    change: ProposedChange
    reason: str

    def record(self) -> dict[str, Any]:
        """The rejection as kept on the execution: the change without its content."""
        return {"change": change_record(self.change), "reason": self.reason}


def change_record(change: ProposedChange) -> dict[str, Any]:
    """A change as a run's log keeps it: without its content, its key redacted when secret.

    Content is only ever stored encrypted, and a secret is never stored at all.
    """
    record: dict[str, Any] = {"op": _op(change), "key": change.key}
    if label_secret(change.key):
        record["key"] = REDACTED
    if isinstance(change, ProposedRemember):
        record["kind"] = change.kind
    record["sources"] = list(change.sources)
    return record


@dataclass(frozen=True)
class Decision:
    accepted: tuple[ProposedChange, ...]
    rejected: tuple[Rejection, ...]

    def applied_records(self) -> list[dict[str, str]]:
        return [{"key": change.key, "op": _op(change)} for change in self.accepted]

    def rejected_records(self) -> list[dict[str, Any]]:
        return [rejection.record() for rejection in self.rejected]

    def limited(self, max_changes: int) -> Decision:
        """Keep the first `max_changes` accepted changes; reject the rest (never half-apply)."""
        if len(self.accepted) <= max_changes:
            return self
        extra = tuple(Rejection(c, TOO_MANY) for c in self.accepted[max_changes:])
        return Decision(self.accepted[:max_changes], self.rejected + extra)


def _op(change: ProposedChange) -> str:
    return "remember" if isinstance(change, ProposedRemember) else "forget"


def consolidate(
    changes: Sequence[ProposedChange], current: Mapping[str, Known], rules: PoolRules
) -> Decision:
    """Split proposed changes into accepted ones and rejections with their reasons; a key is
    also read word by word for a secret ("admin-login-root-hunter2")."""
    per_key = Counter(change.key for change in changes)
    accepted: list[ProposedChange] = []
    rejected: list[Rejection] = []
    for change in changes:
        reason = _text_reason(change)
        if reason is None and per_key[change.key] > 1:
            reason = DUPLICATE_KEY
        if reason is None:
            reason = _sources_reason(change, rules) or _reason(change, current, rules)
        if reason is None:
            accepted.append(change)
        else:
            rejected.append(Rejection(change, reason))
    return Decision(tuple(accepted), tuple(rejected)).limited(rules.max_changes)


def _text_reason(change: ProposedChange) -> str | None:
    """Text that cannot be stored first, then a secret (the gate on model output's rule,
    domain/model_gate.py, the same for every pool): whatever else is wrong."""
    content = change.content if isinstance(change, ProposedRemember) else ""
    if not (encodable(change.key) and encodable(content)):
        return UNENCODABLE
    return secret_reason((content,), (change.key,))


def _sources_reason(change: ProposedChange, rules: PoolRules) -> str | None:
    if not change.sources:
        return NO_SOURCE
    for source in change.sources:
        if source not in rules.readable:
            return NOT_READ.format(source=source)
    if all(source in rules.outside for source in change.sources):
        return OUTSIDE_ONLY
    return None


def _reason(change: ProposedChange, current: Mapping[str, Known], rules: PoolRules) -> str | None:
    if isinstance(change, ProposedRemember) and change.kind not in rules.allowed_kinds:
        return KIND_NOT_KEPT.format(kind=change.kind)
    forget = isinstance(change, ProposedForget)
    known = current.get(change.key)
    if known is None:
        return UNKNOWN_KEY if forget else None
    if known.edited_meanwhile:
        return EDITED_MEANWHILE
    if known.status != "active":
        return ALREADY_RETRACTED if forget else STAYS_RETRACTED
    return None
