"""infra/openapi.json is generated from the app; a stale copy fails the build."""

from __future__ import annotations

import json
from typing import Any

from infra.gen_openapi import OPENAPI_PATH, generate


def test_openapi_document_is_fresh() -> None:
    assert OPENAPI_PATH.exists(), "run `make openapi`"
    assert OPENAPI_PATH.read_text() == generate(), "infra/openapi.json is stale: run `make openapi`"


def test_every_route_but_healthz_needs_a_token_in_the_document() -> None:
    document = json.loads(generate())
    assert "/v1/organizations/{orgId}/settings" in document["paths"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            secured = bool(operation.get("security"))
            assert secured == (path != "/healthz"), f"{method.upper()} {path}"


def _document() -> dict[str, Any]:
    return dict(json.loads(generate()))


def test_schema_names_are_clean_for_generated_clients() -> None:
    """No module-qualified names (`agent_memory__api__contracts__...`): two answer models
    with one class name would give a generated client such names."""
    names = list(_document()["components"]["schemas"])
    assert [n for n in names if "__" in n or not n.isidentifier()] == []


def test_throttled_and_unavailable_answers_declare_retry_after() -> None:
    document = _document()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status in ("429", "503"):
                answer = operation["responses"].get(status)
                if answer is not None:
                    assert "Retry-After" in answer.get("headers", {}), (method, path, status)


def test_lists_and_deletes_users_expect_are_documented() -> None:
    paths = _document()["paths"]
    assert {"get", "post"} <= set(paths["/v1/agents"])
    assert {"get", "post"} <= set(paths["/v1/sessions"])
    assert {"get", "delete"} <= set(paths["/v1/sessions/{sessionId}"])
    assert {"get", "delete"} <= set(paths["/v1/agents/{agentId}"])
    assert "get" in paths["/v1/sessions/{sessionId}/items"]
    assert "post" in paths["/v1/organizations/{orgId}/users/{userId}/erase"]
    limit = next(p for p in paths["/v1/agents"]["get"]["parameters"] if p["name"] == "limit")[
        "schema"
    ]
    assert (limit["minimum"], limit["maximum"]) == (1, 100)


def test_the_bot_memory_tags_schema_names_every_service_tag_the_server_reads() -> None:
    """contracts/bots.py states the service tag prefixes by hand (importing the audience
    rules would cost the bots function's cold start): they must be the domain's own, but
    for the hidden ones a reader never sees nor filters by."""
    from agent_memory.api.contracts.bots import SERVICE_PREFIXES
    from agent_memory.domain.tags import HIDDEN_PREFIXES, PREFIXES

    stated = set(SERVICE_PREFIXES.split("|"))
    shown = {prefix for prefix, _kind in PREFIXES if prefix not in HIDDEN_PREFIXES}
    assert stated == {prefix.removesuffix(":") for prefix in shown}
