"""Grants with levels on an object (seed 002's Bots), and links into other organizations.

- A user holds `read` or `write` on the object; `write` implies `read`; the owner has
  `write`. The service admin and the admins of the object's own organization have `write`.
- A link puts the object into another organization with that organization's users' grants:
  they use it there as a linked object, and its memory learns and reads inside that
  organization only (the `Reach` says which). Settings and links do not pass through a link:
  they need `write` in the object's own organization. Purge acts on one organization's
  memory: at home a writer's, through a link only that organization's admins'.
- A link's grants change explicitly: a person named with a level gets it, a person named
  with None loses it, and people not named keep theirs (an empty map changes nothing).
- Someone without a level is told the object does not exist (404), as is anyone of another
  organization; a level too low for the action is 403.

Who sees which entry of the Bot's memory is a separate rule (`domain/audiences.py`): no
level, not even `write` or ownership, lets anyone read the memory about another person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal

from agent_memory.domain.errors import Conflict, Forbidden, NotFound, ValidationFailed
from agent_memory.domain.identity import Principal, configured

Level = Literal["read", "write"]
# What one may do with the object: use and read it, change it, and the home-only actions.
# Every action but `read` needs `write`.
ObjectAction = Literal["read", "write", "purge", "configure", "link"]
HOME_ONLY: frozenset[ObjectAction] = frozenset({"purge", "configure", "link"})

NEEDS_WRITE = "this action on the {what} needs write"
NOT_THROUGH_LINK = "this action on the {what} needs write in its own organization, not a link"
LINK_TO_HOME = "the {what} already belongs to this organization"
PURGE_THROUGH_LINK = (
    "purging a linked {what}'s memory in your organization is for your organization's admins"
)
BAD_LEVEL = "a grant is 'read' or 'write'"
BAD_LINK_LEVEL = "a grant is 'read' or 'write', or null to remove it"
LINK_NEEDS_PEOPLE = "a new link grants at least one person of that organization"


def _frozen(levels: Mapping[str, Level]) -> Mapping[str, Level]:
    return MappingProxyType(dict(levels))


@dataclass(frozen=True)
class GrantLevels:
    """Who holds which level on one object, at home and in each linked organization."""

    org_id: str
    owner: str | None
    levels: Mapping[str, Level]
    # Linked organization id -> that organization's users' levels.
    links: Mapping[str, Mapping[str, Level]]

    @classmethod
    def of(
        cls,
        org_id: str,
        owner: str | None,
        levels: Mapping[str, Level] = MappingProxyType({}),
        links: Mapping[str, Mapping[str, Level]] = MappingProxyType({}),
    ) -> GrantLevels:
        """Grants whose owner holds write whatever `levels` says about them."""
        own = dict(levels)
        if owner is not None:
            own[owner] = "write"
        return cls(
            org_id,
            owner,
            _frozen(own),
            MappingProxyType({org: _frozen(grants) for org, grants in links.items()}),
        )

    def linked(self, org_id: str, changes: Mapping[str, Level | None], *, what: str) -> GrantLevels:
        """These grants with `org_id` linked in, or its link's grants changed: a level given
        is set, None removes that person's grant, and people not named keep theirs."""
        if org_id == self.org_id:
            raise Conflict(LINK_TO_HOME.format(what=what), ["organizationId"])
        levels = configured(self.links.get(org_id, {}), changes)
        if org_id not in self.links and not levels:
            # The link's absence decides it, not the body's shape: a conflict with the state.
            raise Conflict(LINK_NEEDS_PEOPLE, ["grants"])
        links = {**self.links, org_id: _frozen(levels)}
        return replace(self, links=MappingProxyType(links))

    def level_of(self, principal: Principal) -> tuple[Level | None, bool]:
        """The principal's level and whether it comes through a link (None: no level)."""
        if principal.administers(self.org_id):
            return "write", False
        if principal.org_id == self.org_id:
            return self.levels.get(principal.user_id or ""), False
        link = self.links.get(principal.org_id or "")
        if link is None:
            return None, False
        return link.get(principal.user_id or ""), True


@dataclass(frozen=True)
class Reach:
    """How a principal reaches an object: the organization its memory is read and learned
    in, the level held there, and whether that is through a link."""

    org_id: str
    level: Level
    linked: bool


def decide(principal: Principal, grants: GrantLevels, action: ObjectAction, *, what: str) -> Reach:
    """The principal's reach for `action`; raises NotFound (no level, or another
    organization) or Forbidden (a level too low, or a home-only action through a link)."""
    level, linked = grants.level_of(principal)
    if linked and action == "purge" and principal.administers(principal.org_id or ""):
        # A linked organization's memory is its own: its admins purge it, grant or none.
        return Reach(org_id=principal.org_id or "", level="write", linked=True)
    if level is None:
        raise NotFound(f"{what} not found")
    if linked and action == "purge":
        raise Forbidden(PURGE_THROUGH_LINK.format(what=what))
    if linked and action in HOME_ONLY:
        raise Forbidden(NOT_THROUGH_LINK.format(what=what))
    if action != "read" and level != "write":
        raise Forbidden(NEEDS_WRITE.format(what=what))
    org_id = principal.org_id if linked and principal.org_id is not None else grants.org_id
    return Reach(org_id=org_id, level=level, linked=linked)


def parse_levels(raw: Mapping[str, object], path: list[str | int]) -> dict[str, Level]:
    """Levels as a client sends them (`{"u_1": "read"}`); 400 naming the offending user."""
    return {user: _level(level, BAD_LEVEL, [*path, user]) for user, level in raw.items()}


def parse_link_changes(raw: Mapping[str, object], path: list[str | int]) -> dict[str, Level | None]:
    """A link's grant changes as a client sends them (`{"u_1": "read", "u_2": null}`: null
    removes u_2's grant); 400 naming the offending user."""
    return {
        user: None if level is None else _level(level, BAD_LINK_LEVEL, [*path, user])
        for user, level in raw.items()
    }


def _level(value: object, reason: str, path: list[str | int]) -> Level:
    if value not in ("read", "write"):
        raise ValidationFailed(reason, path)
    return "write" if value == "write" else "read"
