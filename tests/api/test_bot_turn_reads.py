"""The bot pool's reads on the bot turn: the enrichment reads the pool's head once
before its entries (no second head read) and still refuses an entry a change took away while
the model worked, the change committing even inside the pool's Query; LoadEvidence reads the
Chat row with its read position in one batch read and the pool in one Query, no head read.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import pool_pk
from agent_memory.persistence.bot_rows import chat_pk
from agent_memory.persistence.positions import position_sk
from agent_memory.service.bot_learning import learning_pool_id
from agent_memory.service.learning_pools import PoolRef, SourceRef
from tests.support.bots import Script, World, script, services, turn, world
from tests.support.enrichment import enrichment_calls, remember, rewrite_with_all, shown_entries

__all__ = ["script", "services", "world"]  # the memory Bot fixtures of test_confide


class Calls:
    """Every read of the store, as (method, pk, sort keys or range) in order."""

    def __init__(self, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, Any]] = []
        get, get_many, query = store.get, store.get_many, store.query

        def counted_get(pk: str, sk: str, *args: Any, **kwargs: Any) -> Any:
            self.seen.append(("get", (pk, sk)))
            return get(pk, sk, *args, **kwargs)

        def counted_get_many(wanted: Any, *args: Any, **kwargs: Any) -> Any:
            self.seen.append(("get_many", frozenset(wanted)))
            return get_many(wanted, *args, **kwargs)

        def counted_query(pk: str, key_range: Any = None, **kwargs: Any) -> Any:
            self.seen.append(("query", (pk, key_range)))
            return query(pk, key_range, **kwargs)

        monkeypatch.setattr(store, "get", counted_get)
        monkeypatch.setattr(store, "get_many", counted_get_many)
        monkeypatch.setattr(store, "query", counted_query)


def test_a_forget_committing_inside_the_enrichments_pool_read_voids_the_rewrite(
    world: World, script: Script, services: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The enrichment reads the head, then the entries (rows as they were before the Forget);
    the Forget commits before the Query answers, so the model is shown the entry, uses it, and
    the version read after its answer has moved: the fresh snapshot no longer shows the entry,
    and the input stays the person's words."""
    entry = remember(world, world.ana, "I take the 8:10 train to Berlin.")
    pool = pool_pk(world.bot["id"], world.org)
    store = adapters.store
    query = store.query
    armed = {"on": False}
    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as other:

        def racing_query(pk: str, key_range: Any = None, **kwargs: Any) -> Any:
            page = query(pk, key_range, **kwargs)
            if armed["on"] and pk == pool and key_range == keys.POOL_RANGE:
                armed["on"] = False  # the Forget's own reads go through untouched
                forgot = other.post(
                    f"/v1/bots/{world.bot['id']}/memory",
                    json={"command": {"_tag": "Forget", "id": entry}},
                    headers=world.ana.headers,
                )
                assert forgot.status_code == 200, forgot.text
            return page

        monkeypatch.setattr(store, "query", racing_query)
        script.answers["enrichment"] = rewrite_with_all
        chat = world.chat(world.ana)
        armed["on"] = True
        started = turn(world.api, world.ana, chat["id"], "Book my train for Friday.")
    assert not armed["on"], "the enrichment read the pool"
    # The model saw the entry as the Query read it, and used it; the rewrite is refused.
    assert [e["id"] for e in shown_entries(enrichment_calls(script)[0])] == [entry]
    assert (started["input"], started["enriched"]) == ("Book my train for Friday.", False)
    assert world.get(world.ana, f"/v1/chats/{chat['id']}/enrichments").json() == {"enrichments": []}


def test_an_enrichment_reads_the_pools_head_before_its_entries_and_after_the_model(
    world: World, script: Script, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unraced: one head read before the Query, one after the model answered, the rewrite
    given (the version did not move)."""
    entry = remember(world, world.ana, "I take the 8:10 train to Berlin.")
    script.answers["enrichment"] = rewrite_with_all
    chat = world.chat(world.ana)
    pool = pool_pk(world.bot["id"], world.org)
    calls = Calls(adapters.store, monkeypatch)
    started = turn(world.api, world.ana, chat["id"], "Book my train for Friday.")
    assert started["enriched"] is True
    assert [e["id"] for e in shown_entries(enrichment_calls(script)[0])] == [entry]
    of_pool = [
        (method, what)
        for method, what in calls.seen
        if (method != "get_many" and what[0] == pool)
        or (method == "get_many" and any(pk == pool for pk, _sk in what))
    ]
    head = ("get", (pool, keys.HEAD))
    assert of_pool == [head, ("query", (pool, keys.POOL_RANGE)), head]


def test_load_evidence_reads_the_chat_with_its_position_and_the_pool_in_one_query(
    world: World, script: Script, services: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(world, world.ana, "I take the 8:10 train to Berlin.")
    script.answers["enrichment"] = {"input": None, "used": []}
    chat = world.chat(world.ana)
    started = turn(world.api, world.ana, chat["id"], "I moved to Hamburg.")
    world.complete(world.ana, chat, started["turn"]["id"])  # an open Turn's items wait
    bot_id = world.bot["id"]
    ref = PoolRef(
        "bot", world.org, learning_pool_id(bot_id, world.org), SourceRef("session", chat["id"])
    )
    pool = pool_pk(bot_id, world.org)
    calls = Calls(adapters.store, monkeypatch)
    evidence = services.learning._pool("bot").load_evidence(ref, None)
    assert evidence is not None
    assert [i.content for i in evidence.items] == ["I moved to Hamburg."]
    assert [e.content for e in evidence.detail.entries] == ["I take the 8:10 train to Berlin."]
    # The Chat row and its read position first, in one batch read.
    assert calls.seen[0] == (
        "get_many",
        frozenset({(chat_pk(chat["id"]), keys.HEAD), (pool, position_sk(chat["id"]))}),
    )
    # The pool: one Query of its entries and head, and no read of its head row alone.
    assert [w for m, w in calls.seen if m == "query" and w[0] == pool] == [(pool, keys.POOL_RANGE)]
    assert ("get", (pool, keys.HEAD)) not in calls.seen
    assert not any(m == "get_many" and (pool, keys.HEAD) in w for m, w in calls.seen)
    # Chat and position, the organization, the memory Bot's settings and spend, the
    # Chat's items, their Turns, the pool: six calls.
    assert len(calls.seen) == 6, calls.seen
