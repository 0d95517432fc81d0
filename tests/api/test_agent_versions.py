"""Agent versions and their memory options over HTTP (API.md, "Agents' memory options")."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, User
from tests.support.options import BAD
from tests.support.threads import agent_of

P = ["memory", "options"]


def patch(api: Api, user: User, agent: str, memory: Any) -> Any:
    return api.client.patch(
        f"/v1/agents/{agent}/draft", json={"memory": memory}, headers=user.headers
    )


def draft(api: Api, user: User, agent: str) -> dict[str, Any]:
    answer = api.client.get(f"/v1/agents/{agent}/draft", headers=user.headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["draft"])


@pytest.fixture
def world(api: Api) -> tuple[User, User, User, str]:
    org = api.org()
    owner, member, stranger = api.user(org), api.user(org), api.user(org)
    return owner, member, stranger, agent_of(api, owner, [member.id])


def test_a_new_agent_has_no_memory_block_and_the_platform_defaults(
    api: Api, world: tuple[User, User, User, str]
) -> None:
    owner, _, _, agent = world
    seen = draft(api, owner, agent)
    assert seen["memory"] is None
    options = seen["effective"]["memory"]["options"]
    assert options["lastMessages"] == 10
    assert options["generateTitle"]["enabled"] is True
    assert options["semanticRecall"]["enabled"] is False
    assert options["workingMemory"]["enabled"] is False
    assert options["observationalMemory"]["enabled"] is False
    assert options["readOnly"] is False


def test_patch_saves_the_block_as_sent_and_answers_it_with_the_effective_options(
    api: Api, world: tuple[User, User, User, str]
) -> None:
    owner, member, _, agent = world
    memory = {
        "options": {
            "workingMemory": {"enabled": True, "scope": "resource"},
            "observationalMemory": {
                "enabled": True,
                "activateAfterIdle": "5m",
                "observation": {"manageWorkingMemory": True, "bufferOnIdle": True},
            },
        }
    }
    answer = patch(api, member, agent, memory)
    assert answer.status_code == 200, answer.text
    assert answer.json()["draft"]["memory"] == memory
    seen = draft(api, owner, agent)
    assert seen["memory"] == memory
    options = seen["effective"]["memory"]["options"]
    assert options["observationalMemory"]["activateAfterIdle"] == 300_000
    assert options["workingMemory"]["agentManaged"] is False
    # PATCH replaces the block: no deep merge.
    patch(api, owner, agent, {"options": {"lastMessages": 3}})
    seen = draft(api, owner, agent)
    assert seen["memory"] == {"options": {"lastMessages": 3}}
    assert seen["effective"]["memory"]["options"]["workingMemory"]["enabled"] is False


@pytest.mark.parametrize(("options", "path"), BAD)
def test_a_bad_option_is_a_400_naming_its_path_and_saves_nothing(
    api: Api, world: tuple[User, User, User, str], options: dict[str, Any], path: list[Any]
) -> None:
    owner, _, _, agent = world
    patch(api, owner, agent, {"options": {"lastMessages": 7}})
    answer = patch(api, owner, agent, {"options": options})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["_tag"] == "ValidationError"
    assert answer.json()["error"]["path"] == [*P, *path]
    assert draft(api, owner, agent)["memory"] == {"options": {"lastMessages": 7}}


def test_memory_null_restores_the_defaults(api: Api, world: tuple[User, User, User, str]) -> None:
    owner, _, _, agent = world
    patch(api, owner, agent, {"options": {"lastMessages": 0, "readOnly": True}})
    answer = patch(api, owner, agent, None)
    assert answer.status_code == 200, answer.text
    seen = draft(api, owner, agent)
    assert seen["memory"] is None
    assert seen["effective"]["memory"]["options"]["lastMessages"] == 10


def test_the_version_lifecycle(api: Api, world: tuple[User, User, User, str]) -> None:
    owner, member, _, agent = world
    listed = api.client.get(f"/v1/agents/{agent}/versions", headers=owner.headers).json()
    assert listed == {"versions": [], "active": None}
    patch(api, owner, agent, {"options": {"lastMessages": 20}})
    first = api.client.post(f"/v1/agents/{agent}/publish", json={}, headers=owner.headers)
    assert first.status_code == 201, first.text
    assert first.json()["version"]["number"] == 1
    assert first.json()["version"]["memory"] == {"options": {"lastMessages": 20}}
    patch(api, member, agent, {"options": {"lastMessages": 30}})
    second = api.client.post(f"/v1/agents/{agent}/publish", json={}, headers=member.headers)
    assert second.json()["version"]["number"] == 2
    activated = api.client.post(
        f"/v1/agents/{agent}/versions/1/activate", json={}, headers=owner.headers
    )
    assert activated.status_code == 200, activated.text
    assert activated.json() == {"active": 1}
    listed = api.client.get(f"/v1/agents/{agent}/versions", headers=member.headers).json()
    assert [v["number"] for v in listed["versions"]] == [2, 1]
    assert listed["active"] == 1
    assert listed["versions"][0]["effective"]["memory"]["options"]["lastMessages"] == 30
    missing = api.client.post(
        f"/v1/agents/{agent}/versions/9/activate", json={}, headers=owner.headers
    )
    assert missing.status_code == 404


def test_people_without_a_grant_and_other_organizations_get_404(
    api: Api, world: tuple[User, User, User, str]
) -> None:
    _, _, stranger, agent = world
    outsider = api.user(api.org())
    for user in (stranger, outsider):
        assert api.client.get(f"/v1/agents/{agent}/draft", headers=user.headers).status_code == 404
        assert patch(api, user, agent, None).status_code == 404
        publish = api.client.post(f"/v1/agents/{agent}/publish", json={}, headers=user.headers)
        assert publish.status_code == 404
    operator = api.client.get(f"/v1/agents/{agent}/draft", headers=api.admin)
    assert operator.status_code == 403


def test_no_option_text_is_stored_in_the_clear(
    api: Api, world: tuple[User, User, User, str], adapters: Any
) -> None:
    owner, _, _, agent = world
    secret = "Keep the order numbers of Mrs Robinson"
    memory = {"options": {"observationalMemory": {"observation": {"instruction": secret}}}}
    assert patch(api, owner, agent, memory).status_code == 200
    api.client.post(f"/v1/agents/{agent}/publish", json={}, headers=owner.headers)
    api.client.post(f"/v1/agents/{agent}/versions/1/activate", json={}, headers=owner.headers)
    rows = adapters.store.query(f"AGENT#{agent}").records
    assert {r["sk"] for r in rows} >= {"DRAFT", "PUBLISHED", "VERSION#00000001"}
    assert secret.encode() not in repr(rows).encode()


def test_a_model_outside_the_organizations_allowed_models_is_a_400_at_its_field(
    api: Api, world: tuple[User, User, User, str]
) -> None:
    owner, _, _, agent = world
    org_admin = api.user(owner.org_id, role="admin")
    narrowed = api.client.patch(
        f"/v1/organizations/{owner.org_id}/settings",
        json={"allowedModels": ["local/*"]},
        headers=org_admin.headers,
    )
    assert narrowed.status_code == 200, narrowed.text
    outside = {"options": {"generateTitle": {"model": "openai/gpt-4o-mini"}}}
    answer = patch(api, owner, agent, outside)
    assert answer.status_code == 400
    assert answer.json()["error"]["path"] == [*P, "generateTitle", "model"]
    assert draft(api, owner, agent)["memory"] is None
    inside = {"options": {"observationalMemory": {"model": "local/rules"}}}
    assert patch(api, owner, agent, inside).status_code == 200


def test_publish_and_activate_refuse_a_model_the_organization_no_longer_allows(
    api: Api, world: tuple[User, User, User, str]
) -> None:
    """The list may narrow after a draft or a version named a model: publishing or
    activating it is then a 400 at that model's field, and nothing changes."""
    owner, _, _, agent = world
    org_admin = api.user(owner.org_id, role="admin")
    url = f"/v1/agents/{agent}"

    def allow(models: list[str]) -> None:
        answer = api.client.patch(
            f"/v1/organizations/{owner.org_id}/settings",
            json={"allowedModels": models},
            headers=org_admin.headers,
        )
        assert answer.status_code == 200, answer.text

    assert patch(api, owner, agent, {"options": {"lastMessages": 5}}).status_code == 200
    first = api.client.post(f"{url}/publish", json={}, headers=owner.headers)
    assert first.status_code == 201, first.text
    titled = {"options": {"generateTitle": {"model": "local/rules"}}}
    assert patch(api, owner, agent, titled).status_code == 200
    second = api.client.post(f"{url}/publish", json={}, headers=owner.headers)
    assert second.json()["version"]["number"] == 2
    allow(["openai/*"])
    refused = api.client.post(f"{url}/publish", json={}, headers=owner.headers)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["path"] == [*P, "generateTitle", "model"]
    activated = api.client.post(f"{url}/versions/2/activate", json={}, headers=owner.headers)
    assert activated.status_code == 400, activated.text
    assert activated.json()["error"]["path"] == [*P, "generateTitle", "model"]
    listed = api.client.get(f"{url}/versions", headers=owner.headers).json()
    assert ([v["number"] for v in listed["versions"]], listed["active"]) == ([2, 1], None)
    # A version naming no model still activates.
    one = api.client.post(f"{url}/versions/1/activate", json={}, headers=owner.headers)
    assert one.status_code == 200, one.text
