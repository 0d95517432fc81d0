"""A thread-scope working-memory PUT racing the thread's delete: no notes outlive the
thread (the PUT that lands after the delete began answers 404 and stores nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.domain import threads as rules
from agent_memory.domain.identity import Principal
from agent_memory.persistence.keys import thread_pk
from tests.support.threads import World, services, titler, world

__all__ = ["services", "titler", "world"]  # the fixtures this module uses


def test_a_put_that_loses_to_the_threads_delete_stores_nothing(
    world: World, services: Any, adapters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.activate({"workingMemory": {"scope": "thread"}})
    thread = world.thread()
    checked = rules.check_working_memory

    def delete_meanwhile(content: Any, options: Any) -> str:
        # The PUT has read the thread; its delete runs before the notes are written.
        services.erasure.delete_thread(
            Principal(world.owner.id, world.owner.org_id, "member"), thread
        )
        return checked(content, options)

    monkeypatch.setattr(rules, "check_working_memory", delete_meanwhile)
    put = world.api.client.put(
        f"/v1/threads/{thread}/working-memory",
        json={"content": "note"},
        headers=world.owner.headers,
    )
    assert put.status_code == 404
    assert adapters.store.query(thread_pk(thread)).records == []
