"""The one check of a model a person names: well formed, allowed, and runnable here.

"Runnable" is `ModelCatalog.resolve`, the answer every run asks, so an accepted name is one
a run finds.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.model_names import ModelName, ModelPolicy, not_configured
from agent_memory.ports import ModelCatalog


class ModelChoice:
    def __init__(self, policy: ModelPolicy | None = None, models: ModelCatalog | None = None):
        self.policy = policy or ModelPolicy()
        # None: a wiring without models; only the lists apply.
        self.models = models

    def __repr__(self) -> str:
        return f"ModelChoice(policy={self.policy!r})"

    def check(
        self, name: str, path: Sequence[str | int], organization: Sequence[str] | None = None
    ) -> ModelName:
        """`name` parsed, or a 400 naming `path` when it may not or cannot run here."""
        parsed = self.policy.check(name, path, organization)
        if self.models is not None and self.models.resolve(name) is None:
            raise ValidationFailed(not_configured(name), path)
        return parsed
