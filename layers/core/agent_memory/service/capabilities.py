"""`GET /v1/capabilities`: what this deployment can run, for any caller with a valid token.

Names and patterns only, never a key or an endpoint; the lists `ModelChoice.check` enforces.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from agent_memory.domain.identity import Principal
from agent_memory.domain.model_name_bounds import LOCAL_MODELS, PROVIDERS
from agent_memory.domain.model_names import NEEDS, narrowed
from agent_memory.ports.vectors import Embedder
from agent_memory.service.model_choice import ModelChoice
from agent_memory.service.org_settings import OrgSettingsService


@dataclass(frozen=True)
class Unconfigured:
    provider: str
    needs: str


@dataclass(frozen=True)
class EmbeddingModel:
    name: str
    # None until a model whose size is learned from its answers has answered.
    dimensions: int | None


@dataclass(frozen=True)
class Capabilities:
    providers: tuple[str, ...]
    allowed: tuple[str, ...]
    unconfigured: tuple[Unconfigured, ...]
    default_model: str | None
    embedders: tuple[EmbeddingModel, ...]
    local: tuple[str, ...]


@dataclass(eq=False)
class CapabilitiesService:
    choice: ModelChoice
    org_settings: OrgSettingsService
    _: KW_ONLY
    default_model: str | None
    embedder: Embedder

    def _providers(self) -> tuple[str, ...]:
        models = self.choice.models
        return tuple(models.providers()) if models is not None else PROVIDERS

    def deployment_names(self) -> tuple[str, ...]:
        """The names and `provider/*` patterns run and allowed before any organization's."""
        runnable = [
            name
            for provider in self._providers()
            for name in (LOCAL_MODELS if provider == "local" else (f"{provider}/*",))
        ]
        return narrowed(runnable, self.choice.policy.patterns)

    def describe(self, principal: Principal) -> Capabilities:
        """What the deployment runs, and what `principal` may name."""
        providers = self._providers()
        allowed = self.deployment_names()
        if principal.org_id is not None:
            allowed = narrowed(
                allowed, self.org_settings.effective(principal.org_id)["allowedModels"]
            )
        embedder = self.embedder
        local = list(LOCAL_MODELS) if "local" in providers else []
        if embedder.model.startswith("local/"):
            local.append(embedder.model)
        return Capabilities(
            providers=tuple(providers),
            allowed=allowed,
            unconfigured=tuple(
                Unconfigured(p, NEEDS[p][1]) for p in PROVIDERS if p not in providers and p in NEEDS
            ),
            default_model=self.default_model,
            embedders=(EmbeddingModel(embedder.model, embedder.dimension),),
            local=tuple(local),
        )
