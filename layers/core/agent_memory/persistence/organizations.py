"""Organizations in the table: their row, their list, and the mark their deletion begins with.

- `ORG#<id>/META`: name, settings overrides, `rev` (a counter for settings writes),
  `createdAt`; `type` is `org`, or `org-deleting` once the organization's deletion began:
  from then on every read treats the organization as absent, and a person or a service key
  is no longer added to it (their writes check `type`).
- `ORGS#/<id>`: the list of organizations for the admin token (name, creation, `users`: how
  many people it holds, moved beside each person's creation and deletion), in id order.
  It goes in the same transaction as `META`, last, so an organization whose deletion was
  cut short stays listed (with `deleting`) until a call finishes it.

A token's organization never changes, so once a token is known its row and its
organization's row are read together (one BatchGetItem, both strongly consistent): the
organization row is then this request's (`request_org`), and a settings read later in the
same request takes it instead of another round trip (ADR 0069).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from agent_memory.domain.errors import Conflict, Unavailable, WriteConflict
from agent_memory.persistence import keys
from agent_memory.persistence.keys import ORGS_PK
from agent_memory.persistence.rows import StoreRows
from agent_memory.ports import Absent, Delete, Equals, Present, Put, Record, Store, Update

log = logging.getLogger(__name__)
ORG_LIVE = "org"
ORG_DELETING = "org-deleting"
# The condition of every write that adds to an organization: it exists and is not going.
ORG_ALIVE = "organization"


def org_channels_pk(org_id: str) -> str:
    """The channels of an organization (`<channelId>` rows written with each channel), for
    its deletion."""
    return f"{keys.CHANNELS_PREFIX}{org_id}"


@dataclass(frozen=True)
class Organization:
    id: str
    name: str
    overrides: dict[str, Any]
    rev: int


@dataclass(frozen=True)
class ListedOrg:
    id: str
    name: str
    created_at: int
    users: int
    deleting: bool


# The organization row read with this request's token (each request runs in its own
# context: a row never outlives the request that read it).
_REQUEST_ORG: ContextVar[Organization | None] = ContextVar("request_org", default=None)


def request_org(org: Organization | None) -> None:
    """Make `org` the organization row of the current request (None: no row yet)."""
    _REQUEST_ORG.set(org)


def live_org(org_id: str, row: Record | None) -> Organization | None:
    """The organization a row holds; None when absent or its deletion began."""
    if row is None or row.get("type", ORG_LIVE) != ORG_LIVE:
        return None
    return Organization(org_id, row["name"], dict(row.get("settings", {})), int(row["rev"]))


# The condition of a write that adds to the organization (fails as `ORG_ALIVE`).
ORG_IS_ALIVE = Equals("type", ORG_LIVE, name=ORG_ALIVE)


class OrganizationRepository(StoreRows):
    @property
    def store(self) -> Store:
        return self._store

    def create_org(self, org_id: str, name: str, now_ms: int) -> Organization:
        row: Record = {
            "pk": keys.org(org_id),
            "sk": keys.HEAD,
            "type": ORG_LIVE,
            "name": name,
            "settings": {},
            "rev": 0,
            "createdAt": now_ms,
        }
        listed: Record = {"pk": ORGS_PK, "sk": org_id, "type": "listed-org", "name": name}
        try:
            self._store.write(
                [Put(row, Absent()), Put(listed | {"createdAt": now_ms, "users": 0}, Absent())]
            )
        except WriteConflict as error:
            raise Conflict(f"organization {org_id!r} already exists", ["id"]) from error
        return Organization(org_id, name, {}, 0)

    def get_org(self, org_id: str) -> Organization | None:
        """The organization; the row this request already read with its token if any."""
        fresh = _REQUEST_ORG.get()
        if fresh is not None and fresh.id == org_id:
            return fresh
        return live_org(org_id, self._store.get(keys.org(org_id), keys.HEAD))

    def save_settings(self, org: Organization, overrides: dict[str, Any]) -> Organization:
        """Replace the overrides if nobody else changed them since `org` was read."""
        self._store.write(
            [
                Update(
                    keys.org(org.id),
                    keys.HEAD,
                    set={"settings": overrides, "rev": org.rev + 1},
                    condition=Equals("rev", org.rev),
                )
            ]
        )
        saved = Organization(org.id, org.name, overrides, org.rev + 1)
        fresh = _REQUEST_ORG.get()
        if fresh is not None and fresh.id == org.id:
            request_org(saved)  # a later read in this request sees what it wrote
        return saved

    # -- the admin token's list --------------------------------------------------------------

    def organizations(self, after: str | None, limit: int) -> tuple[list[ListedOrg], bool]:
        """A page of organizations in id order, and whether more follow."""
        page = self._store.query(ORGS_PK, limit=limit + 1, after=after)
        listed = [
            ListedOrg(
                str(row["sk"]),
                str(row["name"]),
                int(row["createdAt"]),
                max(0, int(row.get("users", 0))),
                bool(row.get("deleting")),
            )
            for row in page.records
        ]
        return listed[:limit], len(listed) > limit

    def count_people(self, org_id: str, change: int) -> None:
        """Move the listed count of people. Beside the person's own transaction, not in it:
        the list row would make every two creations in an organization race each other. The
        person's change has landed, so a count that cannot move now is left (and said): the
        request still answers what it did."""
        try:
            self._store.write([Update(ORGS_PK, org_id, add={"users": change}, condition=Present())])
        except WriteConflict:
            return  # the organization went meanwhile
        except Unavailable:
            log.warning("an organization's count of people was not moved", extra={"org": org_id})

    # -- deletion ----------------------------------------------------------------------------

    def begin_deletion(self, org_id: str) -> bool:
        """Mark the organization as going (False: there is none, nor one half deleted)."""
        row = self._store.get(keys.org(org_id), keys.HEAD)
        if row is None:
            return False
        if row.get("type") == ORG_DELETING:
            return True
        try:
            self._store.write(
                [
                    Update(
                        keys.org(org_id),
                        keys.HEAD,
                        set={"type": ORG_DELETING},
                        condition=ORG_IS_ALIVE,
                    ),
                    Update(ORGS_PK, org_id, set={"deleting": True}),
                ]
            )
        except WriteConflict:
            # Marked or deleted meanwhile: whichever it is, it is no longer alive.
            return self._store.get(keys.org(org_id), keys.HEAD) is not None
        return True

    def finish_deletion(self, org_id: str) -> int:
        """The organization's partition, its row last with its list row: 1 when this call
        removed them."""
        pk = keys.org(org_id)
        self._delete_all(pk, but_head=True)
        try:
            self._store.write(
                [
                    Delete(pk, keys.HEAD, Equals("type", ORG_DELETING)),
                    Delete(ORGS_PK, org_id),
                ]
            )
        except WriteConflict:
            return 0  # finished by another call meanwhile
        return 1
