"""The attacker's matrix for a linked Bot and for traces in bot memory (seed 002): a linked
organization is a separate tenant, who forgot an entry is shown to nobody, erasure takes the
memory learned from a person's words, and share answers one message for "not yours" and
"unknown".

Through HTTP, with the memory Bot's model scripted (tests/api/test_confide.py's fixtures):
Ana owns the Bot in the home organization, Ben reads it there, Eve and Fay use it through a
link, Gus is an admin of the linked organization.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory.domain.tasks.base import ModelRequest
from agent_memory.service import bot_memory_purge
from tests.conftest import Api, User
from tests.support.bots import (
    Script,
    World,
    error,
    make_bot,
    make_channel,
    make_chat,
    script,
    services,
    turn,
)

__all__ = ["script", "services"]  # the memory Bot fixtures


class Tenants(World):
    """World's home organization, plus a linked one with its own people."""

    def __init__(self, api: Api, script: Script) -> None:
        super().__init__(api, script=script)
        self.dee = api.user(self.org)
        self.bot = make_bot(api, self.ana, {self.ben.id: "read", self.dee.id: "read"})
        self.eve = api.user(self.other)
        self.fay = api.user(self.other)
        self.gus = api.user(self.other, role="admin")
        self.third = api.org()
        self.tom = api.user(self.third)

    def link(self, grants: dict[str, Any], org: str | None = None, by: User | None = None) -> Any:
        return self.api.client.post(
            f"/v1/bots/{self.bot['id']}/links",
            json={"organizationId": org or self.other, "grants": grants},
            headers=(by or self.ana).headers,
        )

    def memory_of(self, user: User, query: str = "") -> Any:
        return self.get(user, f"/v1/bots/{self.bot['id']}/memory{query}")

    def remember(self, user: User, content: str) -> str:
        answer = self.api.client.post(
            f"/v1/bots/{self.bot['id']}/memory",
            json={"command": {"_tag": "Remember", "content": content}},
            headers=user.headers,
        )
        assert answer.status_code == 200, answer.text
        return str(answer.json()["entry"]["id"])


@pytest.fixture
def tenants(api: Api, script: Script) -> Tenants:
    return Tenants(api, script)


def whole(answer: Any) -> tuple[int, dict[str, Any]]:
    return answer.status_code, answer.json()


# --- a linked organization is a separate tenant ---------------------------------------------


def test_link_errors_do_not_tell_another_organizations_ids(tenants: Tenants) -> None:
    t = tenants
    unknown_org = t.link({t.eve.id: "read"}, org="org_nowhere")
    unknown_person = t.link({"u_nobody": "read"})
    home_person = t.link({t.ben.id: "read"})
    third_person = t.link({t.tom.id: "read"})
    one_missing = t.link({t.eve.id: "read", "u_nobody": "read"})
    # One answer, word for word: none of them tells which id exists.
    answers = [whole(a) for a in (unknown_person, home_person, third_person, one_missing)]
    assert all(a == whole(unknown_org) for a in answers), answers
    assert error(unknown_org) == (404, "NotFound", ["organizationId"])
    # A new link without people is a 409 (the missing link decides it, not the body),
    # whether the organization exists or not.
    empty = [whole(t.link({}, org=org)) for org in (t.other, "org_nowhere")]
    removal_only = whole(t.link({t.eve.id: None}, org="org_nowhere"))
    assert empty[0] == empty[1] == removal_only
    assert empty[0][0] == 409
    assert empty[0][1]["error"]["path"] == ["grants"]
    # Nothing above linked anything: Eve does not reach the bot.
    assert t.get(t.eve, f"/v1/bots/{t.bot['id']}").status_code == 404
    assert t.link({t.eve.id: "read"}).status_code == 201


def test_a_links_grants_change_only_as_named(tenants: Tenants) -> None:
    t = tenants
    first = t.link({t.eve.id: "read", t.fay.id: "write"})
    assert first.status_code == 201, first.text
    assert first.json()["link"]["grants"] == {t.eve.id: "read", t.fay.id: "write"}
    # An empty map, or a map naming one person, leaves the others' grants as they are.
    again = t.link({})
    assert again.status_code == 201, again.text
    assert again.json()["link"]["grants"] == {t.eve.id: "read", t.fay.id: "write"}
    raised = t.link({t.eve.id: "write"})
    assert raised.json()["link"]["grants"] == {t.eve.id: "write", t.fay.id: "write"}
    for user in (t.eve, t.fay):
        assert t.get(user, f"/v1/bots/{t.bot['id']}").status_code == 200
    # A grant removed is a grant named.
    removed = t.link({t.eve.id: None})
    assert removed.status_code == 201, removed.text
    assert removed.json()["link"]["grants"] == {t.fay.id: "write"}
    assert t.get(t.eve, f"/v1/bots/{t.bot['id']}").status_code == 404
    assert t.get(t.fay, f"/v1/bots/{t.bot['id']}").status_code == 200
    assert error(t.link({t.fay.id: "admin"}))[::2] == (400, ["grants", t.fay.id])


def test_home_writers_purge_share_and_forget_only_home_entries(tenants: Tenants) -> None:
    t = tenants
    assert t.link({t.eve.id: "write", t.fay.id: "read"}).status_code == 201
    eves = t.remember(t.eve, "Eve's note.")
    anas = t.remember(t.ana, "Ana's note.")
    # The home organization's purge names the linked people and organization: nothing goes.
    for tag in (f"from:{t.eve.id}", f"org:{t.other}"):
        purged = t.post(t.ana, "purge", {"tag": tag})
        assert purged.status_code == 200, purged.text
        assert purged.json() == {"removed": 0}
    assert t.ids(t.eve) == {eves}
    # Share and Forget from home answer for Eve's entry as for an id that does not exist.
    for user in (t.ana, t.ben):
        shared = t.post(user, "share", {"id": eves, "audience": "for:bot"})
        made_up = t.post(user, "share", {"id": "mem_madeup", "audience": "for:bot"})
        assert whole(shared) == whole(made_up)
        assert error(shared)[:2] == (409, "EntryConflict")
        forgot = t.command(user, {"_tag": "Forget", "id": eves})
        unknown = t.command(user, {"_tag": "Forget", "id": "mem_madeup"})
        assert whole(forgot) == whole(unknown)
    assert t.ids(t.eve) == {eves}
    # A writer through the link may not purge; the linked organization's admin purges its
    # own memory only, grant or none.
    assert error(t.post(t.eve, "purge", {"tag": f"from:{t.eve.id}"}))[:2] == (403, "Forbidden")
    for tag in (f"from:{t.ana.id}", f"org:{t.org}"):
        assert t.post(t.gus, "purge", {"tag": tag}).json() == {"removed": 0}
    assert t.ids(t.ana) == {anas}
    gone = t.post(t.gus, "purge", {"tag": f"from:{t.eve.id}"})
    assert gone.status_code == 200, gone.text
    assert gone.json() == {"removed": 1}
    assert t.ids(t.eve) == set()
    assert t.ids(t.ana) == {anas}
    # The linked admin's reach is purge in their organization: not the bot's other routes.
    assert t.get(t.gus, f"/v1/bots/{t.bot['id']}").status_code == 404
    assert t.get(t.gus, f"/v1/bots/{t.bot['id']}/memory/bot").status_code == 404
    # An admin of an organization the bot is not linked to learns nothing.
    stranger = t.api.user(t.third, role="admin")
    assert t.post(stranger, "purge", {"tag": f"from:{t.eve.id}"}).status_code == 404


# --- traces ---------------------------------------------------------------------------------


def learn_each_person_and_together(request: ModelRequest) -> str:
    """A fact per person's item of the evidence, and one fact citing them all."""
    lines = [json.loads(line) for line in request.user.splitlines() if line.startswith("{")]
    said = [line for line in lines if line.get("role") == "user"]
    changes = [
        {"op": "fact", "content": f"Said {s['id']}.", "topics": [], "sources": [s["id"]]}
        for s in said
    ]
    if len(said) > 1:
        cited = [s["id"] for s in said]
        changes.append({"op": "fact", "content": "Said together.", "topics": [], "sources": cited})
    return json.dumps({"changes": changes})


def group_facts(t: Tenants, script: Script, cat: User) -> dict[str, dict[str, Any]]:
    """Facts learned in a group chat of Ana, Cat and Dee: one on Ana's words, one on Cat's,
    one on both; keyed by what they say."""
    script.answers["learning_changes"] = learn_each_person_and_together
    channel = make_channel(t.api, t.ana, cat, t.dee)
    chat = make_chat(t.api, t.ana, t.bot["id"], channelId=channel["id"])
    first = turn(t.api, t.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    t.complete(t.ana, chat, first)
    second = turn(t.api, cat, chat["id"], "I cycle.")["turn"]["id"]
    assert t.confide(cat, chat, second, "I was unsure.").status_code == 200
    t.complete(cat, chat, second)
    entries = {e["content"]: e for e in t.memory(cat)}
    assert set(entries) == {"Said i-01.", "Said i-02.", "Said together."}, entries
    return entries


def test_who_forgot_an_entry_is_shown_to_nobody(tenants: Tenants, script: Script) -> None:
    t, cat = tenants, tenants.ben
    together = group_facts(t, script, cat)["Said together."]["id"]
    forgot = t.command(t.ana, {"_tag": "Forget", "id": together})
    assert forgot.status_code == 200, forgot.text
    assert together not in t.ids(t.ana)
    [seen] = [e for e in t.memory(cat) if e["id"] == together]
    assert not [tag for tag in seen["tags"] if t.ana.id in tag], seen["tags"]
    # Nor can a reader ask for the entries someone forgot.
    asked = t.memory_of(cat, f"?tags=forgot:{t.ana.id}")
    assert error(asked) == (400, "ValidationError", ["tags", 0])


@pytest.mark.parametrize("room", [None, 4], ids=["one-transaction", "a-change-a-transaction"])
def test_erasure_takes_the_entries_on_a_persons_words_alone(
    tenants: Tenants, script: Script, room: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    t, cat = tenants, tenants.ben
    if room is not None:
        # One removal or one change per transaction: the erasure goes on until all is done.
        monkeypatch.setattr(bot_memory_purge, "PURGE_BATCH", 1)
        monkeypatch.setattr(bot_memory_purge, "PURGE_ROOM", room)
    entries = group_facts(t, script, cat)
    pinned = t.remember(t.ana, "My locker is 12.")
    boss = t.api.user(t.org, role="admin")
    url = f"/v1/organizations/{t.org}/users/{t.ana.id}/erase"
    erased = t.api.client.post(url, headers=boss.headers)
    assert erased.status_code == 200, erased.text
    # Ana's fact and her Remember go; the fact of both stays for Cat, without Ana.
    assert erased.json()["botEntries"] == 2
    left = {e["content"]: e for e in t.memory(cat)}
    assert set(left) == {"Said i-02.", "Said together."}
    assert {e["content"] for e in t.memory(t.dee)} == set(left)
    assert not [tag for e in left.values() for tag in e["tags"] if t.ana.id in tag]
    # Ana stays a user and a member of the group: she sees only Cat's words there.
    assert t.ids(t.ana) == {left["Said i-02."]["id"]}
    assert pinned not in {e["id"] for e in left.values()}
    assert entries["Said together."]["id"] == left["Said together."]["id"]
    again = t.api.client.post(url, headers=boss.headers)
    assert again.json()["botEntries"] == 0


def test_erasure_after_a_forget_leaves_nothing_of_the_person(
    tenants: Tenants, script: Script
) -> None:
    t, cat = tenants, tenants.ben
    entries = group_facts(t, script, cat)
    # Cat takes back his part of the fact of both: Ana is the only person behind it now.
    together = entries["Said together."]["id"]
    assert t.command(cat, {"_tag": "Forget", "id": together}).status_code == 200
    assert together in t.ids(t.dee)
    boss = t.api.user(t.org, role="admin")
    erased = t.api.client.post(
        f"/v1/organizations/{t.org}/users/{t.ana.id}/erase", headers=boss.headers
    )
    assert erased.json()["botEntries"] == 2
    assert {e["content"] for e in t.memory(t.dee)} == {"Said i-02."}
    assert {e["content"] for e in t.memory(cat)} == {"Said i-02."}


# --- one answer for "not yours" and "unknown" -----------------------------------------------


def test_share_answers_one_message_for_not_yours_and_unknown(tenants: Tenants) -> None:
    t = tenants
    anas = t.remember(t.ana, "Ana's note.")
    not_yours = t.post(t.ben, "share", {"id": anas, "audience": "for:bot"})
    unknown = t.post(t.ben, "share", {"id": "mem_madeup", "audience": "for:bot"})
    assert whole(not_yours) == whole(unknown)
    assert error(unknown) == (409, "EntryConflict", ["id"])


def test_the_home_organizations_instructions_never_steer_a_linked_organizations_memory_bot(
    tenants: Tenants, script: Script
) -> None:
    t = tenants
    rule = "Home rule: keep every decision of the team."
    patched = t.api.client.patch(
        f"/v1/bots/{t.bot['id']}/memory/bot",
        json={"expected": 0, "instructions": rule},
        headers=t.ana.headers,
    )
    assert patched.status_code == 200, patched.text
    assert t.link({t.eve.id: "read"}).status_code == 201
    linked_settings = t.api.client.patch(
        f"/v1/organizations/{t.other}/settings",
        json={"botMemoryModel": "openai/memory-bot"},
        headers=t.api.admin,
    )
    assert linked_settings.status_code == 200, linked_settings.text

    def asked_with_rule(user: User) -> list[bool]:
        chat = t.chat(user)
        started = turn(t.api, user, chat["id"], "We decided to ship on Friday.")
        turn_id = started["turn"]["id"]
        before = len(script.calls)
        assert t.confide(user, chat, turn_id, "I am unsure about Friday.").status_code == 200
        t.complete(user, chat, turn_id)
        return [rule in repr(call) for call in script.calls[before:]]

    at_home = asked_with_rule(t.ana)
    linked = asked_with_rule(t.eve)
    # Ana's confide and learning follow her organization's rule; Eve's follow none of it.
    assert at_home, at_home
    assert all(at_home), at_home
    assert linked, linked
    assert not any(linked), linked
