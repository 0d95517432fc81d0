"""The memory text of any pool from a lazy newest-first read: it stops at the first entry
that does not fit and decrypts only the entries it renders."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from agent_memory.domain.entries import EntryMeta
from agent_memory.domain.memory_text import HEADER, MemoryText, choose, render
from agent_memory.persistence.pools import StoredEntry


def newest_text(
    newest: Iterable[StoredEntry],
    open_content: Callable[[StoredEntry], str],
    max_length: int,
    *,
    header: str = HEADER,
    always: str = "",
) -> MemoryText:
    read: dict[str, StoredEntry] = {}

    def in_order() -> Iterator[EntryMeta]:
        for stored in newest:
            read[stored.meta.id] = stored
            yield stored.meta

    chosen = choose(in_order(), max_length, header=header, always=always)
    return render(
        [(meta, open_content(read[meta.id])) for meta in chosen],
        max_length,
        header=header,
        always=always,
    )
