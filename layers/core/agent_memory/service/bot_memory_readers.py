"""Where a reader's entries are: the audience rows that can admit them (ADR 0083)."""

from __future__ import annotations

from agent_memory.domain.audiences import Group, Person, Reader
from agent_memory.persistence.bot_memory import (
    EVERYONE,
    ReaderPool,
    channel_audience,
    person_audience,
)
from agent_memory.persistence.pools import Pool
from agent_memory.service.bots import Members


def for_reader(pool: Pool, reader: Reader, members: Members) -> ReaderPool:
    """`pool` read only where an entry admitting `reader` can be (ADR 0083): their own
    audience rows, their Channels' (of those the pool marks, membership loaded as it is
    read) and the Bot's when marked."""

    def audiences(marks: frozenset[str]) -> list[str]:
        everyone = [EVERYONE] if EVERYONE in marks else []
        if isinstance(reader, Group):
            return [channel_audience(reader.channel_id), *everyone]
        if not isinstance(reader, Person):
            raise TypeError("only a person or a group reads by audience")
        marked = [m.removeprefix(channel_audience("")) for m in sorted(marks) if m != EVERYONE]
        members.load(marked)
        channels = [channel_audience(c) for c in marked if c in members]
        return [person_audience(reader.user_id), *channels, *everyone]

    return ReaderPool(pool.pk, pool.org_id, pool.pool_id, pool.layout, audiences)
