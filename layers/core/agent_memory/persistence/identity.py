"""Users and tokens in the table (organizations: persistence/organizations.py).

- `USER#<orgId>#<id>/META`: name, role. A user id belongs to its organization: `ana` of two
  organizations are two people.
- `USERID#<id>/ORG#<orgId>`: the organizations an id exists in, for the admin token's routes
  that name a user without an organization.
- `ORG#<orgId>/USER#<id>`: the organization's people in id order (name, role, creation), for
  its paged list.
- `USER#<orgId>#<id>/META` also holds `tokenRev`, a counter every issuance bumps under the
  condition that it is still what the issuer read: a rotation deletes every token it read, and
  no token added meanwhile escapes it (the losing write reads again).
- `USER#<orgId>#<id>/TOKEN#<prefix>`: the person's list (digest, who issued it, when): what
  `GET /v1/me/tokens` shows and what a rotation or a user's deletion removes.
- `TOKEN#<sha256>/META`: the principal a token stands for (one GetItem per request).
- `TOKENPREFIX#<prefix>/META`: the digest, so a token is revoked by its public prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from agent_memory.domain.errors import Conflict, NotFound, WriteConflict
from agent_memory.domain.identity import HeldToken, IssuedToken, Principal, Role
from agent_memory.persistence import keys
from agent_memory.persistence.organizations import (
    ORG_ALIVE,
    ORG_IS_ALIVE,
    Organization,
    OrganizationRepository,
    live_org,
)
from agent_memory.ports import (
    Absent,
    Check,
    Delete,
    Equals,
    KeyRange,
    Present,
    Put,
    Record,
    Update,
)


@dataclass(frozen=True)
class User:
    id: str
    org_id: str
    name: str | None
    role: Role


@dataclass(frozen=True)
class StoredToken:
    held: HeldToken
    digest: str


@dataclass(frozen=True)
class ListedUser:
    id: str
    name: str | None
    role: Role
    created_at: int


@dataclass(frozen=True)
class TokenOwner:
    """A token found by its public prefix: its digest and whose it is."""

    prefix: str
    digest: str
    org_id: str
    user_id: str


@dataclass(frozen=True)
class Holding:
    """A person, the `tokenRev` their tokens were read at, and those tokens (oldest first)."""

    user: User
    rev: int
    tokens: list[StoredToken]


TOKEN_NOT_FOUND = "token not found"
# The condition of every issuance: the holder's tokens are still those the issuer read.
TOKENS_CHANGED = "tokens-changed"


def listed_user_sk(user_id: str) -> str:
    """The person's row in their organization's list (`ORG#<orgId>`)."""
    return f"{keys.USER_PREFIX}{user_id}"


def held_sk(prefix: str) -> str:
    """A token's row in its holder's list (`USER#<orgId>#<id>`), by its public prefix."""
    return f"{keys.TOKEN_PREFIX}{prefix}"


class IdentityRepository(OrganizationRepository):
    """People and their tokens, beside their organizations' rows."""

    # -- users and tokens ----------------------------------------------------------------

    def create_user(
        self, user: User, token: IssuedToken | None, issued_by: str, now_ms: int
    ) -> None:
        """The user with their first token (a person a service key acts for has none)."""
        row: Record = {
            "pk": keys.user(user.org_id, user.id),
            "sk": keys.HEAD,
            "type": "user",
            "name": user.name,
            "role": user.role,
            "createdAt": now_ms,
            "tokenRev": 0,
        }
        try:
            self._store.write(
                [
                    # The organization must still exist when the user is added.
                    Check(keys.org(user.org_id), keys.HEAD, ORG_IS_ALIVE),
                    Put(row, Absent()),
                    Put({"pk": keys.user_orgs(user.id), "sk": keys.org(user.org_id)}),
                    Put(_listed_user(user, now_ms)),
                    *(self._token_rows(user, token, issued_by, now_ms) if token else []),
                ]
            )
        except WriteConflict as error:
            if error.condition == ORG_ALIVE:
                raise NotFound("organization not found", ["organizationId"]) from error
            raise Conflict(f"user {user.id!r} already exists", ["id"]) from error

    def get_user(self, org_id: str, user_id: str) -> User | None:
        row = self._store.get(keys.user(org_id, user_id), keys.HEAD)
        return None if row is None else _user(org_id, user_id, row)

    def has_user(self, org_id: str, user_id: str) -> bool:
        return self.get_user(org_id, user_id) is not None

    def user_and_org(self, org_id: str, user_id: str) -> tuple[User | None, Organization | None]:
        """The person and their organization's row, in one strongly consistent batch."""
        user, org = self._beside_org(keys.user(org_id, user_id), org_id)
        return (None if user is None else _user(org_id, user_id, user)), live_org(org_id, org)

    def _beside_org(self, pk: str, org_id: str) -> tuple[Record | None, Record | None]:
        """The head rows of `pk` and of the organization, in one strongly consistent batch."""
        wanted = [(pk, keys.HEAD), (keys.org(org_id), keys.HEAD)]
        rows = {(r["pk"], r["sk"]): r for r in self._store.get_many(wanted)}
        return rows.get(wanted[0]), rows.get(wanted[1])

    def users(self, org_id: str, after: str | None, limit: int) -> tuple[list[ListedUser], bool]:
        """A page of the organization's people in id order, and whether more follow."""
        page = self._store.query(
            keys.org(org_id),
            KeyRange(prefix=keys.USER_PREFIX),
            limit=limit + 1,
            after=listed_user_sk(after) if after is not None else None,
        )
        listed = [
            ListedUser(
                str(row["sk"]).removeprefix(keys.USER_PREFIX),
                row.get("name"),
                cast(Role, row["role"]),
                int(row["createdAt"]),
            )
            for row in page.records
        ]
        return listed[:limit], len(listed) > limit

    def people_ids(self, org_id: str) -> list[str]:
        rows = self._rows(keys.org(org_id), KeyRange(prefix=keys.USER_PREFIX))
        return [str(row["sk"]).removeprefix(keys.USER_PREFIX) for row in rows]

    def delete_user(self, holding: Holding) -> None:
        """The person's record, list row and every token, if their tokens did not change
        since `holding` was read (WriteConflict otherwise)."""
        user = holding.user
        record = keys.user(user.org_id, user.id)
        unchanged = Equals("tokenRev", holding.rev, name=TOKENS_CHANGED)
        self._store.write(
            [
                *self._token_deletes(holding)[1:],
                Delete(record, keys.HEAD, unchanged),
                Delete(keys.user_orgs(user.id), keys.org(user.org_id)),
                Delete(keys.org(user.org_id), listed_user_sk(user.id)),
            ]
        )

    def rename_user(self, org_id: str, user_id: str, name: str) -> ListedUser:
        """The person's name on their record and their list row, together; NotFound when
        there is no such person."""
        try:
            self._store.write(
                [
                    Update(
                        keys.user(org_id, user_id), keys.HEAD, {"name": name}, condition=Present()
                    ),
                    Update(
                        keys.org(org_id),
                        listed_user_sk(user_id),
                        {"name": name},
                        condition=Present(),
                    ),
                ]
            )
        except WriteConflict as error:
            raise NotFound("user not found", ["userId"]) from error
        row = self._store.get(keys.org(org_id), listed_user_sk(user_id))
        if row is None:
            raise NotFound("user not found", ["userId"])  # deleted meanwhile
        return ListedUser(user_id, name, cast(Role, row["role"]), int(row["createdAt"]))

    def orgs_of(self, user_id: str) -> list[str]:
        page = self._store.query(keys.user_orgs(user_id))
        return [str(row["sk"]).removeprefix(keys.org("")) for row in page.records]

    def holding(self, org_id: str, user_id: str) -> Holding | None:
        """The user, their `tokenRev` and every token they hold (None: no such user).

        The user row is read before the list, so a token added after the list was read has
        bumped the counter the next write is conditioned on."""
        row = self._store.get(keys.user(org_id, user_id), keys.HEAD)
        if row is None:
            return None
        user = _user(org_id, user_id, row)
        return Holding(user, int(row["tokenRev"]), self._stored_tokens(user))

    def _stored_tokens(self, user: User) -> list[StoredToken]:
        pk = keys.user(user.org_id, user.id)
        rows = self._rows(pk, KeyRange(prefix=keys.TOKEN_PREFIX))
        stored = [
            StoredToken(
                HeldToken(
                    str(row["sk"]).removeprefix(keys.TOKEN_PREFIX),
                    str(row["issuedBy"]),
                    int(row["createdAt"]),
                ),
                str(row["digest"]),
            )
            for row in rows
        ]
        return sorted(stored, key=lambda s: (s.held.created_at, s.held.prefix))

    def add_token(self, holding: Holding, token: IssuedToken, issued_by: str, now_ms: int) -> None:
        """One more token for the holder, if their tokens did not change since `holding`
        was read (WriteConflict otherwise)."""
        self._store.write(
            [
                self._bump(holding),
                *self._token_rows(holding.user, token, issued_by, now_ms),
            ]
        )

    def rotate(self, holding: Holding, token: IssuedToken, issued_by: str, now_ms: int) -> None:
        """Replace every token of `holding` with `token`, in one transaction, if the holder's
        tokens did not change since `holding` was read (WriteConflict otherwise)."""
        self._store.write(
            [
                *self._token_deletes(holding),
                *self._token_rows(holding.user, token, issued_by, now_ms),
            ]
        )

    def _token_deletes(self, holding: Holding) -> list[Update | Delete]:
        """The holder's `tokenRev` bumped on its condition, then every token of `holding`."""
        user_pk = keys.user(holding.user.org_id, holding.user.id)
        return [
            self._bump(holding),
            *(
                delete
                for stored in holding.tokens
                for delete in (
                    Delete(keys.token(stored.digest), keys.HEAD),
                    Delete(keys.token_prefix(stored.held.prefix), keys.HEAD),
                    Delete(user_pk, held_sk(stored.held.prefix)),
                )
            ),
        ]

    @staticmethod
    def _bump(holding: Holding) -> Update:
        return Update(
            keys.user(holding.user.org_id, holding.user.id),
            keys.HEAD,
            set={"tokenRev": holding.rev + 1},
            condition=Equals("tokenRev", holding.rev, name=TOKENS_CHANGED),
        )

    @staticmethod
    def _token_rows(user: User, token: IssuedToken, issued_by: str, now_ms: int) -> list[Put]:
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
                    "orgId": user.org_id,
                },
                Absent(),
            ),
            Put(
                {
                    "pk": keys.user(user.org_id, user.id),
                    "sk": held_sk(token.prefix),
                    "type": "held-token",
                    "digest": token.digest,
                    "issuedBy": issued_by,
                    "createdAt": now_ms,
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
        from an earlier request), read in one strongly consistent batch: neither when the
        token is unknown or revoked, or its organization is going."""
        token, row = self._beside_org(keys.token(digest), org_id)
        org = live_org(org_id, row)
        if token is None or org is None:
            return None, None
        return _principal(token), org

    def token_owner(self, prefix: str) -> TokenOwner:
        row = self._store.get(keys.token_prefix(prefix), keys.HEAD)
        if row is None:
            raise NotFound(TOKEN_NOT_FOUND)
        return TokenOwner(prefix, str(row["digest"]), str(row["orgId"]), str(row["userId"]))

    def revoke(self, owner: TokenOwner) -> None:
        try:
            self._store.write(
                [
                    Delete(keys.token_prefix(owner.prefix), keys.HEAD, Present(name="token")),
                    Delete(keys.token(owner.digest), keys.HEAD),
                    Delete(keys.user(owner.org_id, owner.user_id), held_sk(owner.prefix)),
                ]
            )
        except WriteConflict as error:
            if error.condition != "token":
                raise
            # Revoked meanwhile (or rotated away): as unknown as any other prefix.
            raise NotFound(TOKEN_NOT_FOUND) from error


def _listed_user(user: User, now_ms: int) -> Record:
    return {
        "pk": keys.org(user.org_id),
        "sk": listed_user_sk(user.id),
        "type": "listed-user",
        "name": user.name,
        "role": user.role,
        "createdAt": now_ms,
    }


def _user(org_id: str, user_id: str, row: Record) -> User:
    return User(user_id, org_id, row.get("name"), cast(Role, row["role"]))


def _principal(row: Record) -> Principal:
    return Principal(user_id=row["userId"], org_id=row["orgId"], role=row["role"])
