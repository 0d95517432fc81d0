"""`GET /v1/capabilities`: what this deployment can run (names and patterns, never keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from agent_memory.api.contracts.base import Answer, Mirror

if TYPE_CHECKING:
    from agent_memory.service.capabilities import Capabilities


class UnconfiguredOut(Mirror):
    provider: str
    needs: str = Field(description="the settings that would let this deployment run it")


class ModelsOut(Mirror):
    providers: list[str] = Field(description="providers whose models this deployment runs")
    allowed: list[str] = Field(
        description="names and provider/* patterns the caller may name where a model is asked"
    )
    default: str | None = Field(
        validation_alias="default_model", description="the model of a session that names none"
    )
    unconfigured: list[UnconfiguredOut]


class EmbedderOut(Mirror):
    name: str
    dimensions: int | None = Field(description="null until a model of unknown size answers")


class CapabilitiesAnswer(Answer):
    models: ModelsOut
    embedders: list[EmbedderOut]
    local: list[str] = Field(description="models that run here without any network")

    @classmethod
    def of(cls, found: Capabilities) -> CapabilitiesAnswer:
        return cls(
            models=ModelsOut.of(found),
            embedders=[EmbedderOut.of(e) for e in found.embedders],
            local=list(found.local),
        )
