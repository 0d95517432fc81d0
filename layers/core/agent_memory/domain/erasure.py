"""Deleting a session or an agent, and erasing one person from an organization: who may,
and what an erasure answers.

- A session is deleted by its owner or an organization admin ("own"); anyone else gets
  the session's usual answer (404: sessions are private).
- An agent is deleted by its owner or an organization admin; its members get 403 (they
  know it exists), anyone else 404.
- A person is erased by an administrator of their organization (or the service admin):
  every session they own, with its items, executions and saved calls; their threads with
  messages, working memory and recall vectors; the bot memory entries that stand on their
  words (`from:<userId>`, and the conclusions built on them) in every bot the organization
  uses, as a bot memory purge removes them. Agent memory learned from their sessions
  stays, as seed 002 keeps a chat's memory until it is purged: it is the agent's, and
  forgetting it is a separate, explicit command.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.domain.access import Action

DELETE_SESSION: Action = "own"
DELETE_AGENT: Action = "own"
USER_NOT_FOUND = "user not found"


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

    def add(self, other: Erased) -> None:
        self.sessions += other.sessions
        self.items += other.items
        self.threads += other.threads
        self.messages += other.messages
        self.working_memory += other.working_memory
        self.bot_entries += other.bot_entries
