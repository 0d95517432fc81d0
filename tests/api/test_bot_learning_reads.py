"""The reads of a Bot's learning executions (`GET /v1/bots/{botId}/learning`, API.md "Bot
memory"): one Query of the pool's executions, which also tells the Turn each run waits for."""

from __future__ import annotations

from typing import Any

from tests.conftest import User
from tests.support.bots import Script, World, fact_from_person, script, services, turn, world

__all__ = ["script", "services", "world"]  # the memory Bot fixtures of test_confide


def test_a_bots_executions_are_listed_with_one_query(
    world: World, script: Script, adapters: Any
) -> None:
    script.answers["learning_changes"] = fact_from_person
    chat = world.chat(world.ana)
    done = turn(world.api, world.ana, chat["id"], "I take the 8:10 train.")["turn"]["id"]
    world.confide(world.ana, chat, done, "x")
    world.complete(world.ana, chat, done)
    waits = turn(world.api, world.ana, chat["id"], "And I cycle home.")["turn"]["id"]
    world.confide(world.ana, chat, waits, "y")
    events = adapters.store._client.meta.events

    def listed(user: User) -> tuple[list[dict[str, Any]], int]:
        queries: list[str] = []

        def count(**_: Any) -> None:
            queries.append("Query")

        events.register("before-call.dynamodb.Query", count)
        try:
            return world.executions(user), len(queries)
        finally:
            events.unregister("before-call.dynamodb.Query", count)

    shown, queries = listed(world.ana)
    runs = [(e["status"], e["chatId"], e["turnId"]) for e in shown]
    assert runs == [("waiting", chat["id"], waits), ("succeeded", chat["id"], done)]
    assert queries == 1
    # Ben reads the Bot and owns none of its Chats: no run is his, read in as few requests.
    assert listed(world.ben) == ([], 1)
