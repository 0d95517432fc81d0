"""Erasing a person from a bot memory pool (domain/bot_memory.py `erasure_targets`, ADR 0013):
what goes, what stays for the others, and who sees what afterwards."""

from __future__ import annotations

from agent_memory.api.contracts.bots import BotEntryOut
from agent_memory.domain import bot_memory as rules
from agent_memory.domain.audiences import Judge, Person
from agent_memory.domain.bot_memory_purge import erasure_targets
from agent_memory.domain.entries import Entry
from tests.support.bot_memory import entry

GROUP = ("for:channel:ch_1", "org:o1")


def test_erasure_takes_a_persons_entries_alone_and_leaves_shared_ones_to_the_others() -> None:
    metas = [
        entry("ana", "from:ana", *GROUP),
        entry("both", "from:ana", "from:ben", *GROUP),
        entry("ben", "from:ben", *GROUP),
        # Ben took his part back: Ana is its only person now.
        entry("forgot", "from:ana", "forgot:ben", *GROUP),
        entry("on-ana", "from:ana", "from:ben", *GROUP, sources=("ana", "ben")),
        entry("on-on-ana", "from:ben", *GROUP, sources=("on-ana",)),
        entry("on-both", "from:ana", "from:ben", *GROUP, sources=("both",)),
    ]
    gone, kept = erasure_targets(metas, "ana")
    assert gone == {"ana", "forgot", "on-ana", "on-on-ana"}
    assert kept == ["both", "on-both"]
    assert erasure_targets(metas, "cy") == (set(), [])
    after = {m.id: m for m in metas}
    for entry_id in kept:
        after[entry_id] = rules.without_person(after[entry_id], "ana", 9, 2)
    for entry_id in gone:
        del after[entry_id]
    judge = Judge(after.get)
    members = {"ana", "ben"}

    def reader(user: str) -> Person:
        return Person(user, "o1", {"ch_1"} if user in members else set())

    assert {m.id for m in after.values() if judge.sees(reader("ben"), m)} == {
        "both",
        "ben",
        "on-both",
    }
    # Ana, still a member of the channel, sees only Ben's own words there.
    assert {m.id for m in after.values() if judge.sees(reader("ana"), m)} == {"ben"}
    # Nothing left names her, in what anyone is shown.
    for meta in after.values():
        assert not [t for t in BotEntryOut.of(Entry(meta, "x")).tags if "ana" in t]
    # Done once, nothing is left to do.
    assert erasure_targets(after.values(), "ana") == (set(), [])
