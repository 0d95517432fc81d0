"""Schemathesis against the in-process app on the embedded AWS, from infra/openapi.json.

Every operation of the document gets generated requests, valid (positive) and invalid
(negative), sent as an organization admin (the service admin on `/v1/admin/*`), with real
ids in the path so the bodies reach the use cases. Checks:

- `not_a_server_error`: no 5xx;
- `response_schema_conformance`: a documented status answers the documented shape;
- `negative_data_rejection`: invalid input is refused, with one of the check's own statuses
  (a schema limit exceeded is a 400; a 413 only for a body over the 1 MiB byte limit);
- `errors_have_the_contract_shape` (ours): every 4xx is `{"error": {"_tag", "message",
  "path": [...]}}`, a 400 is a `ValidationError`, and invalid input never gets the 422
  that FastAPI would send by default.

The budget is small and derandomized (15 examples per operation and mode); set
`SCHEMATHESIS_EXAMPLES` to change it, or `--run-slow` (tests/conftest.py) for 200.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    negative_data_rejection,
    response_schema_conformance,
)

from infra.gen_openapi import OPENAPI_PATH
from tests.conftest import ADMIN_TOKEN

DOCUMENT = json.loads(OPENAPI_PATH.read_text())
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
OPERATIONS = sorted(result.ok().label for result in SCHEMA.get_all_operations())
EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "15"))
SLOW_EXAMPLES = max(EXAMPLES, 200)
# create_app's body limit in bytes.
BODY_LIMIT = 1_048_576


def errors_have_the_contract_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """API.md, "Errors": one body shape for every error; 400 names the offending path."""
    status = response.status_code
    if status < 400:
        return None
    assert status != 422, "invalid input must be a 400 ValidationError, not FastAPI's 422"
    body = response.json()
    error = body.get("error") if isinstance(body, dict) else None
    assert isinstance(error, dict), f"{status} without an error object: {body}"
    assert isinstance(error.get("_tag"), str), f"{status} without a _tag: {body}"
    assert isinstance(error.get("message"), str), f"{status} without a message: {body}"
    assert isinstance(error.get("path"), list), f"{status} without a path list: {body}"
    if status == 400:
        assert error["_tag"] == "ValidationError", f"400 tagged {error['_tag']}: {body}"
    return True


def negative_data_is_rejected(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis' negative-data check; a body over the byte limit (1 MiB, which no JSON
    Schema can state) is API.md's 413 `TooLarge`, whatever else is wrong with it."""
    body = response.request.body or b""
    if response.status_code == 413 and len(body) > BODY_LIMIT:
        return None
    return negative_data_rejection(ctx, response, case)  # type: ignore[no-any-return]


CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    negative_data_is_rejected,
    errors_have_the_contract_shape,
]


@dataclass
class Target:
    app: Any
    ids: dict[str, str]
    member: dict[str, str]
    admin: dict[str, str] = field(
        default_factory=lambda: {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )

    def headers(self, label: str) -> dict[str, str]:
        return self.admin if " /v1/admin/" in label else self.member

    def name_real_objects(self, case: Any) -> None:
        """Ids in a valid body name objects that exist, so the request reaches the use case."""
        body = case.body
        if not isinstance(body, dict):
            return
        real = {
            "organizationId": self.ids["orgId"],
            "agentId": self.ids["agentId"],
            "members": [self.ids["userId"]],
            "botId": self.ids["botId"],
            "chatId": self.ids["chatId"],
            "channelId": self.ids["channelId"],
        }
        changed = {name: value for name, value in real.items() if name in body}
        if changed:
            case.body = {**body, **changed}

    def path_parameters(self, label: str) -> dict[str, str]:
        """Real objects for the path; a DELETE gets its own (the first example deletes it)."""
        names = [p["name"] for p in _parameters(label) if p["in"] == "path"]
        deleting = label.startswith("DELETE ")
        if label == "DELETE /v1/admin/organizations/{orgId}":
            return {"orgId": self.ids["orgId.gone"]}  # an organization of its own
        return {n: self.ids[f"{n}.delete" if deleting else n] for n in names}


def _parameters(label: str) -> list[dict[str, Any]]:
    method, path = label.split(" ", 1)
    return list(DOCUMENT["paths"][path][method.lower()].get("parameters", []))


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    from fastapi.testclient import TestClient

    from agent_memory.api.app import create_app
    from agent_memory.bootstrap import aws_adapters, build_services
    from tests.support.aws import embedded_settings

    with embedded_settings() as (session, _local, settings):
        services = build_services(settings, aws_adapters(settings, session))
        app = create_app(lambda: services)
        with TestClient(app, raise_server_exceptions=False) as client:
            yield _objects(client, app)


def _objects(client: Any, app: Any) -> Target:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

    def post(path: str, body: Any, headers: dict[str, str]) -> Any:
        answer = client.post(path, json=body, headers=headers)
        assert answer.status_code == 201, answer.text
        return answer.json()

    org = post("/v1/admin/organizations", {"name": "Acme"}, admin)["id"]
    boss = post("/v1/admin/users", {"organizationId": org, "role": "admin"}, admin)
    spare = post("/v1/admin/users", {"organizationId": org}, admin)
    doomed = post(f"/v1/admin/users/{spare['id']}/tokens", {}, admin)
    member = {"Authorization": f"Bearer {boss['token']}"}
    agent = post("/v1/agents", {"name": "helper"}, member)["agent"]["id"]
    session = post("/v1/sessions", {"agentId": agent, "kind": "subagent"}, member)
    memory = {"category": "fact", "content": "Orders 40 pallets a month."}
    ids = {
        "orgId": org,
        "userId": spare["id"],
        "tokenPrefix": spare["tokenPrefix"],
        "tokenPrefix.delete": doomed["tokenPrefix"],
        "agentId": agent,
        "sessionId": session["session"]["id"],
        "sessionId.delete": post("/v1/sessions", {"agentId": agent, "kind": "chat"}, member)[
            "session"
        ]["id"],
        "agentId.delete": post("/v1/agents", {"name": "doomed"}, member)["agent"]["id"],
        "memoryId": post("/v1/agent_memories", memory, member)["id"],
        "memoryId.delete": post("/v1/agent_memories", memory, member)["id"],
    }
    ids["botId"] = post("/v1/bots", {"name": "Helper"}, member)["bot"]["id"]
    channel = {"name": "Team", "members": [spare["id"]]}
    ids["channelId"] = post("/v1/channels", channel, member)["channel"]["id"]
    chat = {"botId": ids["botId"]}
    ids["chatId"] = post("/v1/chats", chat, member)["chat"]["id"]
    ids["chatId.delete"] = post("/v1/chats", chat, member)["chat"]["id"]
    turn = post(f"/v1/chats/{ids['chatId']}/turns", {"input": "Plan the trip."}, member)
    ids["turnId"] = turn["turn"]["id"]
    ids["n"] = "1"  # a version number: the route answers whether or not it exists
    ids["threadId"] = post("/v1/threads", {"agentId": agent}, member)["thread"]["id"]
    ids["threadId.delete"] = post("/v1/threads", {"agentId": agent}, member)["thread"]["id"]
    # A DELETE names the organization it acts in; its own person and key go.
    ids["orgId.delete"] = org
    ids["userId.delete"] = post(f"/v1/organizations/{org}/users", {}, member)["user"]["id"]
    ids["keyId"] = post(f"/v1/organizations/{org}/service-keys", {"name": "k"}, member)["id"]
    ids["keyId.delete"] = ids["keyId"]
    ids["orgId.gone"] = post("/v1/admin/organizations", {"name": "Gone"}, admin)["id"]
    return Target(app, ids, member)


def run_operation(target: Target, label: str, examples: int) -> set[tuple[str, int]]:
    """Generated requests for one operation; the (mode, status) pairs seen."""
    seen: set[tuple[str, int]] = set()
    operation = SCHEMA.find_operation_by_label(label)
    assert operation is not None
    # Path parameters are fixed: without a body or a query there is nothing to make invalid.
    method, path = label.split(" ", 1)
    definition = DOCUMENT["paths"][path][method.lower()]
    modes = [GenerationMode.POSITIVE]
    if "requestBody" in definition or any(p["in"] != "path" for p in _parameters(label)):
        modes.append(GenerationMode.NEGATIVE)
    for mode in modes:
        # The token is fixed: an invalid one is the access matrix's business.
        strategy = operation.as_strategy(
            generation_mode=mode,
            path_parameters=target.path_parameters(label),
            headers=target.headers(label),
        )

        @given(case=strategy)
        @settings(
            max_examples=examples,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            if mode is GenerationMode.POSITIVE:
                target.name_real_objects(case)
            response = case.call(app=target.app)
            seen.add((mode.value, response.status_code))
            case.validate_response(response, checks=CHECKS)

        check()
    return seen


@pytest.mark.parametrize("label", OPERATIONS)
def test_generated_requests_get_answers_that_match_the_contract(target: Target, label: str) -> None:
    run_operation(target, label, EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("label", OPERATIONS)
def test_generated_requests_with_a_large_budget(target: Target, label: str) -> None:
    run_operation(target, label, SLOW_EXAMPLES)
