"""Semantic recall over HTTP (seed 003 "Long-term recall", API.md "Threads"): saved messages
are embedded in the background (the learning workflow, run inline here) by the real local
model, and the turn context recalls the closest with their range and score: across the
user's threads (scope resource) or this one (scope thread), never another user's, never the
last N already in the context; deleted messages are not recalled."""

from __future__ import annotations

from typing import Any

# The fixtures of the thread tests: the inline learning workflow, the world of two users.
from tests.support.threads import (
    CHAT,
    World,
    ask,
    assistant,
    contents,
    recall_on,
    services,
    titler,
    user,
    world,
)

__all__ = ["services", "titler", "world"]


def test_recall_across_the_users_threads_with_the_range(world: World) -> None:
    recall_on(world, topK=1, messageRange={"before": 1, "after": 0}, last=2)
    past = world.thread()
    assert world.save(past, *CHAT).status_code == 200
    now = world.thread()
    context = ask(world, now, "What is the name of my pet?")
    [group] = context["recalled"]
    assert group["threadId"] == past
    # The hit (the Miso message, or the answer embedded with it) and the one before it.
    shown = contents(group)
    assert len(shown) == 2
    assert "I adopted a cat named Miso last spring." in shown
    assert shown == [m["content"] for m in CHAT if m["content"] in shown]
    assert group["score"] > 0
    assert {"id", "role", "content", "createdAt"} <= set(group["messages"][0])


def test_top_k_and_the_default_range(world: World) -> None:
    recall_on(world, topK=2, messageRange=0)
    past = world.thread()
    world.save(past, *CHAT)
    context = ask(world, world.thread(), "Where does my sister live?")
    recalled = [m for g in context["recalled"] for m in contents(g)]
    assert len(recalled) == 2
    assert recalled[0] == "My sister Ana lives in Lisbon."


def test_top_k_counts_windows_that_show_something_new(world: World) -> None:
    recall_on(world, topK=2, messageRange=1)
    past = world.thread()
    chat = [
        user("My neighbour has a dog called Rex."),
        assistant("Dogs are loyal."),
        user("My sister Ana lives in Lisbon."),
        assistant("Lisbon is lovely."),
        user("I started learning the cello in March."),
        assistant("Music lessons take patience."),
        user("I adopted a cat named Miso last spring."),
        assistant("Miso the cat sounds adorable."),
        user("My favourite food is spicy ramen."),
        assistant("Noted."),
    ]
    world.save(past, *chat)
    context = ask(world, world.thread(), "What is the name of my cat?")
    # The answer about Miso lies in the Miso message's window: it is no second recall, so
    # topK 2 brings a second place of the conversation, not the same one twice.
    groups = [contents(g) for g in context["recalled"]]
    assert len(groups) == 2, groups
    assert "I adopted a cat named Miso last spring." in groups[0]
    assert "Miso the cat sounds adorable." in groups[0]
    assert not set(groups[0]) & set(groups[1])


def test_scope_thread_recalls_this_thread_only(world: World) -> None:
    recall_on(world, topK=3, messageRange=0, scope="thread", last=1)
    past = world.thread()
    world.save(past, *CHAT)
    here = world.thread()
    world.save(here, user("We talked about my garden tomatoes."), assistant("They grow well."))
    context = ask(world, here, "What did I say about cats?")
    assert context["recalled"], context
    assert {g["threadId"] for g in context["recalled"]} == {here}


def test_never_the_last_n_messages(world: World) -> None:
    recall_on(world, topK=5, messageRange=1, last=2)
    thread = world.thread()
    world.save(thread, *CHAT)
    context = ask(world, thread, "What is my favourite food?")
    last_two = {m["content"] for m in context["messages"]}
    assert last_two == {"My favourite food is spicy ramen.", "Noted."}
    shown = {c for g in context["recalled"] for c in contents(g)}
    assert shown
    assert not shown & last_two


def test_never_another_users_messages(world: World) -> None:
    # A batch of one message: each save is indexed by its own run.
    recall_on(world, topK=5, messageRange=2, last=1)
    theirs = world.thread(world.member)
    world.save(theirs, user("My cat is called Pixel."), user=world.member)
    mine = world.thread()
    context = ask(world, mine, "What is my cat called?")
    assert context["recalled"] == []
    their_context = ask(world, world.thread(world.member), "What is my cat called?", world.member)
    assert {c for g in their_context["recalled"] for c in contents(g)} == {
        "My cat is called Pixel."
    }


def test_off_by_default_and_deleted_messages_are_forgotten(world: World) -> None:
    past = world.thread()
    world.save(past, *CHAT)
    assert ask(world, world.thread(), "What is my pet called?")["recalled"] == []
    recall_on(world, topK=1, messageRange=0, last=1)
    thread = world.thread()
    world.save(thread, user("My passport number ends in 42."))
    later = world.thread()
    first = ask(world, later, "What does my passport number end in?")
    assert contents(first["recalled"][0]) == ["My passport number ends in 42."]
    client, headers = world.api.client, world.owner.headers
    assert client.delete(f"/v1/threads/{thread}/messages/last", headers=headers).status_code == 200
    again = ask(world, later, "What does my passport number end in?")
    assert "My passport number ends in 42." not in {
        c for g in again["recalled"] for c in contents(g)
    }
    world.save(thread, user("My locker code is 1234."))
    assert client.delete(f"/v1/threads/{thread}/messages", headers=headers).status_code == 204
    cleared = ask(world, later, "What is my locker code?")
    assert thread not in {g["threadId"] for g in cleared["recalled"]}


def test_no_message_recalls_nothing(world: World) -> None:
    recall_on(world)
    world.save(world.thread(), *CHAT)
    thread = world.thread()
    for body in (None, {}, {"message": None}):
        answer = world.api.client.post(
            f"/v1/threads/{thread}/context", json=body, headers=world.owner.headers
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["recalled"] == []


# --- agent memories by meaning (seed 004) -------------------------------------------------


def test_agent_memories_recall_by_meaning_ties_by_importance(api: Any) -> None:
    from tests.support.memory_objects import URL, create, recall

    ana = api.user(api.org())
    bob = api.user(api.org())
    create(api, ana, content="The customer prefers invoices by email.", importance=0.1)
    shipping = create(api, ana, content="Orders ship from the Lyon warehouse.", importance=0.2)
    create(api, ana, content="The support line opens at 9am.", importance=0.9)
    twin = create(api, ana, content="Orders ship from the Lyon warehouse.", importance=0.8)
    create(api, bob, content="Orders ship from the Oslo warehouse.", importance=1.0)
    by_meaning = recall(api, ana, limit=2, query="Where are packages sent from?")
    assert [m["id"] for m in by_meaning["data"]] == [twin["id"], shipping["id"]]
    by_importance = recall(api, ana, limit=1)
    assert by_importance["data"][0]["content"] == "The support line opens at 9am."
    client = api.client
    assert client.delete(f"{URL}/{twin['id']}", headers=ana.headers).status_code == 200
    after = recall(api, ana, limit=1, query="Where are packages sent from?")
    assert [m["id"] for m in after["data"]] == [shipping["id"]]
    edited = client.patch(
        f"{URL}/{shipping['id']}", json={"content": "Invoices go out monthly."}, headers=ana.headers
    )
    assert edited.status_code == 200, edited.text
    invoices = recall(api, ana, limit=2, query="How are invoices sent?")
    assert {m["content"] for m in invoices["data"]} == {
        "The customer prefers invoices by email.",
        "Invoices go out monthly.",
    }
