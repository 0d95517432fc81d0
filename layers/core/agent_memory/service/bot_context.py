"""The memory text of a Chat's answer: the newest entries its readers may see."""

from __future__ import annotations

from collections.abc import Iterator

from agent_memory.domain.audiences import Judge, Person, Reader
from agent_memory.domain.bot_memory import HEADER, BotContext
from agent_memory.domain.entries import EntryMeta, EntrySource
from agent_memory.domain.memory_text import first_page
from agent_memory.persistence.bot_memory import BotMemoryRepository
from agent_memory.persistence.pools import Pool, StoredEntry
from agent_memory.service.bots import Members
from agent_memory.service.memory_texts import newest_text


def context_text(
    repo: BotMemoryRepository, pool: Pool, readers: Reader, limit: int, members: Members
) -> BotContext | None:
    """The text, or None when the pool's version moved while it was read."""
    version, newest = repo.newest(pool, first_page(limit))
    known: dict[str, EntryMeta | None] = {}
    judge = Judge(known.get)
    found = {"visible": False}

    def visible() -> Iterator[StoredEntry]:
        for stored in newest:
            known[stored.meta.id] = stored.meta
            _load_sources(repo, pool, stored.meta, known)
            if isinstance(readers, Person):
                members.load(judge.channels(stored.meta))
            if judge.sees(readers, stored.meta):
                found["visible"] = True
                yield stored

    text = newest_text(
        visible(),
        lambda stored: repo.pools.open_content(pool, stored),
        limit,
        header=HEADER,
    )
    if repo.version(pool) != version:
        return None
    return BotContext(text.text, text.keys, found["visible"])


def _load_sources(
    repo: BotMemoryRepository, pool: Pool, meta: EntryMeta, known: dict[str, EntryMeta | None]
) -> None:
    """Read the entries `meta` stands on, recursively, a batch per level."""
    frontier = [s.entry for s in _entry_sources(meta) if s.entry not in known]
    while frontier:
        found = repo.entries(pool, frontier)
        for entry_id in frontier:
            known[entry_id] = found.get(entry_id)
        frontier = [
            s.entry for m in found.values() for s in _entry_sources(m) if s.entry not in known
        ]


def _entry_sources(meta: EntryMeta) -> list[EntrySource]:
    return [s for s in meta.sources if isinstance(s, EntrySource)]
