"""Agent memories (seed 004) through HTTP on the embedded AWS."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.conftest import Api, User

URL = "/v1/agent_memories"
FIELDS = {
    "id",
    "object",
    "category",
    "content",
    "metadata",
    "entity",
    "importance",
    "expires_at",
    "created_at",
    "updated_at",
}
RFC3339_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
PAST = "2001-02-03T04:05:06Z"
FUTURE = "2999-01-01T00:00:00Z"


@pytest.fixture
def ana(api: Api) -> User:
    return api.user(api.org())


def create(api: Api, user: User, **fields: Any) -> dict[str, Any]:
    body = {"category": "fact", "content": "Ships express."} | fields
    answer = api.client.post(URL, json=body, headers=user.headers)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def listed(api: Api, user: User, query: str = "") -> dict[str, Any]:
    answer = api.client.get(f"{URL}{query}", headers=user.headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def ids(page: dict[str, Any]) -> list[str]:
    return [m["id"] for m in page["data"]]


def recall(api: Api, user: User, **body: Any) -> dict[str, Any]:
    answer = api.client.post(f"{URL}/recall", json=body, headers=user.headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def assert_error(answer: Any, status: int, path: list[Any] | None = None) -> None:
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    tags = {400: "ValidationError", 403: "Forbidden", 404: "NotFound"}
    assert error["_tag"] == tags[status]
    if path is not None:
        assert error["path"] == path


# --- The object --------------------------------------------------------------------------


def test_create_answers_the_seed_object_and_get_returns_it(api: Api, ana: User) -> None:
    entity = {"id": "cus_42", "type": "account", "name": "Acme Ltd", "handle": "acme@example.com"}
    made = create(
        api,
        ana,
        category="preference",
        content="Always wants express shipping.",
        metadata={"source": "call", "tags": ["shipping"]},
        entity=entity,
        importance=0.8,
        expires_at="2030-05-01T12:00:00Z",
    )
    assert set(made) == FIELDS
    assert made["id"].startswith("mem_")
    assert made["object"] == "agent_memory"
    assert made["category"] == "preference"
    assert made["content"] == "Always wants express shipping."
    assert made["metadata"] == {"source": "call", "tags": ["shipping"]}
    assert made["entity"] == {**entity, "object": "entity"}
    assert made["importance"] == 0.8
    assert made["expires_at"] == "2030-05-01T12:00:00.000Z"
    assert RFC3339_UTC.fullmatch(made["created_at"])
    assert made["created_at"] == made["updated_at"]
    fetched = api.client.get(f"{URL}/{made['id']}", headers=ana.headers)
    assert fetched.status_code == 200
    assert fetched.json() == made


def test_defaults_of_optional_fields(api: Api, ana: User) -> None:
    made = create(api, ana, category="instruction", content="Confirm freight first.")
    assert made["metadata"] is None
    assert made["entity"] is None
    assert made["importance"] == 0.5
    assert made["expires_at"] is None


@pytest.mark.parametrize(
    "metadata", [{"a": {"b": [1, 2]}}, [1, "two", None], "a string", 3.5, 0, True, False, None]
)
def test_metadata_is_any_json_value(api: Api, ana: User, metadata: Any) -> None:
    made = create(api, ana, metadata=metadata)
    fetched = api.client.get(f"{URL}/{made['id']}", headers=ana.headers).json()
    assert fetched["metadata"] == metadata
    assert type(fetched["metadata"]) is type(metadata)


@pytest.mark.parametrize("kind", ["account", "actor", "entity"])
def test_entity_types_and_nullable_name_and_handle(api: Api, ana: User, kind: str) -> None:
    made = create(api, ana, entity={"id": "x_1", "object": "entity", "type": kind})
    assert made["entity"] == {
        "id": "x_1",
        "object": "entity",
        "type": kind,
        "name": None,
        "handle": None,
    }


def test_expires_at_accepts_any_offset_and_answers_utc(api: Api, ana: User) -> None:
    made = create(api, ana, expires_at="2030-05-01T14:30:00.123456+02:00")
    assert made["expires_at"] == "2030-05-01T12:30:00.123Z"
    made = create(api, ana, expires_at="2030-05-01t07:00:00-05:30")
    assert made["expires_at"] == "2030-05-01T12:30:00.000Z"


# --- Validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"category": "opinion"}, ["category"]),
        ({"category": None}, ["category"]),
        ({"importance": -0.01}, ["importance"]),
        ({"importance": 1.01}, ["importance"]),
        ({"importance": "0.5"}, ["importance"]),
        ({"importance": True}, ["importance"]),
        ({"content": None}, ["content"]),
        ({"content": ""}, ["content"]),
        ({"content": "   "}, ["content"]),
        ({"content": "x" * 4001}, ["content"]),
        ({"content": 12}, ["content"]),
        ({"expires_at": "tomorrow"}, ["expires_at"]),
        ({"expires_at": "2030-05-01"}, ["expires_at"]),
        ({"expires_at": "2030-05-01T12:00:00"}, ["expires_at"]),
        ({"expires_at": "2030-02-30T12:00:00Z"}, ["expires_at"]),
        ({"expires_at": "2030-05-01T12:00:00+24:00"}, ["expires_at"]),
        ({"expires_at": 1893456000000}, ["expires_at"]),
        ({"colour": "red"}, ["colour"]),
        ({"metadata": {"blob": "x" * 17_000}}, ["metadata"]),
        ({"entity": {"type": "account"}}, ["entity", "id"]),
        ({"entity": {"id": "", "type": "account"}}, ["entity", "id"]),
        ({"entity": {"id": "a", "type": "user"}}, ["entity", "type"]),
        ({"entity": {"id": "a", "type": "actor", "object": "thing"}}, ["entity", "object"]),
        ({"entity": {"id": "a", "type": "actor", "email": "x"}}, ["entity", "email"]),
        ({"entity": "cus_1"}, ["entity"]),
    ],
)
def test_bad_input_is_400_naming_the_field_and_writes_nothing(
    api: Api, ana: User, body: dict[str, Any], path: list[Any]
) -> None:
    full = {"category": "fact", "content": "Ships express."} | body
    assert_error(api.client.post(URL, json=full, headers=ana.headers), 400, path)
    assert listed(api, ana)["data"] == []


def test_missing_required_fields_are_400(api: Api, ana: User) -> None:
    answer = api.client.post(URL, json={"category": "fact"}, headers=ana.headers)
    assert_error(answer, 400, ["content"])
    answer = api.client.post(URL, json={"content": "x"}, headers=ana.headers)
    assert_error(answer, 400, ["category"])


def test_limits_are_inclusive(api: Api, ana: User) -> None:
    assert create(api, ana, content="x" * 4000, importance=0)["importance"] == 0
    assert create(api, ana, importance=1)["importance"] == 1


# --- Update and delete ---------------------------------------------------------------------


def test_patch_changes_only_the_given_fields(api: Api, ana: User) -> None:
    made = create(api, ana, metadata={"k": 1}, entity={"id": "c1", "type": "actor"})
    time.sleep(0.002)
    answer = api.client.patch(f"{URL}/{made['id']}", json={"importance": 0.9}, headers=ana.headers)
    assert answer.status_code == 200, answer.text
    patched = answer.json()
    assert patched["importance"] == 0.9
    assert patched["created_at"] == made["created_at"]
    assert patched["updated_at"] > made["updated_at"]
    unchanged = {k: v for k, v in made.items() if k not in {"importance", "updated_at"}}
    assert {k: patched[k] for k in unchanged} == unchanged
    assert api.client.get(f"{URL}/{made['id']}", headers=ana.headers).json() == patched


def test_patch_every_field(api: Api, ana: User) -> None:
    made = create(api, ana)
    change = {
        "category": "instruction",
        "content": "Confirm freight before ordering.",
        "metadata": ["a", 1],
        "entity": {"id": "act_9", "type": "actor", "name": "Bo", "handle": "@bo"},
        "importance": 0.25,
        "expires_at": "2031-01-01T00:00:00+01:00",
    }
    patched = api.client.patch(f"{URL}/{made['id']}", json=change, headers=ana.headers).json()
    assert patched["entity"] == {**change["entity"], "object": "entity"}
    assert patched["expires_at"] == "2030-12-31T23:00:00.000Z"
    for name in ("category", "content", "metadata", "importance"):
        assert patched[name] == change[name]


def test_patch_null_clears_nullable_fields(api: Api, ana: User) -> None:
    made = create(
        api, ana, metadata={"k": 1}, entity={"id": "c1", "type": "actor"}, expires_at=FUTURE
    )
    nulls = {"metadata": None, "entity": None, "expires_at": None}
    patched = api.client.patch(f"{URL}/{made['id']}", json=nulls, headers=ana.headers).json()
    assert {k: patched[k] for k in nulls} == nulls
    assert listed(api, ana, "?entity=c1")["data"] == []


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"content": None}, ["content"]),
        ({"category": None}, ["category"]),
        ({"importance": None}, ["importance"]),
        ({"importance": 2}, ["importance"]),
        ({"category": "rumour"}, ["category"]),
        ({"expires_at": "soon"}, ["expires_at"]),
        ({"id": "mem_x"}, ["id"]),
        ({"created_at": "2020-01-01T00:00:00Z"}, ["created_at"]),
    ],
)
def test_bad_patch_is_400_and_changes_nothing(
    api: Api, ana: User, body: dict[str, Any], path: list[Any]
) -> None:
    made = create(api, ana)
    assert_error(api.client.patch(f"{URL}/{made['id']}", json=body, headers=ana.headers), 400, path)
    assert api.client.get(f"{URL}/{made['id']}", headers=ana.headers).json() == made


def test_empty_patch_changes_nothing(api: Api, ana: User) -> None:
    made = create(api, ana)
    assert api.client.patch(f"{URL}/{made['id']}", json={}, headers=ana.headers).json() == made


def test_delete_answers_deleted_then_404(api: Api, ana: User) -> None:
    made = create(api, ana, entity={"id": "c1", "type": "account"})
    answer = api.client.delete(f"{URL}/{made['id']}", headers=ana.headers)
    assert answer.status_code == 200
    assert answer.json() == {"id": made["id"], "object": "agent_memory", "deleted": True}
    assert_error(api.client.delete(f"{URL}/{made['id']}", headers=ana.headers), 404)
    assert_error(api.client.get(f"{URL}/{made['id']}", headers=ana.headers), 404)
    patch = api.client.patch(f"{URL}/{made['id']}", json={"content": "x"}, headers=ana.headers)
    assert_error(patch, 404)
    for query in ("", "?category=fact", "?entity=c1", "?entity=c1&category=fact"):
        assert listed(api, ana, query)["data"] == []
    assert recall(api, ana, limit=5)["data"] == []
    assert recall(api, ana, limit=5, entity="c1")["data"] == []


@pytest.mark.parametrize("memory_id", ["mem_doesnotexist", "nope", "mem_" + "a" * 900, "a#b"])
def test_unknown_ids_are_404(api: Api, ana: User, memory_id: str) -> None:
    for method in ("get", "delete"):
        assert_error(getattr(api.client, method)(f"{URL}/{memory_id}", headers=ana.headers), 404)
    patch = api.client.patch(f"{URL}/{memory_id}", json={}, headers=ana.headers)
    assert_error(patch, 404)


# --- Organization scope ----------------------------------------------------------------------


def test_another_organizations_memory_is_404(api: Api, ana: User) -> None:
    made = create(api, ana, entity={"id": "c1", "type": "account"})
    bob = api.user(api.org())
    url = f"{URL}/{made['id']}"
    assert_error(api.client.get(url, headers=bob.headers), 404)
    assert_error(api.client.patch(url, json={"content": "x"}, headers=bob.headers), 404)
    assert_error(api.client.delete(url, headers=bob.headers), 404)
    assert listed(api, bob)["data"] == []
    assert listed(api, bob, "?entity=c1")["data"] == []
    assert recall(api, bob, limit=10, entity="c1")["data"] == []
    assert api.client.get(url, headers=ana.headers).json() == made


def test_every_user_of_the_organization_shares_its_memories(api: Api, ana: User) -> None:
    made = create(api, ana)
    admin = api.user(ana.org_id, role="admin")
    other = api.user(ana.org_id)
    assert api.client.get(f"{URL}/{made['id']}", headers=admin.headers).status_code == 200
    patch = api.client.patch(f"{URL}/{made['id']}", json={"content": "y"}, headers=other.headers)
    assert patch.status_code == 200
    assert ids(listed(api, admin)) == [made["id"]]


def test_the_service_admin_token_has_no_memories(api: Api, ana: User) -> None:
    made = create(api, ana)
    assert_error(api.client.post(URL, json={"category": "fact", "content": "x"}, headers=api.admin), 403)
    assert_error(api.client.get(URL, headers=api.admin), 403)
    assert_error(api.client.get(f"{URL}/{made['id']}", headers=api.admin), 403)
    assert_error(api.client.post(f"{URL}/recall", json={}, headers=api.admin), 403)


def test_routes_need_a_token(api: Api) -> None:
    assert api.client.get(URL).status_code == 401
    assert api.client.post(f"{URL}/recall", json={}).status_code == 401
