"""Object-level access: one decision used by every route.

- The admin token (the operator's) administers organizations, users, tokens and settings
  but holds no grant on tenants' objects: 403 on every one, their content included.
- Another organization's object is unknown: 404, never 403 (ids must not leak).
- The organization's admins may do everything inside it.
- The owner may do everything with the object; members may read and change it, and get
  403 for the rest (they know it exists); anyone else in the organization gets 404.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from agent_memory.domain.errors import Forbidden, NotFound
from agent_memory.domain.identity import Principal

Action = Literal["read", "change", "own"]


@dataclass(frozen=True)
class Grants:
    """Who holds what on one object."""

    org_id: str
    owner: str | None
    members: frozenset[str]


OPERATOR_READS_NO_CONTENT = (
    "the admin token administers organizations, users, tokens and settings; "
    "tenants' sessions, agents and memories are for the people of their organization"
)


def require_tenant(principal: Principal) -> None:
    """Raise Forbidden for the admin token: it reads and changes no tenant's objects.

    Called before an object is looked up where possible, so the operator's answer is the
    same whether the object exists or not."""
    if principal.is_service_admin:
        raise Forbidden(OPERATOR_READS_NO_CONTENT)


def authorize(principal: Principal, grants: Grants, action: Action, *, what: str) -> None:
    """Raise NotFound or Forbidden unless `principal` may perform `action` on the object."""
    require_tenant(principal)
    if principal.administers(grants.org_id):
        return
    if principal.org_id != grants.org_id:
        raise NotFound(f"{what} not found")
    if principal.user_id is not None and principal.user_id == grants.owner:
        return
    if principal.user_id in grants.members and action in ("read", "change"):
        return
    if principal.user_id in grants.members:
        raise Forbidden(f"this action on the {what} needs a grant you do not hold")
    raise NotFound(f"{what} not found")


class Granted(Protocol):
    """An object that says who holds what on it (a Session, an Agent)."""

    def grants(self) -> Grants: ...


GrantedT = TypeVar("GrantedT", bound=Granted)


def authorized(
    principal: Principal, found: GrantedT | None, action: Action, *, what: str
) -> GrantedT:
    """`found` if the caller may perform `action` on it; a missing one, or another's, is a
    404 naming `what`."""
    if found is None:
        raise NotFound(f"{what} not found")
    authorize(principal, found.grants(), action, what=what)
    return found


ORG_NOT_FOUND = "organization not found"


def require_org_admin(principal: Principal, org_id: str, path: Sequence[str] = ()) -> None:
    """The caller administers `org_id`. Outside it the caller gets the answer of an
    organization that does not exist (404 naming `path`); inside, 403."""
    if not principal.may_know(org_id):
        raise NotFound(ORG_NOT_FOUND, path)
    if not principal.administers(org_id):
        raise Forbidden("only an administrator of the organization may do this")
