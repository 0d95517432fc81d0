"""A typed Python client of the agent-memory HTTP API (API.md).

    from agent_memory_client import Client
    with Client(base_url="http://127.0.0.1:8080", token="amk_...") as client:
        client.create_agent_memory("The user prefers metric units.", "preference")

`AsyncClient` has the same methods as coroutines. Errors raise `AgentMemoryError`
subclasses (`agent_memory_client.errors`) with the API's `code`, `message` and `path`.
"""

from agent_memory_client import errors, models
from agent_memory_client._async_client import AsyncClient
from agent_memory_client._base import UNSET
from agent_memory_client._sync_client import Client
from agent_memory_client.errors import (
    AgentMemoryError,
    ChatConflict,
    Conflict,
    EntryConflict,
    Forbidden,
    NotFound,
    SessionConflict,
    ThreadConflict,
    Throttled,
    TooLarge,
    Unauthorized,
    Unavailable,
    ValidationError,
    VersionConflict,
)

__all__ = [
    "UNSET",
    "AgentMemoryError",
    "AsyncClient",
    "ChatConflict",
    "Client",
    "Conflict",
    "EntryConflict",
    "Forbidden",
    "NotFound",
    "SessionConflict",
    "ThreadConflict",
    "Throttled",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "ValidationError",
    "VersionConflict",
    "errors",
    "models",
]
