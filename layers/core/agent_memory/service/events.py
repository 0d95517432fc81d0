"""The events feed: the caller's organization's changes the caller may see.

Visibility is decided at read time by the access rule of the object an event names; a page
whose events were all hidden still moves the cursor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent_memory.domain import events as feed
from agent_memory.domain.bots import BOTS_BELONG_TO_A_PERSON
from agent_memory.domain.bounds import MAX_EVENT_PAGE
from agent_memory.domain.errors import Forbidden, NotFound, ValidationFailed
from agent_memory.domain.events import Event, EventPage, Subject
from agent_memory.domain.identity import Principal, person_of
from agent_memory.persistence.events import EventRepository
from agent_memory.persistence.threads import ThreadRepository
from agent_memory.ports import Clock
from agent_memory.service.agents import AgentService
from agent_memory.service.bots import BotService
from agent_memory.service.sessions import SessionAccess


@dataclass(eq=False)
class EventService:
    repo: EventRepository
    clock: Clock
    sessions: SessionAccess
    agents: AgentService
    bots: BotService
    threads: ThreadRepository

    def page(self, principal: Principal, after: str | None, limit: int) -> EventPage:
        """At most `limit` events after `after` that the caller may see."""
        user_id, org_id = person_of(principal, BOTS_BELONG_TO_A_PERSON)
        if not 1 <= limit <= MAX_EVENT_PAGE:
            raise ValidationFailed(f"limit is 1..{MAX_EVENT_PAGE}", ["limit"])
        cursor = feed.decode(after, org_id, user_id)
        now = self.clock.now_ms()
        read = self.repo.after(org_id, cursor.position, feed.read_size(cursor, limit))
        fresh, following = feed.advance(cursor, read, now, limit)
        known: dict[Subject, bool] = {}
        shown: list[Event] = []
        for event in fresh:
            found = feed.subject(event)
            if found is not None and found not in known:
                known[found] = self._sees(principal, user_id, org_id, found)
            if found is not None and known[found]:
                shown.append(event)
        return EventPage(shown, feed.encode(following), user_id)

    def _sees(self, principal: Principal, user_id: str, org_id: str, found: Subject) -> bool:
        if found.rule == "resource":
            return found.id == user_id
        if found.rule == "thread":
            stored = self.threads.get(found.id)
            return stored is not None and stored.thread.resource_id == user_id
        if found.rule == "session":
            return _allowed(lambda: self.sessions.load(principal, found.id, "read"))
        if found.rule == "agent":
            return _allowed(lambda: self.agents.get(principal, found.id))
        if found.rule == "organization":
            return True  # the feed is the caller's organization's: every person reads them
        level = self._bot_level(principal, found.id, org_id)
        if found.rule == "bot":
            return level is not None
        # As the bot's learning listing: a writer, or the owner of its chat.
        return level == "write" or (level is not None and self._owns_chat(user_id, found.chat))

    def _bot_level(self, principal: Principal, bot_id: str, org_id: str) -> str | None:
        try:
            _bot, reach = self.bots.reach(principal, bot_id, "read")
        except (NotFound, Forbidden):
            return None
        return reach.level if reach.org_id == org_id else None

    def _owns_chat(self, user_id: str, chat_id: str | None) -> bool:
        if chat_id is None:
            return False
        chat = self.bots.repo.get_chat(chat_id)
        return chat is not None and chat.owner == user_id


def _allowed(load: Callable[[], object]) -> bool:
    try:
        load()
    except (NotFound, Forbidden):
        return False
    return True
