"""The bot turn's enrichment refuses an entry a change took away while the model worked,
even when the change commits inside the enrichment's own read of the pool. (How many reads
the bot turn makes is a target of `bench/confide.py`.)
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api.app import create_app
from agent_memory.persistence.bot_memory import MARKS_AND_HEAD, pool_pk
from tests.support.bots import Script, World, script, services, turn, world
from tests.support.enrichment import enrichment_calls, remember, rewrite_with_all, shown_entries

__all__ = ["script", "services", "world"]  # the memory Bot fixtures of test_confide


def test_a_forget_committing_inside_the_enrichments_pool_read_voids_the_rewrite(
    world: World, script: Script, services: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The enrichment reads the head, then the entries its readers may see (rows as they were
    before the Forget); the Forget commits before the Query answers, so the model is shown the
    entry, uses it, and the version read after its answer has moved: the fresh snapshot no
    longer shows the entry, and the input stays the person's words."""
    entry = remember(world, world.ana, "I take the 8:10 train to Berlin.")
    pool = pool_pk(world.bot["id"], world.org)
    store = adapters.store
    query = store.query
    armed = {"on": False}
    with TestClient(create_app(lambda: services), raise_server_exceptions=False) as other:

        def racing_query(pk: str, key_range: Any = None, **kwargs: Any) -> Any:
            page = query(pk, key_range, **kwargs)
            # The first read after the head: the person's audience rows (ADR 0083).
            if armed["on"] and pk == pool and key_range != MARKS_AND_HEAD:
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
