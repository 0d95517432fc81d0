"""Bot memory (seed 002, "Memory"; API.md "Bot memory") through HTTP on the embedded AWS.

Learning is the memory Bot's: facts, observations and invalidations are its model's answer to
a run that a confided Turn starts (the learning workflow inline, the model scripted), and every
rule a person meets is walked over HTTP.
"""

from __future__ import annotations

from typing import Any

from agent_memory.domain import bot_changes
from agent_memory.domain import bot_memory as rules
from agent_memory.domain import model_gate as gate
from agent_memory.domain.entries import EntryMeta, EntrySource
from agent_memory.domain.tasks.learning_changes import (
    FactChange,
    InvalidateChange,
    ObservationChange,
)
from agent_memory.persistence.bot_memory import bot_pool
from agent_memory.ports import KeyRange
from tests.support.bots import MEMORY_MODEL, World, error, make_chat, script, services, world

__all__ = ["script", "services", "world"]  # the memory Bot's scripted model, learning inline


def fact(content: str, *items: str, topics: tuple[str, ...] = ()) -> FactChange:
    return FactChange(op="fact", content=content, topics=list(topics), sources=list(items))


def observe(content: str, *entries: str, confidence: float = 0.8) -> ObservationChange:
    return ObservationChange(
        op="observation", content=content, confidence=confidence, topics=[], sources=list(entries)
    )


def entry_ids(run: dict[str, Any]) -> list[str]:
    """The entries a learning run wrote, in its answer's order."""
    return [a["key"] for a in run["applied"]]


def reasons(run: dict[str, Any]) -> list[tuple[int, str]]:
    return [(r["change"]["index"], r["reason"]) for r in run["rejected"]]


def test_remember_is_private_to_its_author_and_forget_retracts(world: World) -> None:
    ana, ben = world.ana, world.ben
    made = world.command(
        ana, {"_tag": "Remember", "content": "I take the 8:10 train.", "tags": ["commute"]}
    )
    assert made.status_code == 200, made.text
    entry = made.json()["entry"]
    assert made.json()["version"] == 1
    assert entry["layer"] == "pinned"
    assert entry["status"] == "active"
    assert entry["tags"] == [
        f"from:{ana.id}",
        f"for:person:{ana.id}",
        f"org:{world.org}",
        "commute",
    ]
    assert entry["sources"] == []
    assert "confidence" not in entry
    assert "invalidatedAt" not in entry
    assert world.page(ana) == {"entries": [entry], "version": 1}
    assert world.page(ana, tags="commute")["entries"] == [entry]
    assert world.page(ana, tags=f"commute,from:{ben.id}")["entries"] == []
    # Nobody reads memory about another person: not ben, not the bot's owner's admin.
    assert world.page(ben) == {"entries": [], "version": 1}
    # A colon tag in a Remember is a 400 naming it.
    colon = world.command(ana, {"_tag": "Remember", "content": "x", "tags": ["ok", "for:bot"]})
    assert error(colon) == (400, "ValidationError", ["command", "tags", 1])
    upper = world.command(ana, {"_tag": "Remember", "content": "x", "tags": ["Trip"]})
    assert error(upper) == (400, "ValidationError", ["command", "tags", 0])
    # Forget of an entry that is not for you: 409; the sole person retracts it.
    assert error(world.command(ben, {"_tag": "Forget", "id": entry["id"]}))[:2] == (
        409,
        "EntryConflict",
    )
    assert error(world.command(ana, {"_tag": "Forget", "id": "mem_nope"}))[:2] == (
        409,
        "EntryConflict",
    )
    gone = world.command(ana, {"_tag": "Forget", "id": entry["id"]})
    assert gone.status_code == 200, gone.text
    assert gone.json()["version"] == 2
    assert gone.json()["entry"]["status"] == "retracted"
    # Authorized history stays: the retracted entry is still shown to its reader.
    assert [e["status"] for e in world.memory(ana)] == ["retracted"]
    log = world.api.client.get(f"/v1/bots/{world.bot['id']}/memory/log", headers=ana.headers)
    assert [(c["version"], c["by"], c["ids"]) for c in log.json()["changes"]] == [
        (2, "person", [entry["id"]]),
        (1, "person", [entry["id"]]),
    ]
    other_log = world.api.client.get(f"/v1/bots/{world.bot['id']}/memory/log", headers=ben.headers)
    assert other_log.json() == {"changes": []}


def test_facts_cite_a_persons_words_and_are_for_who_saw_them(world: World) -> None:
    ana, ben = world.ana, world.ben
    chat = make_chat(world.api, ana, world.bot["id"])
    said = world.said(ana, chat, "I am allergic to peanuts.")
    turn_id = world.api.client.get(f"/v1/chats/{chat['id']}/items", headers=ana.headers).json()[
        "items"
    ][0]["turnId"]
    added = world.api.client.post(
        f"/v1/chats/{chat['id']}/turns/{turn_id}/items",
        json={
            "items": [
                {"role": "assistant", "content": "I will avoid peanuts."},
                {"role": "tool", "content": "menu: satay", "app": "menu"},
                {"role": "notice", "content": "Ana is the admin now."},
            ]
        },
        headers=ana.headers,
    ).json()["itemIds"]
    bot_words, app_result, notice = added
    learned = world.taught(
        chat,
        fact("Ana is allergic to peanuts.", said, bot_words, topics=("food",)),
        fact("The bot avoids peanuts.", bot_words),
        fact("The menu has satay.", app_result),
        fact("Ana is the admin.", notice),
        fact("Bad tag.", said, topics=("for:bot",)),
        fact("Elsewhere.", "i-99"),
    )
    assert [a["op"] for a in learned["applied"]] == ["fact"]
    assert reasons(learned) == [
        (1, bot_changes.FACT_NEEDS_PERSON),
        (2, bot_changes.FACT_NEEDS_PERSON),
        (3, bot_changes.FACT_NEEDS_PERSON),
        (4, "topic 1: a tag with a colon belongs to the service; only topics may be written"),
        (5, gate.NOT_EVIDENCE),
    ]
    memory = world.page(ana)
    assert memory["version"] == 1
    (entry,) = memory["entries"]
    assert entry["layer"] == "fact"
    assert entry["content"] == "Ana is allergic to peanuts."
    assert entry["tags"] == [
        f"from:{ana.id}",
        f"for:person:{ana.id}",
        f"org:{world.org}",
        f"chat:{chat['id']}",
        "food",
    ]
    assert entry["sources"] == [
        {"chat": chat["id"], "item": said},
        {"chat": chat["id"], "item": bot_words},
    ]
    assert world.memory(ben) == []
    log = world.api.client.get(f"/v1/bots/{world.bot['id']}/memory/log", headers=ana.headers)
    assert [c["by"] for c in log.json()["changes"]] == ["memory_bot"]


def test_an_observation_is_for_readers_of_every_source_and_cites_only_what_the_chat_sees(
    world: World,
) -> None:
    ana, ben = world.ana, world.ben
    ana_chat = make_chat(world.api, ana, world.bot["id"])
    ben_chat = make_chat(world.api, ben, world.bot["id"])
    group = make_chat(world.api, ana, world.bot["id"], channelId=world.channel["id"])
    a1 = world.taught(ana_chat, fact("Ana likes tea.", world.said(ana, ana_chat, "I like tea.")))
    a2 = world.taught(ana_chat, fact("Ana drinks it hot.", world.said(ana, ana_chat, "Hot.")))
    b1 = world.taught(ben_chat, fact("Ben likes tea.", world.said(ben, ben_chat, "Tea!")))
    t1 = world.taught(group, fact("The team drinks tea.", world.said(ben, group, "Tea break!")))
    ana_fact, ana_hot, ben_fact, team_fact = (entry_ids(x)[0] for x in (a1, a2, b1, t1))
    # Ana's chat may not cite Ben's private fact: her chat's readers may not see it.
    refused = world.taught(ana_chat, observe("Both like tea.", ana_fact, ben_fact))
    assert refused["applied"] == []
    assert [r["reason"] for r in refused["rejected"]] == [gate.NOT_SHOWN]
    mixed = world.taught(ana_chat, observe("Ana and the team like tea.", ana_fact, team_fact))
    own = world.taught(ana_chat, observe("Ana likes hot tea.", ana_fact, ana_hot, confidence=0.9))
    mixed_id, own_id = entry_ids(mixed)[0], entry_ids(own)[0]
    # A mix of Ana's fact and the team's is for readers of both: Ana, not Ben.
    assert world.ids(ana) == {ana_fact, ana_hot, team_fact, mixed_id, own_id}
    assert world.ids(ben) == {ben_fact, team_fact}
    shown = {e["id"]: e for e in world.memory(ana)}[own_id]
    assert shown["layer"] == "observation"
    assert shown["confidence"] == 0.9
    assert shown["sources"] == [{"entry": ana_fact}, {"entry": ana_hot}]
    # The log hides the change that made the mixed observation from Ben.
    log = world.api.client.get(f"/v1/bots/{world.bot['id']}/memory/log", headers=ben.headers)
    assert [c["ids"] for c in log.json()["changes"]] == [[team_fact], [ben_fact]]


def test_a_retracted_or_invalidated_source_hides_its_conclusions(world: World) -> None:
    ana = world.ana
    chat = make_chat(world.api, ana, world.bot["id"])
    f1 = world.taught(chat, fact("Ana lives in Oslo.", world.said(ana, chat, "I live in Oslo.")))
    f2 = world.taught(chat, fact("Ana cycles.", world.said(ana, chat, "I cycle to work.")))
    fact1, fact2 = entry_ids(f1)[0], entry_ids(f2)[0]
    o1 = entry_ids(world.taught(chat, observe("Ana cycles in Oslo.", fact1, fact2)))[0]
    o2 = entry_ids(world.taught(chat, observe("Ana likes cold rides.", o1)))[0]
    assert world.ids(ana) == {fact1, fact2, o1, o2}
    forgot = world.command(ana, {"_tag": "Forget", "id": fact1})
    assert forgot.json()["entry"]["status"] == "retracted"
    # The retracted fact stays in her history; everything built on it is hidden, recursively.
    assert world.ids(ana) == {fact1, fact2}
    # An invalidated source does the same, and keeps its own history with invalidatedAt.
    o3 = entry_ids(world.taught(chat, observe("Ana is fit.", fact2)))[0]
    assert o3 in world.ids(ana)
    world.taught(chat, InvalidateChange(op="invalidate", id=fact2))
    entries = {e["id"]: e for e in world.memory(ana)}
    assert set(entries) == {fact1, fact2}
    assert entries[fact2]["status"] == "active"
    assert isinstance(entries[fact2]["invalidatedAt"], int)
    # Learning refuses conclusions on retracted or invalidated entries.
    refused = world.taught(chat, observe("Again.", fact2), observe("Again.", fact1))
    assert [r["reason"] for r in refused["rejected"]] == [
        bot_changes.INVALID_SOURCE.format(entry=fact2),
        bot_changes.INVALID_SOURCE.format(entry=fact1),
    ]


def test_a_loop_in_source_links_hides_every_entry_on_it(world: World) -> None:
    ana = world.ana
    chat = make_chat(world.api, ana, world.bot["id"])
    base = world.taught(chat, fact("Ana plays chess.", world.said(ana, chat, "I play chess.")))
    base_id = entry_ids(base)[0]
    # Learning never writes a loop (sources must exist first): old or damaged rows can.
    repo = world.services.bot_memory.repo
    pool = bot_pool(world.bot["id"], world.org)
    tags = (f"from:{ana.id}", f"for:person:{ana.id}", f"org:{world.org}")
    for me, other in (("mem_loop_a", "mem_loop_b"), ("mem_loop_b", "mem_loop_a")):
        meta = EntryMeta(
            id=me,
            layer="observation",
            kind="observation",
            tags=tags,
            sources=(EntrySource(other), EntrySource(base_id)),
            confidence=0.5,
            created_at=1,
            updated_at=1,
            length=4,
        )
        repo.write(repo.pools.put(pool, meta, "loop"))
    assert world.ids(ana) == {base_id}


def test_two_people_behind_one_fact_and_one_forgets(world: World) -> None:
    ana, ben, cy, dee = world.ana, world.ben, world.cy, world.dee
    chat = make_chat(world.api, ana, world.bot["id"], channelId=world.channel["id"])
    i1 = world.said(ana, chat, "Let's ship on Friday.")
    i2 = world.said(ben, chat, "Friday works for me.")
    learned = world.taught(chat, fact("The team ships on Friday.", i1, i2))
    fact_id = entry_ids(learned)[0]
    (entry,) = world.memory(cy)
    assert entry["tags"] == [
        f"from:{ana.id}",
        f"from:{ben.id}",
        f"for:channel:{world.channel['id']}",
        f"org:{world.org}",
        f"chat:{chat['id']}",
        f"channel:{world.channel['id']}",
    ]
    assert fact_id in world.ids(ana)
    assert fact_id in world.ids(ben)
    # dee is not in the channel: the entry is not for her, and her Forget is a 409.
    assert fact_id not in world.ids(dee)
    assert error(world.command(dee, {"_tag": "Forget", "id": fact_id}))[:2] == (
        409,
        "EntryConflict",
    )
    # ben is one of two people behind it: he stops counting and stops seeing it.
    forgot = world.command(ben, {"_tag": "Forget", "id": fact_id})
    assert forgot.status_code == 200, forgot.text
    assert "entry" not in forgot.json()
    assert fact_id not in world.ids(ben)
    after = {e["id"]: e for e in world.memory(ana)}[fact_id]
    assert after["status"] == "active"
    # Who forgot it is nobody else's business: no tag says so.
    assert not [t for t in after["tags"] if ben.id in t]
    assert fact_id in world.ids(cy)
    # cy sees it but is not behind it: Forget makes it no longer for cy.
    assert world.command(cy, {"_tag": "Forget", "id": fact_id}).status_code == 200
    assert fact_id not in world.ids(cy)
    # ana is now the only person behind it: her Forget retracts it.
    last = world.command(ana, {"_tag": "Forget", "id": fact_id})
    assert last.json()["entry"]["status"] == "retracted"
    # Membership is read at every request: someone who joins the channel later sees it.
    joined = world.api.client.post(
        f"/v1/channels/{world.channel['id']}/members",
        json={"add": [dee.id]},
        headers=ana.headers,
    )
    assert joined.status_code == 200
    assert fact_id in world.ids(dee)


def test_a_linked_organization_and_home_see_none_of_each_others_memory(world: World) -> None:
    ana, olga = world.ana, world.olga
    linked = world.api.client.post(
        f"/v1/bots/{world.bot['id']}/links",
        json={"organizationId": world.other, "grants": {olga.id: "write"}},
        headers=ana.headers,
    )
    assert linked.status_code == 201, linked.text
    world.settings({"botMemoryModel": MEMORY_MODEL}, world.other)  # the memory Bot learns there
    home_chat = make_chat(world.api, ana, world.bot["id"])
    olga_chat = make_chat(world.api, olga, world.bot["id"])
    home = world.taught(
        home_chat, fact("Ana's team uses Python.", world.said(ana, home_chat, "We use Python."))
    )
    away = world.taught(
        olga_chat, fact("Olga's team uses Go.", world.said(olga, olga_chat, "We use Go."))
    )
    home_id, away_id = entry_ids(home)[0], entry_ids(away)[0]
    # Each chat teaches its own organization's memory.
    assert world.ids(ana) == {home_id}
    assert world.ids(olga) == {away_id}
    # Writing through a link, olga may still not purge: purge does not pass through a link.
    purge = world.post(olga, "purge", {"tag": f"org:{world.other}"})
    assert error(purge)[:2] == (403, "Forbidden")
    remember = world.command(olga, {"_tag": "Remember", "content": "Olga's note."})
    assert remember.json()["entry"]["tags"][2] == f"org:{world.other}"
    assert remember.json()["entry"]["id"] not in world.ids(ana)
    # Context of olga's chat holds only the linked organization's entries.
    context = world.post(olga, "context", {"chatId": olga_chat["id"]})
    assert context.status_code == 200, context.text
    assert set(context.json()["ids"]) == {away_id, remember.json()["entry"]["id"]}
    assert error(world.post(olga, "context", {"chatId": home_chat["id"]}))[0] == 404


def test_purge_removes_tagged_entries_and_their_conclusions_without_reading(
    world: World, services: Any
) -> None:
    ana, ben = world.ana, world.ben
    ana_chat = make_chat(world.api, ana, world.bot["id"])
    group = make_chat(world.api, ana, world.bot["id"], channelId=world.channel["id"])
    mine = world.taught(ana_chat, fact("Ana runs.", world.said(ana, ana_chat, "I run.")))
    team = world.taught(group, fact("Ben leads.", world.said(ben, group, "I lead the team.")))
    mine_id, team_id = entry_ids(mine)[0], entry_ids(team)[0]
    built = entry_ids(world.taught(ana_chat, observe("Ana is sporty.", mine_id)))[0]
    pinned = world.command(ana, {"_tag": "Remember", "content": "Pinned."}).json()["entry"]["id"]
    # Only a writer at home purges; a tag that is not purgeable is a 400.
    assert error(world.post(ben, "purge", {"tag": f"from:{ana.id}"}))[:2] == (403, "Forbidden")
    assert error(world.post(ana, "purge", {"tag": "testing"})) == (
        400,
        "ValidationError",
        ["tag"],
    )
    assert error(world.post(ana, "purge", {"tag": f"for:person:{ana.id}"}))[2] == ["tag"]
    # Deleting a chat's history keeps what was learned from it.
    assert (
        world.api.client.delete(
            f"/v1/chats/{ana_chat['id']}/items", headers=ana.headers
        ).status_code
        == 204
    )
    assert mine_id in world.ids(ana)
    opened: list[Any] = []
    cipher = services.bot_memory.repo.pools._cipher
    original = cipher.open
    cipher.open = lambda *a, **k: opened.append(a) or original(*a, **k)
    try:
        purged = world.post(ana, "purge", {"tag": f"chat:{ana_chat['id']}"})
    finally:
        cipher.open = original
    assert purged.status_code == 200, purged.text
    # The fact and the observation built on it go (the observation carries the chat tag).
    assert purged.json() == {"removed": 2}
    assert opened == []
    assert world.ids(ana) == {pinned, team_id}
    # A repeated purge finds nothing left: it removed nothing.
    assert world.post(ana, "purge", {"tag": f"chat:{ana_chat['id']}"}).json() == {"removed": 0}
    # What the chat teaches later is counted by the purge that removes it, and only there.
    world.taught(ana_chat, fact("Ana swims.", world.said(ana, ana_chat, "I swim.")))
    assert world.post(ana, "purge", {"tag": f"chat:{ana_chat['id']}"}).json() == {"removed": 1}
    assert world.post(ana, "purge", {"tag": f"from:{ben.id}"}).json() == {"removed": 1}
    assert world.ids(ben) == set()
    assert built not in world.ids(ana)


def test_purge_spans_transactions_and_resumes(world: World, services: Any) -> None:
    ana = world.ana
    chat = make_chat(world.api, ana, world.bot["id"])
    for words in ("I like many things.", "And many more."):
        item = world.said(ana, chat, words)
        world.taught(chat, *(fact(f"Ana likes thing {n}.", item) for n in range(30)))
    assert len(world.ids(ana)) == 60
    # The first transaction of the purge commits, then the process dies.
    repo = services.bot_memory.repo
    original = repo.write
    calls = {"n": 0}

    def dies_after_first(actions: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("the function was stopped")
        original(actions)

    repo.write = dies_after_first
    try:
        crashed = world.post(ana, "purge", {"tag": f"from:{ana.id}"})
    finally:
        repo.write = original
    assert crashed.status_code == 500
    assert len(world.ids(ana)) == 60 - rules_batch()
    resumed = world.post(ana, "purge", {"tag": f"from:{ana.id}"})
    # The repeat finishes the rest and counts what it removed itself.
    assert resumed.json() == {"removed": 60 - rules_batch()}
    assert world.ids(ana) == set()


def rules_batch() -> int:
    from agent_memory.service.bot_memory_purge import PURGE_BATCH

    return PURGE_BATCH


def test_share_passes_only_where_every_source_rule_admits(world: World) -> None:
    ana, ben, cy = world.ana, world.ben, world.cy
    private = make_chat(world.api, ana, world.bot["id"])
    group = make_chat(world.api, ana, world.bot["id"], channelId=world.channel["id"])
    own = world.taught(
        private, fact("Ana's salary is private.", world.said(ana, private, "My salary..."))
    )
    own_id = entry_ids(own)[0]
    channel = f"for:channel:{world.channel['id']}"
    # A private fact's item rule admits only ana: no share, not even by the bot's owner.
    refused = world.post(ana, "share", {"id": own_id, "audience": channel})
    assert error(refused)[:2] == (409, "EntryConflict")
    assert error(world.post(ana, "share", {"id": own_id, "audience": "for:bot"}))[0] == 409
    assert error(world.post(ana, "share", {"id": own_id, "audience": "org:x"}))[2] == ["audience"]
    # ben cannot share what is not for him.
    assert error(world.post(ben, "share", {"id": own_id, "audience": channel}))[0] == 409
    # A pinned entry stands on no source: its own rule stays.
    pinned = world.command(ana, {"_tag": "Remember", "content": "Mine."}).json()["entry"]["id"]
    assert error(world.post(ana, "share", {"id": pinned, "audience": channel}))[0] == 409
    # An observation learned privately from the group's facts may be shared with the group.
    team = world.taught(group, fact("The team meets Mondays.", world.said(ben, group, "Mondays.")))
    team_id = entry_ids(team)[0]
    repo = world.services.bot_memory.repo
    pool = bot_pool(world.bot["id"], world.org)
    narrow = EntryMeta(
        id="mem_narrow",
        layer="observation",
        kind="observation",
        tags=(f"from:{ben.id}", f"for:person:{ben.id}", f"org:{world.org}"),
        sources=(EntrySource(team_id),),
        confidence=0.7,
        created_at=1,
        updated_at=1,
        length=17,
    )
    repo.write(repo.pools.put(pool, narrow, "Mondays are busy."))
    assert "mem_narrow" not in world.ids(cy)
    shared = world.post(ben, "share", {"id": "mem_narrow", "audience": channel})
    assert shared.status_code == 200, shared.text
    assert channel in shared.json()["entry"]["tags"]
    assert "mem_narrow" in world.ids(cy)
    # for:bot needs every source to be for everyone: refused.
    assert error(world.post(ben, "share", {"id": "mem_narrow", "audience": "for:bot"}))[0] == 409


def test_context_keeps_memory_order_and_what_every_reader_may_see(world: World) -> None:
    ana, ben, cy, dee = world.ana, world.ben, world.cy, world.dee
    private = make_chat(world.api, ana, world.bot["id"])
    group = make_chat(world.api, ben, world.bot["id"], channelId=world.channel["id"])
    p1 = world.taught(private, fact("Ana is vegetarian.", world.said(ana, private, "No meat.")))
    g1 = world.taught(group, fact("The team demo is Tuesday.", world.said(ben, group, "Demo Tue.")))
    g2 = world.taught(group, fact("The team uses Linear.", world.said(cy, group, "Linear.")))
    pinned = world.command(ana, {"_tag": "Remember", "content": "Ana's pinned note."})
    p1_id, g1_id, g2_id = (entry_ids(x)[0] for x in (p1, g1, g2))
    pin_id = pinned.json()["entry"]["id"]
    mine = world.post(ana, "context", {"chatId": private["id"]})
    assert mine.status_code == 200, mine.text
    # ana's private chat: her entries and the group's, which she may see, newest first.
    assert mine.json()["ids"] == [pin_id, g2_id, g1_id, p1_id]
    assert mine.json()["text"].startswith(rules.HEADER)
    assert f"- [pinned] {pin_id}: Ana's pinned note.\n" in mine.json()["text"]
    assert mine.json()["hasEntries"] is True
    # The group chat: only entries for the group (ana's private ones are not for all readers).
    theirs = world.post(cy, "context", {"chatId": group["id"]})
    assert theirs.json()["ids"] == [g2_id, g1_id]
    # Stops at the first entry that does not fit; hasEntries says entries exist.
    tight = world.post(ana, "context", {"chatId": private["id"], "maxLength": 10})
    assert tight.json() == {"text": "", "ids": [], "hasEntries": True}
    # The caller must be a reader of that chat.
    assert error(world.post(dee, "context", {"chatId": private["id"]})) == (
        404,
        "NotFound",
        ["chatId"],
    )
    assert error(world.post(ana, "context", {"chatId": "chat_nope"}))[0] == 404
    empty_chat = make_chat(world.api, dee, world.bot["id"])
    assert world.post(dee, "context", {"chatId": empty_chat["id"]}).json() == {
        "text": "",
        "ids": [],
        "hasEntries": False,
    }


def test_every_change_moves_the_version_and_the_admin_token_reads_nothing(world: World) -> None:
    ana = world.ana
    url = f"/v1/bots/{world.bot['id']}/memory"
    assert world.api.client.get(url, headers=world.api.admin).status_code == 403
    first = world.command(ana, {"_tag": "Remember", "content": "One."}).json()
    second = world.command(ana, {"_tag": "Remember", "content": "Two."}).json()
    assert (first["version"], second["version"]) == (1, 2)
    assert world.page(ana)["version"] == 2
    bad = world.api.client.get(url + "?tags=Bad Tag", headers=ana.headers)
    assert error(bad) == (400, "ValidationError", ["tags", 0])
    # The filter is what its OpenAPI array says: 1..10 tags, none empty.
    many = ",".join(f"t{i}" for i in range(11))
    for query, path in (("", ["tags", 0]), ("a,,b", ["tags", 1]), (many, ["tags"])):
        refused = world.api.client.get(f"{url}?tags={query}", headers=ana.headers)
        assert error(refused) == (400, "ValidationError", path), query
    ten = world.api.client.get(f"{url}?tags={many.rsplit(',', 1)[0]}", headers=ana.headers)
    assert ten.json()["entries"] == []
    # One comma-separated parameter: a second is refused, never silently the only filter.
    twice = world.api.client.get(f"{url}?tags=zzz&tags=t1", headers=ana.headers)
    assert error(twice) == (400, "ValidationError", ["tags"])
    long = world.api.client.get(f"{url}?tags={'a' * 2001}", headers=ana.headers)
    assert error(long) == (400, "ValidationError", ["tags"])


def carried_rules(services: Any, world: World) -> dict[str, list[str]]:
    """The access rule each entry's base row carries for its source items (private)."""
    store = services.bot_memory.repo._store
    page = store.query(bot_pool(world.bot["id"], world.org).pk, KeyRange(prefix="MEM#"))
    return {
        str(r["sk"]).removeprefix("MEM#"): list(r["itemRule"])
        for r in page.records
        if r.get("itemRule") is not None
    }


def test_a_fact_carries_its_items_rule_and_a_purge_takes_it_with_the_fact(
    world: World, services: Any
) -> None:
    ana, ben = world.ana, world.ben
    group = make_chat(world.api, ana, world.bot["id"], channelId=world.channel["id"])
    ana_item = world.said(ana, group, "I book the hotel.")
    ben_item = world.said(ben, group, "I book the flights.")
    learned = world.taught(
        group,
        fact("They book the trip.", ana_item, ben_item),
        fact("Ben books flights.", ben_item),
    )
    both_id, ben_id = entry_ids(learned)
    # The rule rides on each fact's own row, in its transaction.
    rule = [f"for:channel:{world.channel['id']}", f"org:{world.org}"]
    assert carried_rules(services, world) == {both_id: rule, ben_id: rule}
    # Private: no view shows it.
    assert all("itemRule" not in e for e in world.memory(ben))
    # Share reads it: the group's rule refuses everyone (without a rule: "no saved rule").
    refused = world.post(ben, "share", {"id": ben_id, "audience": "for:bot"})
    assert error(refused)[0] == 409
    assert "access rule does not admit" in refused.json()["error"]["message"]
    # Purging Ana takes the shared fact and its rule; Ben's fact keeps its own.
    assert world.post(ana, "purge", {"tag": f"from:{ana.id}"}).json() == {"removed": 1}
    assert carried_rules(services, world) == {ben_id: rule}
    assert world.post(ana, "purge", {"tag": f"chat:{group['id']}"}).json() == {"removed": 1}
    assert carried_rules(services, world) == {}
