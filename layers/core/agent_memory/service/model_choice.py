"""Where a person names a model (organization settings, sessions, turns, agents' memory
options): the one check that the name is well formed, allowed by the deployment
(`ALLOWED_MODELS`) and the organization (`allowedModels`), and one this deployment can run.

"Can run" is the catalog's own answer (`ModelCatalog.resolve`), the same one every run asks,
so a name accepted here is one a run finds; the refusal says which configuration is missing
(domain/model_names.NEEDS). Resolving reads no secret and calls no provider.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_memory.domain.errors import ValidationFailed
from agent_memory.domain.model_names import ModelName, ModelPolicy, not_configured
from agent_memory.ports import ModelCatalog


class ModelChoice:
    """The deployment's allowed models and the catalog that runs them."""

    def __init__(self, policy: ModelPolicy | None = None, models: ModelCatalog | None = None):
        self.policy = policy or ModelPolicy()
        # None: a wiring without models (unit tests of other rules); only the lists apply.
        self.models = models

    def __repr__(self) -> str:
        return f"ModelChoice(policy={self.policy!r})"

    def check(
        self, name: str, path: Sequence[str | int], organization: Sequence[str] | None = None
    ) -> ModelName:
        """`name` parsed, or a 400 naming `path` when it is malformed, of an unknown
        provider, outside the deployment's or the organization's allowed models, or of a
        provider this deployment has not configured."""
        parsed = self.policy.check(name, path, organization)
        if self.models is not None and self.models.resolve(name) is None:
            raise ValidationFailed(not_configured(name), path)
        return parsed
