"""Bot memory's service on the in-memory store, a person of the organization, and the memory
Bot learning over it (`MemoryBot`; over HTTP: `tests.support.bots.World.taught`)."""

from __future__ import annotations

from typing import Any

from agent_memory.adapters.models import ModelCatalogImpl
from agent_memory.adapters.rules_model import NAME as RULES_NAME
from agent_memory.domain.entries import EntryMeta, EntrySource
from agent_memory.domain.identity import Principal
from agent_memory.domain.tasks.learning_changes import LearningChanges
from agent_memory.persistence import keys
from agent_memory.persistence.bot_memory import BotMemoryRepository
from agent_memory.persistence.bots import BotRepository
from agent_memory.persistence.memory_bot import BotSettingsRepository, MemoryBotRepository
from agent_memory.ports import Put
from agent_memory.service.bot_learning import BotLearningPool, pool_ref
from agent_memory.service.bot_memory import BotMemoryService
from agent_memory.service.bots import BotService
from agent_memory.service.learning_pools import Evidence, Outcome, apply_cycle
from agent_memory.service.memory_bot_calls import RequestCalls
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


class EveryOrg:
    """Organization settings where the memory Bot learns with a model this deployment runs
    (the model's answer is given, so it is never asked)."""

    def effective(self, org_id: str) -> dict[str, Any]:
        return {"botMemory": True, "botMemoryModel": RULES_NAME}


class MemoryBot:
    """The memory Bot's learning pool over bot memory's service (`bot_memory_world`'s, or
    the wired one), driven as the learning steps drive it with the model's answer given:
    `read` is LoadEvidence (a Chat's unread items of ended Turns), `apply` is ApplyLearning
    through the pool engine (`apply_cycle`)."""

    def __init__(self, memory: BotMemoryService) -> None:
        self.memory = memory
        self.store = store = memory.repo._store
        repo = MemoryBotRepository(store, memory.repo._cipher)
        calls = RequestCalls(BotSettingsRepository(store), repo, ModelCatalogImpl(), memory.clock)
        self.pool = BotLearningPool(memory, repo, EveryOrg(), calls)

    def read(self, chat_id: str) -> Evidence[Any]:
        """The run a Turn of the Chat's owner starts once every Turn of the Chat ended."""
        bots = self.memory.bots
        chat = bots.repo.get_chat(chat_id)
        assert chat is not None
        owner = Principal(chat.owner, chat.org_id, "admin")
        bots.begin_turn(owner, chat_id, "Noted.")
        turns = {(i.turn_id, i.actor or chat.owner) for i, _text in bots.items(owner, chat_id)}
        for turn_id, actor in sorted(turns):
            bots.finish_turn(Principal(actor, chat.org_id, "admin"), chat_id, turn_id)
        evidence = self.pool.load_evidence(pool_ref(chat), None)
        assert evidence is not None
        return evidence

    def apply(self, evidence: Evidence[Any], *changes: Any) -> Outcome:
        answer = LearningChanges(changes=list(changes))
        return apply_cycle(self.store, self.pool, evidence, answer, lambda _outcome: ())

    def learn(self, chat_id: str, *changes: Any) -> Outcome:
        """`changes` learned by a run of the Chat: its applied and refused changes."""
        return self.apply(self.read(chat_id), *changes)

    @staticmethod
    def ids(outcome: Outcome) -> list[str]:
        """The entries `outcome` wrote, in its answer's order."""
        return [a["key"] for a in outcome.applied]


def entry(entry_id: str, *tags: str, sources: tuple[str, ...] = ()) -> EntryMeta:
    """An entry's metadata with its tags and the entries it stands on."""
    return EntryMeta(
        id=entry_id, tags=tags, sources=tuple(EntrySource(s) for s in sources), length=1
    )


def said(memory: BotMemoryService, who: Principal, chat_id: str, text: str) -> str:
    """A Turn of `who` in the Chat, left open; its input item's id."""
    _chat, started = memory.bots.begin_turn(who, chat_id, text)
    item = memory.bots.items(who, chat_id)[-1][0]
    assert item.turn_id == started.id
    return item.id


def principal_of(user: str) -> Principal:
    # Organization admins hold write on the bot; it still gives them no one else's memory.
    return Principal(user, ORG, "admin")


PEOPLE = ("ana", "ben", "cy", "dee")
