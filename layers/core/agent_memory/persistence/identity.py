"""Organizations, users and tokens in the table.

- `ORG#<id>/META`: name, settings overrides, `rev` (a counter for settings writes).
- `USER#<id>/META`: organization, name, role. User ids are global: one GetItem finds a user.
- `TOKEN#<sha256>/META`: the principal a token stands for (one GetItem per request).
- `TOKENPREFIX#<prefix>/META`: the digest, so a token is revoked by its public prefix.

A token's organization never changes, so once a token is known its row and its
organization's row are read together (one BatchGetItem, both strongly consistent): the
organization row is then this request's (`request_org`), and a settings read later in the
same request takes it instead of another round trip (docs/decisions.md, "Reads in two round
trips").
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

from agent_memory.domain.errors import Conflict, NotFound, WriteConflict
from agent_memory.domain.identity import IssuedToken, Principal, Role
from agent_memory.persistence import keys
from agent_memory.ports import Absent, Check, Delete, Equals, Present, Put, Record, Store, Update


@dataclass(frozen=True)
class Organization:
    id: str
    name: str
    overrides: dict[str, Any]
    rev: int


@dataclass(frozen=True)
class User:
    id: str
    org_id: str
    name: str | None
    role: Role


# The organization row read with this request's token (each request runs in its own
# context: a row never outlives the request that read it).
_REQUEST_ORG: ContextVar[Organization | None] = ContextVar("request_org", default=None)


def request_org(org: Organization | None) -> None:
    """Make `org` the organization row of the current request (None: no row yet)."""
    _REQUEST_ORG.set(org)


def _organization(org_id: str, row: Record) -> Organization:
    return Organization(org_id, row["name"], dict(row.get("settings", {})), int(row["rev"]))


class IdentityRepository:
    def __init__(self, store: Store) -> None:
        self._store = store

    # -- organizations -------------------------------------------------------------------

    def create_org(self, org_id: str, name: str, now_ms: int) -> Organization:
        row: Record = {
            "pk": keys.org(org_id),
            "sk": keys.HEAD,
            "type": "org",
            "name": name,
            "settings": {},
            "rev": 0,
            "createdAt": now_ms,
        }
        try:
            self._store.write([Put(row, Absent())])
        except WriteConflict as error:
            raise Conflict(f"organization {org_id!r} already exists", ["id"]) from error
        return Organization(org_id, name, {}, 0)

    def get_org(self, org_id: str) -> Organization | None:
        """The organization; the row this request already read with its token if any."""
        fresh = _REQUEST_ORG.get()
        if fresh is not None and fresh.id == org_id:
            return fresh
        row = self._store.get(keys.org(org_id), keys.HEAD)
        return None if row is None else _organization(org_id, row)

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

    # -- users and tokens ----------------------------------------------------------------

    def create_user(self, user: User, token: IssuedToken, now_ms: int) -> None:
        row: Record = {
            "pk": keys.user(user.id),
            "sk": keys.HEAD,
            "type": "user",
            "orgId": user.org_id,
            "name": user.name,
            "role": user.role,
            "createdAt": now_ms,
        }
        try:
            self._store.write(
                [
                    # The organization must still exist when the user is added.
                    Check(keys.org(user.org_id), keys.HEAD, Present(name="organization")),
                    Put(row, Absent()),
                    *self._token_rows(user, token, now_ms),
                ]
            )
        except WriteConflict as error:
            if error.condition == "organization":
                raise NotFound("organization not found", ["organizationId"]) from error
            raise Conflict(f"user {user.id!r} already exists", ["id"]) from error

    def get_user(self, user_id: str) -> User | None:
        row = self._store.get(keys.user(user_id), keys.HEAD)
        if row is None:
            return None
        return User(user_id, row["orgId"], row.get("name"), cast(Role, row["role"]))

    def user_org(self, user_id: str) -> str | None:
        """The organization of a user (None: no such user)."""
        user = self.get_user(user_id)
        return user.org_id if user is not None else None

    def add_token(self, user: User, token: IssuedToken, now_ms: int) -> None:
        self._store.write(
            [
                Check(keys.user(user.id), keys.HEAD, Present()),
                *self._token_rows(user, token, now_ms),
            ]
        )

    @staticmethod
    def _token_rows(user: User, token: IssuedToken, now_ms: int) -> list[Put]:
        return [
            Put(
                {
                    "pk": keys.token(token.digest),
                    "sk": keys.HEAD,
                    "type": "token",
                    "userId": user.id,
                    "orgId": user.org_id,
                    "role": user.role,
                    "prefix": token.prefix,
                    "createdAt": now_ms,
                },
                Absent(),
            ),
            Put(
                {
                    "pk": keys.token_prefix(token.prefix),
                    "sk": keys.HEAD,
                    "type": "token-prefix",
                    "digest": token.digest,
                    "userId": user.id,
                },
                Absent(),
            ),
        ]

    def principal_for(self, digest: str) -> Principal | None:
        row = self._store.get(keys.token(digest), keys.HEAD)
        return None if row is None else _principal(row)

    def principal_and_org(
        self, digest: str, org_id: str
    ) -> tuple[Principal | None, Organization | None]:
        """The token's principal and the row of `org_id` (the token's organization, known
        from an earlier request), read in one strongly consistent batch."""
        token_key, org_key = (keys.token(digest), keys.HEAD), (keys.org(org_id), keys.HEAD)
        rows = {(r["pk"], r["sk"]): r for r in self._store.get_many([token_key, org_key])}
        token, org = rows.get(token_key), rows.get(org_key)
        return (
            None if token is None else _principal(token),
            None if org is None else _organization(org_id, org),
        )

    def token_owner(self, prefix: str) -> tuple[str, str]:
        """(digest, user id) of the token with this public prefix."""
        row = self._store.get(keys.token_prefix(prefix), keys.HEAD)
        if row is None:
            raise NotFound("token not found")
        return str(row["digest"]), str(row["userId"])

    def revoke(self, prefix: str, digest: str) -> None:
        self._store.write(
            [
                Delete(keys.token_prefix(prefix), keys.HEAD, Present()),
                Delete(keys.token(digest), keys.HEAD),
            ]
        )


def _principal(row: Record) -> Principal:
    return Principal(user_id=row["userId"], org_id=row["orgId"], role=row["role"])
