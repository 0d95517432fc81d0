"""Authentication and administration: organizations, users, tokens.

To anyone outside an organization, its users and tokens answer exactly as unknown ids. An
administrator's issuance replaces every token the person holds (docs/adr/0008).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_memory.domain.access import require_org_admin
from agent_memory.domain.errors import (
    Conflict,
    Forbidden,
    NotFound,
    Unauthorized,
    ValidationFailed,
)
from agent_memory.domain.identity import (
    ACT_AS,
    MAX_TOKENS_PER_USER,
    SERVICE_ADMIN,
    SERVICE_KEY_SCHEME,
    HeldToken,
    IssuedToken,
    Principal,
    Role,
    effective_settings,
    hash_token,
    is_service_key,
    issue_token,
    issuer,
    require_identifier,
    token_matches,
)
from agent_memory.persistence.identity import (
    TOKEN_NOT_FOUND,
    IdentityRepository,
    ListedUser,
    User,
)
from agent_memory.persistence.organizations import ListedOrg, Organization, request_org
from agent_memory.persistence.retrying import until_it_lands
from agent_memory.persistence.service_keys import ListedKey, ServiceKeyRepository
from agent_memory.ports import Clock, Ids
from agent_memory.service.organizations import (
    ORG_NOT_FOUND,
    delete_holding,
    delete_organization,
    tokens_kept_changing,
)

if TYPE_CHECKING:
    from agent_memory.service.erasure import ErasureService

USER_NOT_FOUND = "user not found"
# A token's organization never changes; past this many, the oldest is read again.
KNOWN_TOKENS = 4096


@dataclass(frozen=True)
class NewUser:
    id: str
    token: IssuedToken


class IdentityService:
    def __init__(
        self, repo: IdentityRepository, clock: Clock, ids: Ids, admin_token_sha256: str
    ) -> None:
        self._repo = repo
        self._keys = ServiceKeyRepository(repo.store)
        self._clock = clock
        self._ids = ids
        self._admin_digest = admin_token_sha256
        self._known: dict[str, str] = {}  # token digest -> its organization
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def authenticate(
        self,
        authorization: str | None,
        *,
        alongside: Callable[[], None] | None = None,
        act_as: str | None = None,
    ) -> Principal:
        """The principal behind a bearer token; 401 otherwise. Read strongly consistently, so
        a revoked token stops at once; `alongside` runs only for a known token, its errors
        after the token's. A service key with `act_as` is that person of its organization."""
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("send Authorization: Bearer <token>")
        if is_service_key(token):
            return self._as_key(hash_token(token), act_as, alongside)
        if act_as is not None:
            raise ValidationFailed(f"only a service key acts for a person: drop {ACT_AS}", [ACT_AS])
        if token_matches(token, self._admin_digest):
            if alongside is not None:
                alongside()
            return SERVICE_ADMIN
        digest = hash_token(token)
        with self._lock:
            org_id = self._known.get(digest)
        if org_id is None:
            return self._first_sight(digest, alongside)
        counted = self._in_background(alongside)
        try:
            principal, org = self._repo.principal_and_org(digest, org_id)
        finally:
            # Never leave the count running past the request, whatever the read did.
            done = counted.exception() if counted is not None else None
        request_org(org if principal is not None else None)
        if principal is None:
            with self._lock:
                self._known.pop(digest, None)
            raise Unauthorized("unknown or revoked token")
        if done is not None:
            raise done
        return principal

    def _first_sight(self, digest: str, alongside: Callable[[], None] | None) -> Principal:
        """A token this process has not found good before: its row, then its organization's
        (an organization being deleted answers as a revoked token)."""
        principal = self._repo.principal_for(digest)
        request_org(None)
        if principal is None:
            raise Unauthorized("unknown or revoked token")
        if principal.org_id is not None:
            org = self._repo.get_org(principal.org_id)
            if org is None:
                raise Unauthorized("unknown or revoked token")
            request_org(org)
        self._remember(digest, principal)
        if alongside is not None:
            alongside()
        return principal

    def _as_key(
        self, digest: str, act_as: str | None, alongside: Callable[[], None] | None
    ) -> Principal:
        key = self._keys.find(digest)
        request_org(None)
        if key is None:
            raise Unauthorized("unknown or revoked service key")
        if alongside is not None:
            alongside()
        self._keys.touch(key, self._clock.now_ms())
        # Known good: its address's failed checks no longer stop it (as for a token).
        self._remember(digest, Principal(None, key.org_id, "service-key", key.id))
        if act_as is None:
            return Principal(None, key.org_id, "service-key", key.id)
        require_identifier(act_as, [ACT_AS])
        user, org = self._repo.user_and_org(key.org_id, act_as)
        if org is None:
            raise Unauthorized("unknown or revoked service key")  # its organization is going
        if user is None:
            if not effective_settings(org.overrides)["autoProvisionUsers"]:
                raise NotFound(f"no person {act_as!r} in the organization", [ACT_AS])
            user = self._provision(key.org_id, act_as, key.id)
        request_org(org)
        return Principal(user.id, key.org_id, user.role, key.id)

    def _provision(self, org_id: str, user_id: str, key_id: str) -> User:
        """A member first seen through a service key; one created meanwhile stands."""
        user = User(user_id, org_id, None, "member")
        try:
            self._add(user, None, f"service key {key_id}")
        except Conflict:
            found = self._repo.get_user(org_id, user_id)
            if found is None:
                raise
            return found
        return user

    def recognizes(self, token: str) -> bool:
        """Whether this process has found `token` good before (no read)."""
        digest = hash_token(token)
        with self._lock:
            return digest in self._known

    def _remember(self, digest: str, principal: Principal) -> None:
        if principal.org_id is None:
            return
        with self._lock:
            if len(self._known) >= KNOWN_TOKENS:
                self._known.pop(next(iter(self._known)))
            self._known[digest] = principal.org_id

    def _in_background(self, work: Callable[[], None] | None) -> Future[None] | None:
        if work is None:
            return None
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="admit")
            pool = self._pool
        return pool.submit(work)

    @staticmethod
    def _require_service_admin(principal: Principal) -> None:
        if not principal.is_service_admin:
            raise Forbidden("this route needs the admin token")

    def create_org(self, principal: Principal, org_id: str | None, name: str) -> Organization:
        self._require_service_admin(principal)
        org_id = require_identifier(org_id, ["id"]) if org_id else self._ids.new("org_")
        return self._repo.create_org(org_id, name, self._clock.now_ms())

    def organizations(
        self, principal: Principal, after: str | None, limit: int
    ) -> tuple[list[ListedOrg], bool]:
        """Every organization, in id order: names and counts, never content."""
        self._require_service_admin(principal)
        return self._repo.organizations(after, limit)

    def delete_org(
        self, principal: Principal, org_id: str, eraser: ErasureService
    ) -> dict[str, int]:
        """The organization and everything in it (service/organizations.py)."""
        if not principal.may_know(org_id):
            raise NotFound(ORG_NOT_FOUND, ["orgId"])  # another organization: as no organization
        self._require_service_admin(principal)
        return delete_organization(self._repo, self._keys, org_id, eraser)

    def create_user(
        self,
        principal: Principal,
        org_id: str,
        user_id: str | None,
        name: str | None,
        role: Role,
    ) -> NewUser:
        require_org_admin(principal, org_id, path=["organizationId"])
        user_id = require_identifier(user_id, ["id"]) if user_id else self._ids.new("u_")
        token = issue_token()
        self._add(User(user_id, org_id, name, role), token, issuer(principal))
        return NewUser(user_id, token)

    # -- an organization's people and service keys -------------------------------------------

    def _require_user_manager(self, principal: Principal, org_id: str) -> None:
        if not principal.manages_users_of(org_id):
            require_org_admin(principal, org_id, ["orgId"])

    def add_person(
        self, principal: Principal, org_id: str, user_id: str | None, name: str | None, role: Role
    ) -> ListedUser:
        """A person without a token: a platform's service key acts for them."""
        self._require_user_manager(principal, org_id)
        user_id = require_identifier(user_id, ["id"]) if user_id else self._ids.new("u_")
        now = self._add(User(user_id, org_id, name, role), None, issuer(principal))
        return ListedUser(user_id, name, role, now)

    def _add(self, user: User, token: IssuedToken | None, issued_by: str) -> int:
        """The person, then their organization's count of people (when they were added)."""
        now = self._clock.now_ms()
        self._repo.create_user(user, token, issued_by, now)
        self._repo.count_people(user.org_id, 1)
        return now

    def people(
        self, principal: Principal, org_id: str, after: str | None, limit: int
    ) -> tuple[list[ListedUser], bool]:
        self._require_user_manager(principal, org_id)
        return self._repo.users(org_id, after, limit)

    def require_person(self, principal: Principal, org_id: str, user_id: str) -> None:
        """The caller manages the organization's people and `user_id` is one (404 else)."""
        self._require_user_manager(principal, org_id)
        if not self._repo.has_user(org_id, user_id):
            raise NotFound(USER_NOT_FOUND, ["userId"])

    def delete_person(self, principal: Principal, org_id: str, user_id: str) -> None:
        """The record and every token; the caller erased the person's data first."""
        self._require_user_manager(principal, org_id)
        if delete_holding(self._repo, org_id, user_id) is not None:
            self._repo.count_people(org_id, -1)

    def rename_person(
        self, principal: Principal, org_id: str, user_id: str, name: str
    ) -> ListedUser:
        self._require_user_manager(principal, org_id)
        return self._repo.rename_user(org_id, user_id, name)

    def create_key(
        self, principal: Principal, org_id: str, name: str
    ) -> tuple[str, IssuedToken, int]:
        """(id, the key shown once, creation time)."""
        require_org_admin(principal, org_id, ["orgId"])
        key_id, key = self._ids.new("sk_"), issue_token(SERVICE_KEY_SCHEME)
        now = self._clock.now_ms()
        self._keys.create(org_id, key_id, name, key, now)
        return key_id, key, now

    def keys_of(self, principal: Principal, org_id: str) -> list[ListedKey]:
        require_org_admin(principal, org_id, ["orgId"])
        return self._keys.listed(org_id)

    def revoke_key(self, principal: Principal, org_id: str, key_id: str) -> None:
        require_org_admin(principal, org_id, ["orgId"])
        self._keys.revoke(org_id, key_id)

    def issue_token(
        self, principal: Principal, user_id: str, org_id: str | None = None
    ) -> IssuedToken:
        """An administrator's token for `user_id`: every token the person held stops working."""
        org_id = self._org_of(principal, user_id, org_id)
        token = issue_token()

        def rotate() -> None:
            holding = self._repo.holding(org_id, user_id)
            if holding is None:
                raise NotFound(USER_NOT_FOUND)
            require_org_admin(principal, org_id)
            self._repo.rotate(holding, token, issuer(principal), self._clock.now_ms())

        until_it_lands(rotate, tokens_kept_changing)
        return token

    def _org_of(self, principal: Principal, user_id: str, org_id: str | None) -> str:
        """The organization of the user a route names without one: the caller's own for a
        person; for the admin token the only one the id exists in, else the
        body must say which."""
        org_id = org_id if org_id is not None else principal.org_id
        if org_id is None:
            orgs = self._repo.orgs_of(user_id)
            if len(orgs) > 1:
                raise ValidationFailed(
                    f"user {user_id!r} exists in {len(orgs)} organizations: name one",
                    ["organizationId"],
                )
            org_id = orgs[0] if orgs else None
        if org_id is None or not principal.may_know(org_id):
            raise NotFound(USER_NOT_FOUND)
        return org_id

    def issue_own_token(self, principal: Principal) -> IssuedToken:
        """One more token for the caller; the admin token is configured, not issued."""
        user_id = principal.user_id
        if user_id is None:
            raise Conflict("the admin token is configured, not issued: it has no tokens to add to")
        token = issue_token()

        org_id = principal.org_id
        assert org_id is not None  # a person's principal always has one

        def add() -> None:
            holding = self._repo.holding(org_id, user_id)
            if holding is None:
                raise NotFound(USER_NOT_FOUND)
            if len(holding.tokens) >= MAX_TOKENS_PER_USER:
                raise Conflict(
                    f"you hold {MAX_TOKENS_PER_USER} tokens, the most one person may;"
                    " revoke one first (DELETE /v1/me/tokens/{tokenPrefix})"
                )
            self._repo.add_token(holding, token, issuer(principal), self._clock.now_ms())

        until_it_lands(add, tokens_kept_changing)
        return token

    def own_tokens(self, principal: Principal) -> list[HeldToken]:
        """Oldest first: who issued each and when."""
        if principal.user_id is None or principal.org_id is None:
            return []
        holding = self._repo.holding(principal.org_id, principal.user_id)
        return [] if holding is None else [stored.held for stored in holding.tokens]

    def revoke_own_token(self, principal: Principal, prefix: str) -> None:
        """Anyone else's token answers as an unknown one."""
        if principal.user_id is None:
            raise Forbidden("the admin token holds no tokens of its own")
        owner = self._repo.token_owner(prefix)
        if (owner.org_id, owner.user_id) != (principal.org_id, principal.user_id):
            raise NotFound(TOKEN_NOT_FOUND)
        self._repo.revoke(owner)

    def revoke_token(self, principal: Principal, prefix: str) -> None:
        owner = self._repo.token_owner(prefix)
        if not principal.may_know(owner.org_id):
            raise NotFound(TOKEN_NOT_FOUND)
        require_org_admin(principal, owner.org_id)
        self._repo.revoke(owner)
