"""Organizations, users, principals, bearer tokens and organization settings."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from agent_memory.domain.errors import Forbidden, ValidationFailed

V = TypeVar("V")

Role = Literal["member", "admin"]
TOKEN_SCHEME = "amk"
SERVICE_KEY_SCHEME = "amsk"
# The header a service key names the person it acts for in.
ACT_AS = "Act-As"
# The (service key id, person) of the request being served when it came through a service
# key: the change records it writes (the events feed) name both.
THROUGH_KEY: ContextVar[tuple[str, str] | None] = ContextVar("through_key", default=None)
# A service key without a person may use these routes only: it never reads content as itself.
KEY_ALONE_PATHS = r"^/v1/(organizations/[^/]+/users(/[^/]+)?|capabilities|me)$"


@dataclass(frozen=True)
class Principal:
    """Who is calling. The service admin (the admin token) belongs to no organization. A
    service key acting for a person is that person (`key_id` says which key); without one,
    its role is `service-key` and it may only manage the organization's users."""

    user_id: str | None
    org_id: str | None
    role: Role | Literal["service-admin", "service-key"]
    key_id: str | None = None

    @property
    def is_service_admin(self) -> bool:
        return self.role == "service-admin"

    @property
    def is_bare_key(self) -> bool:
        return self.role == "service-key"

    def manages_users_of(self, org_id: str) -> bool:
        """An administrator of the organization, the admin token, or the organization's key."""
        return self.administers(org_id) or (self.is_bare_key and self.org_id == org_id)

    def administers(self, org_id: str) -> bool:
        return self.is_service_admin or (self.org_id == org_id and self.role == "admin")

    def may_know(self, org_id: str) -> bool:
        """Whether objects of `org_id` may exist for this caller: its own organization (or
        the service admin's any). To everyone else they answer as ids that do not exist."""
        return self.is_service_admin or self.org_id == org_id


def person_of(principal: Principal, refusal: str) -> tuple[str, str]:
    """(user id, organization) of a person. The admin token is nobody's and may not act:
    it is refused with `refusal`, which names what belongs to a person."""
    if principal.user_id is None or principal.org_id is None:
        raise Forbidden(refusal)
    return principal.user_id, principal.org_id


SERVICE_ADMIN = Principal(user_id=None, org_id=None, role="service-admin")


@dataclass(frozen=True)
class IssuedToken:
    """A new bearer token. `secret` is shown once; only `digest` is stored."""

    secret: str
    prefix: str
    digest: str


def hash_token(token: str) -> str:
    """Tokens carry 160 random bits, so a plain SHA-256 is a safe, fast lookup key."""
    return hashlib.sha256(token.encode()).hexdigest()


def issue_token(scheme: str = TOKEN_SCHEME) -> IssuedToken:
    prefix = f"{scheme}_{secrets.token_hex(6)}"
    secret = f"{prefix}_{secrets.token_hex(20)}"
    return IssuedToken(secret=secret, prefix=prefix, digest=hash_token(secret))


def is_service_key(token: str) -> bool:
    return token.startswith(f"{SERVICE_KEY_SCHEME}_")


def token_matches(token: str, digest: str) -> bool:
    return bool(digest) and hmac.compare_digest(hash_token(token), digest)


# Who issued a token, as its holder reads it: an issuer's user id, or this (no id has a space).
ADMIN_TOKEN_ISSUER = "admin token"
# Tokens one person may hold at once; a rotation replaces them all in one transaction.
MAX_TOKENS_PER_USER = 20


def issuer(principal: Principal) -> str:
    """Who `principal` is on the tokens it issues: its user id, or the admin token."""
    if principal.key_id is not None and principal.user_id is None:
        return f"service key {principal.key_id}"
    if principal.user_id is None:
        return ADMIN_TOKEN_ISSUER
    return principal.user_id


@dataclass(frozen=True)
class HeldToken:
    """One token a person holds, as they may see it: never its secret or its digest."""

    prefix: str
    issued_by: str
    created_at: int


# --- Organization settings ---------------------------------------------------------------

SETTINGS_DEFAULTS: dict[str, Any] = {
    "memory": {"use": True, "generate": True},
    "agentMemory": True,
    "helperModel": None,
    "botMemory": True,
    "botMemoryModel": None,
    # Model names or `provider/*` patterns; None: the deployment's list (ALLOWED_MODELS).
    "allowedModels": None,
    # A service key acting for an unknown id of the organization creates that member.
    "autoProvisionUsers": False,
}


def effective_settings(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The defaults with what the organization set laid over them."""
    memory = dict(SETTINGS_DEFAULTS["memory"])
    memory.update(overrides.get("memory", {}))
    result = {k: overrides.get(k, v) for k, v in SETTINGS_DEFAULTS.items() if k != "memory"}
    return {"memory": memory, **result}


def patch_settings(overrides: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Configure's rule: a value sets, `null` resets to the default, a missing field keeps.

    `patch` holds only the fields the client sent; `"memory": null` resets both switches.
    """
    result = configured(
        {k: v for k, v in overrides.items() if k != "memory"},
        {k: v for k, v in patch.items() if k != "memory"},
    )
    memory = dict(overrides.get("memory", {}))
    if "memory" in patch:
        memory = {} if patch["memory"] is None else configured(memory, patch["memory"])
    if memory:
        result["memory"] = memory
    return result


def configured(values: Mapping[str, V], changes: Mapping[str, V | None]) -> dict[str, V]:
    """Configure's rule on a map of settings: a value sets, `null` removes (back to the
    default), a missing one is kept."""
    result = dict(values)
    for name, value in changes.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


# Client-chosen ids: ASCII letters and digits only, so the OpenAPI pattern says the same.
IDENTIFIER_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"


def require_identifier(value: str, path: list[str | int]) -> str:
    """Client-chosen ids: 1..64 of ASCII letters, digits, `-`, `_`, `.`; they appear in
    URLs."""
    if re.fullmatch(IDENTIFIER_PATTERN, value) is None:
        raise ValidationFailed("an id is 1 to 64 letters, digits, '-', '_' or '.'", path)
    return value
