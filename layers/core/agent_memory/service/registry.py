"""The services one process serves, built once per cold start by `bootstrap`."""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.config import Settings
from agent_memory.service.agent_memories import AgentMemoriesService
from agent_memory.service.identity import IdentityService
from agent_memory.service.org_settings import OrgSettingsService


@dataclass
class Services:
    settings: Settings
    identity: IdentityService
    org_settings: OrgSettingsService
    agent_memories: AgentMemoriesService
