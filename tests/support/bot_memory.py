"""Bot memory's service on the in-memory store, and a person of the organization."""

from __future__ import annotations

from typing import Any

from agent_memory.domain.identity import Principal
from agent_memory.domain.tasks.learning_changes import (
    FactChange,
)
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import BotMemoryRepository
from agent_memory.persistence.bots import BotRepository
from agent_memory.ports import Put
from agent_memory.service.bot_memory import BotMemoryService
from agent_memory.service.bots import BotService
from tests.conftest import Api, User
from tests.support.bots import make_bot, make_channel, turn
from tests.support.in_memory import FakeCipher, FixedClock, InMemoryStore, SequentialIds

ORG = "o1"


def bot_memory_world() -> tuple[BotMemoryService, InMemoryStore]:
    store, cipher = InMemoryStore(), FakeCipher()
    clock, ids = FixedClock(step_ms=1), SequentialIds()
    people = [Put({"pk": keys.user(ORG, p), "sk": keys.HEAD}) for p in PEOPLE]
    store.write(people)
    bots = BotService(BotRepository(store, cipher), clock, ids)
    memory = BotMemoryService(
        BotMemoryRepository(store, cipher), bots, clock, ids, max_text_length=8000
    )
    return memory, store


def principal_of(user: str) -> Principal:
    # Organization admins hold write on the bot; it still gives them no one else's memory.
    return Principal(user, ORG, "admin")


PEOPLE = ("ana", "ben", "cy", "dee")


class World:
    def __init__(self, api: Api, services: Any) -> None:
        self.api = api
        self.services = services
        self.org = api.org()
        self.other = api.org()
        self.ana = api.user(self.org)
        self.ben = api.user(self.org)
        self.cy = api.user(self.org)
        self.dee = api.user(self.org)
        self.olga = api.user(self.other)
        self.bot = make_bot(
            api, self.ana, {self.ben.id: "read", self.cy.id: "read", self.dee.id: "read"}
        )
        self.channel = make_channel(api, self.ana, self.ben, self.cy)

    def memory(self, user: User, tags: str | None = None) -> dict[str, Any]:
        url = f"/v1/bots/{self.bot['id']}/memory" + (f"?tags={tags}" if tags else "")
        answer = self.api.client.get(url, headers=user.headers)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def ids(self, user: User) -> set[str]:
        return {e["id"] for e in self.memory(user)["entries"]}

    def command(self, user: User, command: dict[str, Any]) -> Any:
        return self.api.client.post(
            f"/v1/bots/{self.bot['id']}/memory", json={"command": command}, headers=user.headers
        )

    def learn(self, chat: dict[str, Any], *changes: Any, org: str | None = None) -> Any:
        """Changes learned as a run whose evidence is the items its facts cite."""
        cited = [s for c in changes if isinstance(c, FactChange) for s in c.sources]
        return self.services.bot_memory.learn(
            self.bot["id"], org or self.org, chat["id"], list(changes), evidence=cited
        )

    def said(self, user: User, chat: dict[str, Any], text: str) -> str:
        """A turn of `user` in `chat`; answers its input item's id."""
        started = turn(self.api, user, chat["id"], text)
        items = self.api.client.get(f"/v1/chats/{chat['id']}/items", headers=user.headers)
        mine = [i for i in items.json()["items"] if i["turnId"] == started["turn"]["id"]]
        return str(mine[0]["id"])

    def post(self, user: User, path: str, body: dict[str, Any]) -> Any:
        return self.api.client.post(
            f"/v1/bots/{self.bot['id']}/memory/{path}", json=body, headers=user.headers
        )
