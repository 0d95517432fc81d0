"""FastAPI dependencies: the services, the caller, and the blocking-call policy."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from anyio import to_thread
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from agent_memory.domain.errors import Forbidden, Unauthorized
from agent_memory.domain.identity import (
    ACT_AS,
    KEY_ALONE_PATHS,
    THROUGH_KEY,
    Principal,
    is_service_key,
)
from agent_memory.service.registry import Services

T = TypeVar("T")


def services(request: Request) -> Services:
    """Services are built on the first request, not at import: a cold start stays cheap."""
    provider: Callable[[], Services] = request.app.state.services
    return provider()


ServicesDep = Annotated[Services, Depends(services)]


async def run(svc: Services, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a blocking use case: inline in Lambda, in a worker thread on a local server."""
    if svc.settings.offload_blocking_calls:
        return await to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    return fn(*args, **kwargs)


_bearer = HTTPBearer(
    auto_error=False,
    description=(
        "A person's token, the deployment's admin token, or an organization's service key "
        "(`amsk_...`). With a service key, the `Act-As: <userId>` header names the person "
        "the request is for; without it, the key may only manage the organization's people "
        "(`/v1/organizations/{orgId}/users`), `/v1/me` and `/v1/capabilities`."
    ),
)


async def caller(
    request: Request,
    svc: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The authenticated caller; 401 without a valid token, 429 over a limit. A service key
    without a person reaches only the routes that manage the organization's people."""
    if credentials is None:
        return await run(svc, svc.identity.authenticate, None)
    act_as = request.headers.get(ACT_AS)
    principal = await run(svc, _admitted, svc, credentials.credentials, source(request), act_as)
    if principal.is_bare_key and not re.match(KEY_ALONE_PATHS, request.url.path):
        raise Forbidden(f"a service key reads nothing as itself: name the person in {ACT_AS}")
    if principal.key_id is not None and principal.user_id is not None:
        THROUGH_KEY.set((principal.key_id, principal.user_id))
    return principal


def source(request: Request) -> str:
    """API Gateway's `sourceIp` in Lambda, else the connection's peer."""
    event = request.scope.get("aws.event")
    if isinstance(event, dict):
        address = event.get("requestContext", {}).get("http", {}).get("sourceIp")
        if isinstance(address, str) and address:
            return address
    return request.client.host if request.client is not None else "unknown"


def _admitted(svc: Services, token: str, address: str, act_as: str | None) -> Principal:
    """Authenticate, then count against the token's limit (a service key's own, and the
    person's it acts for): unknown tokens write no row, and a token not yet known good is
    refused unread when its address is over its failed checks."""
    limits = svc.limits
    if not svc.identity.recognizes(token):
        limits.failures.check(address)

    def admit() -> None:
        if not is_service_key(token):
            limits.admit(token)
            return
        # The person first: one person over their limit does not use up the key's.
        if act_as is not None:
            limits.admit(f"{token}\n{act_as}")
        limits.admit_key(token)

    try:
        return svc.identity.authenticate(f"Bearer {token}", alongside=admit, act_as=act_as)
    except Unauthorized:
        limits.failures.failed(address)
        raise


CallerDep = Annotated[Principal, Depends(caller)]
