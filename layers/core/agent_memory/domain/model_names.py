"""Model names: `provider/model` (API.md, "Models")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.domain.errors import ValidationFailed

PROVIDERS = ("local", "openai", "bedrock")


@dataclass(frozen=True)
class ModelName:
    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


def parse_model_name(name: str, path: Sequence[str | int]) -> ModelName:
    """Split `provider/model`; an unknown provider is a 400 naming `path`."""
    provider, sep, model = name.partition("/")
    if not sep or not model.strip():
        raise ValidationFailed("a model is named 'provider/model'", path)
    if provider not in PROVIDERS:
        raise ValidationFailed(
            f"unknown model provider {provider!r}; known: {', '.join(PROVIDERS)}", path
        )
    return ModelName(provider, model)
