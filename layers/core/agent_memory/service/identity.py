"""Authentication and administration: organizations, users, tokens.

An organization's admin manages its own people; to anyone outside an organization, its
users and tokens answer exactly as ids that do not exist (same status, tag, message, path).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from agent_memory.domain.access import require_org_admin
from agent_memory.domain.errors import Forbidden, NotFound, Unauthorized
from agent_memory.domain.identity import (
    SERVICE_ADMIN,
    IssuedToken,
    Principal,
    Role,
    hash_token,
    issue_token,
    require_identifier,
    token_matches,
)
from agent_memory.persistence.identity import (
    IdentityRepository,
    Organization,
    User,
    request_org,
)
from agent_memory.ports import Clock, Ids

USER_NOT_FOUND = "user not found"
TOKEN_NOT_FOUND = "token not found"
# Tokens whose organization this process has seen (a token's organization never changes);
# past this many, the oldest is forgotten and read again (one more round trip).
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
        self._clock = clock
        self._ids = ids
        self._admin_digest = admin_token_sha256
        self._known: dict[str, str] = {}  # token digest -> its organization
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def authenticate(
        self, authorization: str | None, *, alongside: Callable[[], None] | None = None
    ) -> Principal:
        """The principal behind `Authorization: Bearer <token>`; 401 otherwise.

        Every request reads the token row strongly consistently, so a revoked token stops
        working at once. A token this process has seen is read together with its
        organization's row (one batch: the request's settings cost no round trip of their
        own), and `alongside` (the rate-limit count) runs meanwhile; for a token not seen
        yet, `alongside` runs after the token is found, so an unknown token writes nothing.
        Errors of `alongside` (429) are raised after the token's (401).
        """
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Unauthorized("send Authorization: Bearer <token>")
        if token_matches(token, self._admin_digest):
            if alongside is not None:
                alongside()
            return SERVICE_ADMIN
        digest = hash_token(token)
        with self._lock:
            org_id = self._known.get(digest)
        if org_id is None:
            principal = self._repo.principal_for(digest)
            request_org(None)
            if principal is None:
                raise Unauthorized("unknown or revoked token")
            self._remember(digest, principal)
            if alongside is not None:
                alongside()
            return principal
        counted = self._in_background(alongside)
        try:
            principal, org = self._repo.principal_and_org(digest, org_id)
        finally:
            # Never leave the count running past the request, whatever the read did.
            done = counted.exception() if counted is not None else None
        request_org(org if principal is not None and principal.org_id == org_id else None)
        if principal is not None and principal.org_id != org_id:
            self._remember(digest, principal)
        if principal is None:
            with self._lock:
                self._known.pop(digest, None)
            raise Unauthorized("unknown or revoked token")
        if done is not None:
            raise done
        return principal

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

    def create_user(
        self,
        principal: Principal,
        org_id: str,
        user_id: str | None,
        name: str | None,
        role: Role,
    ) -> NewUser:
        if not principal.is_service_admin:
            # An organization's admin may add people to it; nobody else may.
            require_org_admin(principal, org_id, path=["organizationId"])
        user_id = require_identifier(user_id, ["id"]) if user_id else self._ids.new("u_")
        token = issue_token()
        self._repo.create_user(User(user_id, org_id, name, role), token, self._clock.now_ms())
        return NewUser(user_id, token)

    def issue_token(self, principal: Principal, user_id: str) -> IssuedToken:
        user = self._repo.get_user(user_id)
        if user is None or not principal.may_know(user.org_id):
            raise NotFound(USER_NOT_FOUND)
        require_org_admin(principal, user.org_id)
        token = issue_token()
        self._repo.add_token(user, token, self._clock.now_ms())
        return token

    def revoke_token(self, principal: Principal, prefix: str) -> None:
        digest, user_id = self._repo.token_owner(prefix)
        if not principal.is_service_admin:
            user = self._repo.get_user(user_id)
            if user is None or not principal.may_know(user.org_id):
                raise NotFound(TOKEN_NOT_FOUND)
            require_org_admin(principal, user.org_id)
        self._repo.revoke(prefix, digest)
