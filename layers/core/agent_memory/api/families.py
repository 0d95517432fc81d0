"""The API's route families: one Lambda function per family behind the one HTTP API.

A family imports only its own routers; the catch-all family also answers every path no other
family claims, so an unknown path still gets the API's 404.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import APIRouter


@dataclass(frozen=True)
class Family:
    name: str
    # `module` (its `router`) or `module:attribute`, under agent_memory.api.routers.
    routers: tuple[str, ...]
    prefixes: tuple[str, ...]
    # The function behind the HTTP API's `/` and `/{proxy+}` routes.
    catch_all: bool = False


FAMILIES: tuple[Family, ...] = (
    Family(
        "identity",
        ("health", "me", "capabilities", "admin", "admin:organizations"),
        ("/healthz", "/v1/me", "/v1/capabilities", "/v1/admin", "/v1/organizations"),
        catch_all=True,
    ),
    Family("agents", ("agents", "agent_memory", "agent_versions"), ("/v1/agents",)),
    Family("sessions", ("sessions", "sessions:promote"), ("/v1/sessions",)),
    Family("agent_memories", ("memory_objects",), ("/v1/agent_memories",)),
    Family("bots", ("bots", "bots:memory_bot"), ("/v1/bots",)),
    Family("chats", ("chats", "chats:memory_bot"), ("/v1/chats", "/v1/channels")),
    Family("threads", ("threads", "events"), ("/v1/threads", "/v1/events")),
    Family("docs", ("docs", "console"), ("/docs", "/console")),
)


def family(name: str) -> Family:
    """The family called `name`; ValueError names the known ones otherwise."""
    for candidate in FAMILIES:
        if candidate.name == name:
            return candidate
    known = ", ".join(f.name for f in FAMILIES)
    raise ValueError(f"API_FAMILY {name!r} is not one of {known}")


def claims(prefix: str, path: str) -> bool:
    """Whether the HTTP API sends `path` to a family with `prefix` (`P` and `P/{proxy+}`)."""
    return path == prefix or path.startswith(prefix + "/")


def family_of(path: str) -> Family:
    """The family whose function serves `path` (the catch-all when none claims it)."""
    for candidate in FAMILIES:
        if any(claims(prefix, path) for prefix in candidate.prefixes):
            return candidate
    return next(f for f in FAMILIES if f.catch_all)


def routers(name: str) -> tuple[APIRouter, ...]:
    found = []
    for reference in family(name).routers:
        module, _, attribute = reference.partition(":")
        imported = importlib.import_module(f"agent_memory.api.routers.{module}")
        found.append(getattr(imported, attribute or "router"))
    return tuple(found)
