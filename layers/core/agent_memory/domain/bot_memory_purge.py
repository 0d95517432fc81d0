"""Purge and erasure of a person in bot memory (domain/bot_memory.py): which entries go,
and which entries of several people only stop counting one of them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agent_memory.domain.bot_memory import people_behind
from agent_memory.domain.entries import EntryMeta, EntrySource


def purge_targets(metas: Iterable[EntryMeta], tag: str) -> set[str]:
    """Entries carrying `tag` and every entry built on one of them, recursively (an
    observation carries its sources' tags; one that does not still stands on them)."""
    entries = list(metas)
    return _with_dependents(entries, {m.id for m in entries if tag in m.tags})


def erasure_targets(metas: Iterable[EntryMeta], user: str) -> tuple[set[str], list[str]]:
    """What erasing `user` does to a pool: the ids of the entries that go (those whose only
    person is `user`: their words alone, a Remember of theirs, and every entry built on
    one) and the ids of the entries of several people they stop counting in
    (`without_person`), which stay for the others."""
    entries = list(metas)
    theirs = [m for m in entries if f"from:{user}" in m.tags]
    gone = _with_dependents(entries, {m.id for m in theirs if people_behind(m) == {user}})
    return gone, sorted(m.id for m in theirs if m.id not in gone)


def _with_dependents(entries: Sequence[EntryMeta], targets: set[str]) -> set[str]:
    """`targets` and every entry built on one of them, recursively."""
    targets = set(targets)
    dependents: dict[str, list[str]] = {}
    for meta in entries:
        for source in meta.sources:
            if isinstance(source, EntrySource):
                dependents.setdefault(source.entry, []).append(meta.id)
    todo = list(targets)
    while todo:
        for dependent in dependents.get(todo.pop(), ()):
            if dependent not in targets:
                targets.add(dependent)
                todo.append(dependent)
    return targets
