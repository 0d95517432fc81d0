"""Bot memory's service on the in-memory store, and a person of the organization."""

from __future__ import annotations

from agent_memory.adapters.in_memory import FakeCipher, FixedClock, InMemoryStore, SequentialIds
from agent_memory.domain.identity import Principal
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import BotMemoryRepository
from agent_memory.persistence.bots import BotRepository
from agent_memory.ports import Put
from agent_memory.service.bot_memory import BotMemoryService
from agent_memory.service.bots import BotService

ORG = "o1"


def bot_memory_world() -> tuple[BotMemoryService, InMemoryStore]:
    store, cipher = InMemoryStore(), FakeCipher()
    clock, ids = FixedClock(step_ms=1), SequentialIds()
    people = [Put({"pk": keys.user(p), "sk": keys.HEAD, "orgId": ORG}) for p in PEOPLE]
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
