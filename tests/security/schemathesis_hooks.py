"""Bounds on what schemathesis generates for the HTTP run (test_schemathesis_all_checks.py),
loaded by its CLI (`SCHEMATHESIS_HOOKS`), never imported by pytest.

These keep the generator to requests an HTTP client can send and the service reads; they
allow no status (schemathesis.toml allows none):

- a body is at most 1 MiB of JSON: past it the service answers 413 `TooLarge` before reading
  it, which the negative-data check would count as accepting a schema violation (the body
  limit is tests/api/test_bodies.py's);
- a memory command's key is not one the secret detector refuses (the key's description says
  such a key is a 400: no schema can say what looks like a secret);
- a query array holds strings: HTTP sends every query value as text, so a generated `null`
  or `true` item arrives as the valid string "null" or "true", and the negative-data check
  would blame the service for accepting it.
"""

from __future__ import annotations

import json
from typing import Any

import schemathesis

BODY_LIMIT = 1_048_576


@schemathesis.hook
def filter_body(context: Any, body: Any) -> bool:
    try:
        size = len(json.dumps(body).encode())
    except (TypeError, ValueError):
        return True
    return size <= BODY_LIMIT and not _secret_key(body)


def _secret_key(body: Any) -> bool:
    from agent_memory.domain.secrets import key_secret

    command = body.get("command") if isinstance(body, dict) else None
    key = command.get("key") if isinstance(command, dict) else None
    return isinstance(key, str) and key_secret(key) is not None


@schemathesis.hook
def filter_query(context: Any, query: Any) -> bool:
    if not isinstance(query, dict):
        return True
    return all(
        all(isinstance(item, str) for item in value)
        for value in query.values()
        if isinstance(value, list)
    )
