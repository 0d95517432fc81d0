"""What agent memory and session memory answer alike: the memory text, and the bound a
Remember's content is documented with (API.md, "Agents and sessions")."""

from __future__ import annotations

from agent_memory.api.contracts.base import Answer
from agent_memory.domain.pool_limits import KEYED_POOL_CONTENT, KEYED_POOL_ENTRIES

POOL_BOUND = (
    f"A memory holds at most {KEYED_POOL_ENTRIES} entries and "
    f"{KEYED_POOL_CONTENT} characters of content (retracted entries count): a Remember "
    "that would pass either is 413 TooLarge."
)


class MemoryText(Answer):
    text: str
    keys: list[str]
    length: int
    maxLength: int
