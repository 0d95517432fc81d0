"""Identity through HTTP: tokens, admin routes, organization settings, error shapes."""

from __future__ import annotations

from tests.conftest import Api


def test_healthz_needs_no_token(api: Api) -> None:
    answer = api.client.get("/healthz")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok"}
    assert answer.headers["x-correlation-id"]


def test_correlation_id_is_echoed(api: Api) -> None:
    answer = api.client.get("/healthz", headers={"x-correlation-id": "abc-123"})
    assert answer.headers["x-correlation-id"] == "abc-123"


def test_missing_and_unknown_tokens_are_401(api: Api) -> None:
    org = api.org()
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
        answer = api.client.get(f"/v1/organizations/{org}/settings", headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"]["_tag"] == "Unauthorized"


def test_a_user_token_works_until_revoked(api: Api) -> None:
    org = api.org()
    admin = api.user(org, role="admin")
    assert (
        api.client.get(f"/v1/organizations/{org}/settings", headers=admin.headers).status_code
        == 200
    )

    revoked = api.client.delete(f"/v1/admin/tokens/{admin.token_prefix}", headers=api.admin)
    assert revoked.status_code == 204
    answer = api.client.get(f"/v1/organizations/{org}/settings", headers=admin.headers)
    assert answer.status_code == 401


def test_a_second_token_outlives_the_first(api: Api) -> None:
    org = api.org()
    admin = api.user(org, role="admin")
    second = api.client.post("/v1/me/tokens", json={}, headers=admin.headers)
    assert second.status_code == 201
    token = second.json()["token"]
    revoked = api.client.delete(f"/v1/admin/tokens/{admin.token_prefix}", headers=api.admin)
    assert revoked.status_code == 204
    answer = api.client.get(
        f"/v1/organizations/{org}/settings", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200


def test_admin_routes_need_the_admin_token(api: Api) -> None:
    org = api.org()
    member = api.user(org)
    answer = api.client.post("/v1/admin/organizations", json={"name": "x"}, headers=member.headers)
    assert answer.status_code == 403
    assert answer.json()["error"]["_tag"] == "Forbidden"


def test_duplicate_ids_conflict(api: Api) -> None:
    api.org("acme")
    again = api.client.post(
        "/v1/admin/organizations", json={"id": "acme", "name": "Acme"}, headers=api.admin
    )
    assert again.status_code == 409
    user = api.user("acme", user_id="ana")
    dup = api.client.post(
        "/v1/admin/users", json={"organizationId": "acme", "id": user.id}, headers=api.admin
    )
    assert dup.status_code == 409


def test_user_of_an_unknown_organization_is_404(api: Api) -> None:
    answer = api.client.post("/v1/admin/users", json={"organizationId": "nope"}, headers=api.admin)
    assert answer.status_code == 404
    assert answer.json()["error"]["path"] == ["organizationId"]


def test_unknown_fields_are_400_with_their_path(api: Api) -> None:
    org = api.org()
    answer = api.client.patch(
        f"/v1/organizations/{org}/settings",
        json={"memory": {"use": True, "remember": False}},
        headers=api.admin,
    )
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "_tag": "ValidationError",
        "message": "unknown field",
        "path": ["memory", "remember"],
    }


def test_wrong_types_are_400_with_their_path(api: Api) -> None:
    org = api.org()
    answer = api.client.patch(
        f"/v1/organizations/{org}/settings", json={"agentMemory": "yes"}, headers=api.admin
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["path"] == ["agentMemory"]


def test_malformed_json_is_400(api: Api) -> None:
    org = api.org()
    answer = api.client.patch(
        f"/v1/organizations/{org}/settings",
        content=b"{not json",
        headers={**api.admin, "content-type": "application/json"},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["_tag"] == "ValidationError"


def test_settings_defaults(api: Api) -> None:
    org = api.org()
    answer = api.client.get(f"/v1/organizations/{org}/settings", headers=api.admin)
    assert answer.json() == {
        "memory": {"use": True, "generate": True},
        "agentMemory": True,
        "helperModel": None,
        "botMemory": True,
        "botMemoryModel": None,
        "allowedModels": None,
        "autoProvisionUsers": False,
    }


def test_settings_patch_sets_resets_and_keeps(api: Api) -> None:
    org = api.org()
    url = f"/v1/organizations/{org}/settings"
    first = api.client.patch(
        url,
        json={"memory": {"generate": False}, "agentMemory": False, "helperModel": "local/rules"},
        headers=api.admin,
    ).json()
    assert first["memory"] == {"use": True, "generate": False}
    assert first["agentMemory"] is False
    assert first["helperModel"] == "local/rules"

    # A missing field keeps; null resets to the default.
    second = api.client.patch(url, json={"agentMemory": None}, headers=api.admin).json()
    assert second["agentMemory"] is True
    assert second["memory"] == {"use": True, "generate": False}
    assert second["helperModel"] == "local/rules"

    third = api.client.patch(url, json={"memory": {"use": False}}, headers=api.admin).json()
    assert third["memory"] == {"use": False, "generate": False}

    # "memory": null resets both switches.
    fourth = api.client.patch(url, json={"memory": None}, headers=api.admin).json()
    assert fourth["memory"] == {"use": True, "generate": True}
    assert api.client.get(url, headers=api.admin).json() == fourth


def test_settings_reject_an_unknown_model_provider(api: Api) -> None:
    org = api.org()
    answer = api.client.patch(
        f"/v1/organizations/{org}/settings", json={"helperModel": "acme/gpt"}, headers=api.admin
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["path"] == ["helperModel"]


def test_settings_need_an_org_admin(api: Api) -> None:
    org = api.org()
    member = api.user(org)
    admin = api.user(org, role="admin")
    url = f"/v1/organizations/{org}/settings"
    assert api.client.get(url, headers=member.headers).status_code == 403
    assert (
        api.client.patch(url, json={"botMemory": False}, headers=admin.headers).status_code == 200
    )


def test_another_organization_is_404(api: Api) -> None:
    mine = api.org()
    theirs = api.org()
    admin = api.user(mine, role="admin")
    answer = api.client.get(f"/v1/organizations/{theirs}/settings", headers=admin.headers)
    assert answer.status_code == 404
    assert answer.json()["error"]["_tag"] == "NotFound"


def test_org_admin_cannot_mint_tokens_for_another_org(api: Api) -> None:
    mine = api.org()
    theirs = api.org()
    admin = api.user(mine, role="admin")
    stranger = api.user(theirs)
    answer = api.client.post(
        f"/v1/admin/users/{stranger.id}/tokens", json={}, headers=admin.headers
    )
    assert answer.status_code == 404
    revoke = api.client.delete(f"/v1/admin/tokens/{stranger.token_prefix}", headers=admin.headers)
    assert revoke.status_code == 404


def test_unknown_route_is_404_json(api: Api) -> None:
    answer = api.client.get("/v1/nothing-here", headers=api.admin)
    assert answer.status_code == 404
    assert answer.json()["error"]["_tag"] == "NotFound"


def test_oversized_body_is_413(api: Api) -> None:
    org = api.org()
    answer = api.client.patch(
        f"/v1/organizations/{org}/settings",
        content=b"{" + b" " * 2_000_000 + b"}",
        headers={**api.admin, "content-type": "application/json"},
    )
    assert answer.status_code == 413
    assert answer.json()["error"]["_tag"] == "TooLarge"


def test_tokens_are_stored_only_as_hashes(api: Api, local_aws) -> None:
    session, local = local_aws
    org = api.org()
    user = api.user(org)
    items = session.client("dynamodb").scan(TableName=local.table_name)["Items"]
    dump = repr(items)
    assert user.token not in dump
    assert user.token.rsplit("_", 1)[-1] not in dump
