"""Agent versions: edit the draft, publish, activate; threads follow the active version."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agent_memory.domain import memory_options
from agent_memory.domain.access import authorized, require_tenant
from agent_memory.domain.agents import Agent
from agent_memory.domain.errors import NotFound, VersionConflict
from agent_memory.domain.identity import Principal
from agent_memory.persistence.agent_versions import AgentVersionRepository, Version
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.ports import Clock
from agent_memory.service.model_choice import ModelChoice
from agent_memory.service.org_settings import OrgSettingsService

MAX_VERSIONS_PAGE = 100
# Version numbers fit the eight digits of their sort key.
MAX_VERSION = 99_999_999


def _models(options: dict[str, Any]) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every model the effective options name, with the path of its field."""
    observer = options["observationalMemory"]
    named = (
        (options["generateTitle"]["model"], ("generateTitle", "model")),
        (observer["model"], ("observationalMemory", "model")),
        (observer["observation"]["model"], ("observationalMemory", "observation", "model")),
        (observer["reflection"]["model"], ("observationalMemory", "reflection", "model")),
    )
    for name, path in named:
        if name is not None:
            yield name, path


@dataclass(eq=False)
class AgentVersionService:
    repo: AgentVersionRepository
    clock: Clock
    allowed: ModelChoice
    org_settings: OrgSettingsService

    def draft(self, principal: Principal, agent_id: str) -> dict[str, Any] | None:
        require_tenant(principal)
        agent, memory = self.repo.agent_and_draft(agent_id)
        authorized(principal, agent, "read", what="agent")
        return memory

    def edit_draft(self, principal: Principal, agent_id: str, memory: Any) -> dict[str, Any] | None:
        """Replace the draft's `memory` block (None: the platform defaults)."""
        require_tenant(principal)
        agent, _ = self.repo.agent_and_draft(agent_id)
        agent = authorized(principal, agent, "change", what="agent")
        saved = memory_options.validate_memory(memory)
        self._check_models(agent, saved)
        self.repo.save_draft(agent, saved, self.clock.now_ms())
        return saved

    def _check_models(self, agent: Agent, memory: dict[str, Any] | None) -> None:
        """A 400 at the field of a model the organization's `allowedModels` leaves out: it
        may have narrowed since the block was saved."""
        models = list(_models(memory_options.effective(memory)["options"]))
        if models:
            narrowed = self.org_settings.effective(agent.org_id)["allowedModels"]
            for name, path in models:
                self.allowed.check(name, [*memory_options.OPTIONS_PATH, *path], narrowed)

    def publish(self, principal: Principal, agent_id: str) -> Version:
        require_tenant(principal)
        agent, memory = self.repo.agent_and_draft(agent_id)
        agent = authorized(principal, agent, "change", what="agent")
        self._check_models(agent, memory)

        def attempt() -> Version:
            # No precondition: a publish that loses the next number takes the one after.
            latest = self.repo.published(agent).latest
            return self.repo.publish(agent, memory, latest, self.clock.now_ms())

        return until_it_lands(attempt, _publishes_kept_coming)

    def versions(
        self, principal: Principal, agent_id: str, *, before: int | None = None
    ) -> tuple[list[Version], int | None]:
        require_tenant(principal)
        agent, published = self.repo.agent_and_published(agent_id)
        agent = authorized(principal, agent, "read", what="agent")
        versions = self.repo.versions(agent, limit=MAX_VERSIONS_PAGE, before=before)
        return versions, published.active

    def activate(self, principal: Principal, agent_id: str, number: int) -> None:
        require_tenant(principal)
        agent, _ = self.repo.agent_and_published(agent_id)
        agent = authorized(principal, agent, "change", what="agent")
        # The agent is found first: an unknown agent answers alike for any number.
        version = self.repo.version(agent, number) if 1 <= number <= MAX_VERSION else None
        if version is None:
            raise NotFound("no such version of this agent", ["n"])
        self._check_models(agent, version.memory)
        self.repo.activate(agent, version, self.clock.now_ms())

    def active_options(self, agent_id: str) -> tuple[Agent | None, dict[str, Any]]:
        """The options the agent's threads follow now; no access check: callers check."""
        agent, published = self.repo.agent_and_published(agent_id)
        return agent, memory_options.effective(published.memory)["options"]


def _publishes_kept_coming() -> VersionConflict:
    return VersionConflict("publishes of this agent kept coming for 8 s; retry")
