"""The services one process serves, built once per cold start by `bootstrap`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

# For the annotations only: a family's function imports the services its routers use,
# not all of them (docs/decisions.md, "One function per API family").
if TYPE_CHECKING:
    from agent_memory.config import Settings
    from agent_memory.service.agent_memory import AgentMemoryService
    from agent_memory.service.agent_versions import AgentVersionService
    from agent_memory.service.agents import AgentService
    from agent_memory.service.bot_memory import BotMemoryService
    from agent_memory.service.bots import BotService
    from agent_memory.service.capabilities import CapabilitiesService
    from agent_memory.service.erasure import ErasureService
    from agent_memory.service.events import EventService
    from agent_memory.service.identity import IdentityService
    from agent_memory.service.learning import LearningService
    from agent_memory.service.limits import RequestLimits
    from agent_memory.service.memory_bot import MemoryBotService
    from agent_memory.service.memory_objects import MemoryObjectService
    from agent_memory.service.org_settings import OrgSettingsService
    from agent_memory.service.session_memory import SessionMemoryService
    from agent_memory.service.sessions import SessionService
    from agent_memory.service.threads import ThreadService


@dataclass
class Services:
    settings: Settings
    identity: IdentityService
    org_settings: OrgSettingsService
    memory_objects: MemoryObjectService
    learning: LearningService
    agents: AgentService
    sessions: SessionService
    session_memory: SessionMemoryService
    agent_memory: AgentMemoryService
    bots: BotService
    bot_memory: BotMemoryService
    memory_bot: MemoryBotService
    agent_versions: AgentVersionService
    threads: ThreadService
    events: EventService
    # Requests per token (RATE_LIMIT_PER_MINUTE); None: not limited.
    limits: RequestLimits | None = None
    # Deleting sessions and agents, erasing a person.
    erasure: ErasureService | None = None
    # What this deployment can run (`GET /v1/capabilities`).
    capabilities: CapabilitiesService | None = None
