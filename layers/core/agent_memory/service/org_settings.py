"""Organization settings: defaults for the memory switches, agent memory and models."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.domain.access import require_org_admin
from agent_memory.domain.errors import Conflict, NotFound, ValidationFailed
from agent_memory.domain.identity import Principal, effective_settings, patch_settings
from agent_memory.domain.model_names import disallowed, parse_patterns
from agent_memory.persistence.identity import IdentityRepository
from agent_memory.persistence.organizations import Organization
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.service.model_choice import ModelChoice

_MODEL_FIELDS = ("helperModel", "botMemoryModel")


@dataclass(eq=False)
class OrgSettingsService:
    repo: IdentityRepository
    allowed: ModelChoice = field(default_factory=ModelChoice)

    def _org(self, principal: Principal, org_id: str) -> Organization:
        require_org_admin(principal, org_id)
        org = self.repo.get_org(org_id)
        if org is None:
            raise NotFound("organization not found")
        return org

    def effective(self, org_id: str) -> dict[str, Any]:
        """The settings in force for `org_id` (no access check: for other services)."""
        org = self.repo.get_org(org_id)
        return effective_settings(org.overrides if org else {})

    def get(self, principal: Principal, org_id: str) -> dict[str, Any]:
        return effective_settings(self._org(principal, org_id).overrides)

    def patch(self, principal: Principal, org_id: str, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Value sets, null resets, missing keeps; every model of the result checked against
        the patched list, so no model named in the settings is ever outside it."""
        if patch.get("allowedModels") is not None:
            patterns = parse_patterns(patch["allowedModels"], ["allowedModels"])
            patch = {**patch, "allowedModels": list(patterns)}

        def attempt() -> Organization:
            # No precondition: a PATCH that lost a race reads the newest settings again.
            org = self._org(principal, org_id)
            overrides = patch_settings(org.overrides, patch)
            self._check_models(patch, effective_settings(overrides))
            return self.repo.save_settings(org, overrides)

        saved = until_it_lands(
            attempt, lambda: Conflict("the settings kept changing while they were saved; retry")
        )
        return effective_settings(saved.overrides)

    def _check_models(self, patch: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        """A 400 at a model field whose model the resulting `allowedModels` leaves out: a
        named one fully checked; a kept one against the organization's list only, since a
        kept name whose provider stops being configured stays stored (ADR 0020)."""
        narrowed = result["allowedModels"]
        for name in _MODEL_FIELDS:
            if patch.get(name) is not None:
                self.allowed.check(patch[name], [name], narrowed)
            elif disallowed(result[name], narrowed) is not None:
                raise ValidationFailed(_left_out(name, result[name]), [name])


def _left_out(field_name: str, model: str) -> str:
    return (
        f"model {model!r} is not allowed in this organization: allowedModels leaves the "
        f"{field_name} outside it; name an allowed {field_name}, or null, in the same request"
    )
