"""The services one process serves, each built when a request first needs it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

# A family's function imports only the services its routers use.
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


class Services(Protocol):
    @property
    def settings(self) -> Settings: ...
    @property
    def identity(self) -> IdentityService: ...
    @property
    def org_settings(self) -> OrgSettingsService: ...
    @property
    def memory_objects(self) -> MemoryObjectService: ...
    @property
    def learning(self) -> LearningService: ...
    @property
    def agents(self) -> AgentService: ...
    @property
    def sessions(self) -> SessionService: ...
    @property
    def session_memory(self) -> SessionMemoryService: ...
    @property
    def agent_memory(self) -> AgentMemoryService: ...
    @property
    def bots(self) -> BotService: ...
    @property
    def bot_memory(self) -> BotMemoryService: ...
    @property
    def memory_bot(self) -> MemoryBotService: ...
    @property
    def agent_versions(self) -> AgentVersionService: ...
    @property
    def threads(self) -> ThreadService: ...
    @property
    def events(self) -> EventService: ...
    @property
    def limits(self) -> RequestLimits: ...
    @property
    def erasure(self) -> ErasureService: ...
    @property
    def capabilities(self) -> CapabilitiesService: ...
