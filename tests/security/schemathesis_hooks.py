"""A check of the HTTP schemathesis step (test_schemathesis_all_checks.py), loaded by the
schemathesis CLI (`SCHEMATHESIS_HOOKS`), never imported by pytest.

schemathesis.toml lets the operations of `DATA_RULES` refuse a schema-valid request with a
400: each has a rule on stored data that no schema can state (a cursor the feed issued to
this caller, a thread of the agent listed, the bot's own organization). That allowance
covers the whole status, so this check narrows it back: such a 400 must name the rule's
field (the first element of the error's `path`); a 400 at any other field of those
operations still fails the run, as positive_data_acceptance fails it everywhere else.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import schemathesis

CONFIG = Path(__file__).with_name("schemathesis.toml")

# Operation -> the fields whose rule depends on stored data (400 there is the answer).
DATA_RULES: dict[str, frozenset[str]] = {
    # API.md "Events": cursors are opaque; one not issued to this caller is malformed.
    "GET /v1/events": frozenset({"after"}),
    # A thread of the caller, but of another agent than `agentId`: not a page of that list.
    "GET /v1/threads": frozenset({"starting_after"}),
    # A link is to another organization: the bot's own (stored) one is refused.
    "POST /v1/bots/{botId}/links": frozenset({"organizationId"}),
}


def _allowed_400() -> set[str]:
    """The operations schemathesis.toml lets answer 400 to positive data."""
    allowed = set()
    for operation in tomllib.loads(CONFIG.read_text()).get("operations", []):
        check = operation.get("checks", {}).get("positive_data_acceptance", {})
        if "400" in check.get("expected-statuses", []):
            allowed.add(str(operation["include-name"]))
    return allowed


# The config and this table name the same operations, or the run does not start.
if _allowed_400() != set(DATA_RULES):
    raise RuntimeError(f"schemathesis.toml allows 400 on {_allowed_400()}, not {set(DATA_RULES)}")


def _error_field(response: Any) -> object:
    try:
        path = json.loads(response.content)["error"]["path"]
    except (ValueError, KeyError, TypeError):
        return None
    return path[0] if isinstance(path, list) and path else None


@schemathesis.check
def refused_by_a_data_rule(ctx: Any, response: Any, case: Any) -> bool | None:
    """A 400 to schema-valid data of a DATA_RULES operation names one of its rule's fields."""
    fields = DATA_RULES.get(case.operation.label)
    meta = case.meta
    if fields is None or meta is None or response.status_code != 400:
        return None
    if not meta.generation.mode.is_positive:
        return None
    field = _error_field(response)
    if field not in fields:
        raise AssertionError(
            f"Schema-valid request refused with 400 at {field!r}, not by the data rule of "
            f"{sorted(fields)}: {response.content[:300]!r}"
        )
    return None
