"""Object-level access: one decision used by every route.

- Another organization's object is unknown: 404, never 403 (ids must not leak).
- The service admin and the organization's admins may do everything inside it.
- The owner may do everything with the object; members may read and change it.
- Anyone else in the organization gets 404 for private objects (sessions, agents), or 403
  when the object is organization-visible but the action needs a grant.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from agent_memory.domain.errors import Forbidden, NotFound
from agent_memory.domain.identity import Principal

Action = Literal["read", "change", "own"]


@dataclass(frozen=True)
class Grants:
    """Who holds what on one object."""

    org_id: str
    owner: str | None = None
    members: frozenset[str] = field(default_factory=frozenset)
    # Whether people of the organization without a grant may know the object exists.
    org_visible: bool = False

    @classmethod
    def of(cls, org_id: str, owner: str | None, members: Collection[str] = ()) -> Grants:
        return cls(org_id=org_id, owner=owner, members=frozenset(members))


def authorize(principal: Principal, grants: Grants, action: Action, *, what: str) -> None:
    """Raise NotFound or Forbidden unless `principal` may perform `action` on the object."""
    if principal.administers(grants.org_id):
        return
    if principal.org_id != grants.org_id:
        raise NotFound(f"{what} not found")
    if principal.user_id is not None and principal.user_id == grants.owner:
        return
    if principal.user_id in grants.members and action in ("read", "change"):
        return
    if principal.user_id in grants.members or grants.org_visible:
        raise Forbidden(f"this action on the {what} needs a grant you do not hold")
    raise NotFound(f"{what} not found")


def require_org_member(principal: Principal, org_id: str) -> None:
    """The caller belongs to `org_id` (or is the service admin)."""
    if not principal.is_service_admin and principal.org_id != org_id:
        raise NotFound("organization not found")


def require_org_admin(principal: Principal, org_id: str) -> None:
    require_org_member(principal, org_id)
    if not principal.administers(org_id):
        raise Forbidden("only an administrator of the organization may do this")
