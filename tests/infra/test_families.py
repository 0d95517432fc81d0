"""One function per API family (api/families.py): every router of the app belongs to exactly
one family, every path goes to the one function that serves it, template.yaml routes each
family's prefixes to its function, and a family's function answers its routes and only them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agent_memory.api import families
from agent_memory.api.app import create_app
from infra.cfn_yaml import load_template
from tests.conftest import ADMIN_TOKEN

ROOT = Path(__file__).resolve().parents[2]


def _paths(name: str) -> set[str]:
    return {route.path for router in families.routers(name) for route in router.routes}


def test_every_router_of_the_app_belongs_to_exactly_one_family() -> None:
    owners: dict[int, list[str]] = {}
    for family in families.FAMILIES:
        for router in families.routers(family.name):
            owners.setdefault(id(router), []).append(family.name)
    assert {k: v for k, v in owners.items() if len(v) > 1} == {}
    assert [f.name for f in families.FAMILIES if f.catch_all] == ["identity"]


def test_every_path_goes_to_the_family_that_serves_it() -> None:
    for family in families.FAMILIES:
        for path in _paths(family.name):
            claimed = [
                other.name
                for other in families.FAMILIES
                if any(families.claims(prefix, path) for prefix in other.prefixes)
            ]
            assert claimed == [family.name], path
            assert families.family_of(path) == family


def test_no_prefix_is_claimed_by_two_families() -> None:
    prefixes = [(f.name, p) for f in families.FAMILIES for p in f.prefixes]
    for name, prefix in prefixes:
        for other, claimed in prefixes:
            if other != name:
                assert not families.claims(prefix, claimed), (prefix, claimed)
                assert not families.claims(claimed, prefix), (claimed, prefix)
    assert families.family_of("/v1/nothing-here").catch_all


def test_an_unknown_family_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'conversations' is not one of identity, agents"):
        families.family("conversations")


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """API_FAMILY -> the properties of the function template.yaml runs it in."""
    found = {}
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        family = props.get("Environment", {}).get("Variables", {}).get("API_FAMILY")
        if resource["Type"] == "AWS::Serverless::Function" and family:
            assert props["Handler"] == "api.handler.handler"
            assert props["Layers"] == [{"Ref": "CoreLayer"}]
            # Every family has the API's policy first; a family's own extra grants (the
            # threads family's Bedrock invoke) are tests/infra/test_iam.py's to check.
            assert props["Policies"][0] == {"Ref": "ApiPolicy"}
            found[family] = props
    return found


def test_the_template_routes_each_prefix_to_its_family_function() -> None:
    template = load_template(ROOT / "template.yaml")
    functions = _functions(template)
    assert set(functions) == {f.name for f in families.FAMILIES}
    served: dict[str, str] = {}
    for family in families.FAMILIES:
        routes = set()
        for event in functions[family.name]["Events"].values():
            assert event["Type"] == "HttpApi"
            assert event["Properties"]["ApiId"] == {"Ref": "HttpApi"}
            assert event["Properties"]["Method"] == "ANY"
            routes.add(event["Properties"]["Path"])
        if family.catch_all:
            expected = {"/", "/{proxy+}"}
        else:
            expected = {p for prefix in family.prefixes for p in (prefix, f"{prefix}/{{proxy+}}")}
        assert routes == expected, family.name
        for route in routes:
            assert route not in served, (route, served.get(route), family.name)
            served[route] = family.name


@pytest.fixture
def family_client(services: Any) -> Iterator[Any]:
    clients: dict[str, TestClient] = {}

    def client(name: str) -> TestClient:
        if name not in clients:
            app = create_app(lambda: services, routers=families.routers(name))
            clients[name] = TestClient(app, raise_server_exceptions=False)
        return clients[name]

    yield client
    for each in clients.values():
        each.close()


def test_a_family_function_answers_its_own_routes_and_404s_the_others(
    family_client: Any,
) -> None:
    identity, threads = family_client("identity"), family_client("threads")
    org = identity.post(
        "/v1/admin/organizations",
        json={"name": "Acme"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    assert org.status_code == 201, org.text
    user = identity.post(
        "/v1/admin/users",
        json={"organizationId": org.json()["id"], "role": "member"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    ).json()
    headers = {"Authorization": f"Bearer {user['token']}"}
    assert identity.get("/v1/me", headers=headers).status_code == 200
    assert threads.get("/v1/threads", headers=headers).status_code == 200
    # What API Gateway would never send it still gets the API's own 404.
    for client, path in ((threads, "/v1/me"), (identity, "/v1/threads")):
        answer = client.get(path, headers=headers)
        assert answer.status_code == 404, path
        assert answer.json()["error"]["_tag"] == "NotFound", path
    assert identity.get("/healthz").status_code == 200
    assert threads.get("/healthz").status_code == 404
