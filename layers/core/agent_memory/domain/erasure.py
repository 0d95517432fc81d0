"""Deleting a session or an agent, and erasing one person from an organization: who may,
what goes, and what an erasure answers.

- A session is deleted by its owner or an organization admin ("own"); anyone else gets
  the session's usual answer (404: sessions are private).
- An agent is deleted by its owner or an organization admin; its members get 403 (they
  know it exists), anyone else 404. Its sessions (everyone's), its threads (everyone's,
  with messages, observations, working memory and recall vectors), its memory, versions
  and executions go with it.
- A person is erased by an administrator of their organization (or the service admin).
  What is theirs goes: the agents they own (as a delete of each), their sessions under
  others' agents, the chats they own (items, turns, confessions, enrichments, learning
  runs), their threads, the agent_memories about them (`entity` an `actor` with their id),
  and in every bot the organization uses the entries that stand on their words
  (`from:<userId>`, and the conclusions built on them), as a bot memory purge removes them.
  What is shared and owned by others stays: others' agents (with others' sessions), others'
  chats (group chats included), agent memory learned from their sessions (it is the
  agent's; forgetting is its own command, as seed 002 keeps a chat's memory until purged),
  agent_memories about anything else (the organization's notes, whoever wrote them).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from agent_memory.domain.access import Action

DELETE_SESSION: Action = "own"
DELETE_AGENT: Action = "own"
USER_NOT_FOUND = "user not found"


# The entity type of a person in seed 004 (`account`, `actor`, `entity`): a memory whose
# entity is an actor with a person's id is about that person.
PERSON_ENTITY = "actor"


def about_person(entity: tuple[str, str] | None, user_id: str) -> bool:
    """Whether an agent_memory's entity ((type, id), or None) is the person `user_id`."""
    return entity == (PERSON_ENTITY, user_id)


@dataclass
class Erased:
    """What one call removed, by what a person would call it. A repeated call finishes
    what an interrupted one left and counts only what it removed itself."""

    sessions: int = 0
    items: int = 0
    threads: int = 0
    messages: int = 0
    working_memory: int = 0
    bot_entries: int = 0
    agents: int = 0
    observations: int = 0
    chats: int = 0
    chat_items: int = 0
    agent_memories: int = 0

    def add(self, other: Erased) -> None:
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))
