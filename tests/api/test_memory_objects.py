"""Agent memories (seed 004) through HTTP on the embedded AWS."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.conftest import Api, User
from tests.support.memory_objects import URL, create, recall

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
    # A key-value client's place for it (ADR 0082), null for others.
    "namespace",
    "key",
}
RFC3339_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
PAST = "2001-02-03T04:05:06Z"
FUTURE = "2999-01-01T00:00:00Z"


@pytest.fixture
def ana(api: Api) -> User:
    return api.user(api.org())


def listed(api: Api, user: User, query: str = "") -> dict[str, Any]:
    answer = api.client.get(f"{URL}{query}", headers=user.headers)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def ids(page: dict[str, Any]) -> list[str]:
    return [m["id"] for m in page["data"]]


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
    assert_error(
        api.client.post(URL, json={"category": "fact", "content": "x"}, headers=api.admin), 403
    )
    assert_error(api.client.get(URL, headers=api.admin), 403)
    assert_error(api.client.get(f"{URL}/{made['id']}", headers=api.admin), 403)
    assert_error(api.client.post(f"{URL}/recall", json={}, headers=api.admin), 403)


def test_routes_need_a_token(api: Api) -> None:
    assert api.client.get(URL).status_code == 401
    assert api.client.post(f"{URL}/recall", json={}).status_code == 401


# --- Lists -----------------------------------------------------------------------------------


def test_list_is_newest_first_with_a_default_limit_of_10(api: Api, ana: User) -> None:
    made = [create(api, ana, content=f"note {n}")["id"] for n in range(12)]
    page = listed(api, ana)
    assert page["object"] == "list"
    assert ids(page) == made[::-1][:10]
    assert page["has_more"] is True
    assert set(page["data"][0]) == FIELDS


def test_list_pages_with_starting_after(api: Api, ana: User) -> None:
    made = [create(api, ana, content=f"note {n}")["id"] for n in range(5)][::-1]
    first = listed(api, ana, "?limit=2")
    second = listed(api, ana, f"?limit=2&starting_after={ids(first)[-1]}")
    third = listed(api, ana, f"?limit=2&starting_after={ids(second)[-1]}")
    assert [ids(first), ids(second), ids(third)] == [made[:2], made[2:4], made[4:]]
    assert [first["has_more"], second["has_more"], third["has_more"]] == [True, True, False]
    exact = listed(api, ana, "?limit=5")
    assert (ids(exact), exact["has_more"]) == (made, False)


def test_starting_after_a_deleted_memory_still_pages(api: Api, ana: User) -> None:
    made = [create(api, ana, content=f"note {n}")["id"] for n in range(4)][::-1]
    first = listed(api, ana, "?limit=2")
    api.client.delete(f"{URL}/{ids(first)[-1]}", headers=ana.headers)
    assert ids(listed(api, ana, f"?limit=2&starting_after={ids(first)[-1]}")) == made[2:]


def test_list_pages_are_stable_under_inserts(api: Api, ana: User) -> None:
    before = [create(api, ana, content=f"old {n}")["id"] for n in range(7)][::-1]
    seen: list[str] = []
    page = listed(api, ana, "?limit=2")
    while True:
        seen += ids(page)
        create(api, ana, content="inserted while paging")
        if not page["has_more"]:
            break
        page = listed(api, ana, f"?limit=2&starting_after={seen[-1]}")
    assert seen == before


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("?limit=0", ["limit"]),
        ("?limit=101", ["limit"]),
        ("?limit=ten", ["limit"]),
        ("?category=opinion", ["category"]),
        ("?starting_after=not-an-id", ["starting_after"]),
        ("?entity=" + "e" * 256, ["entity"]),
    ],
)
def test_bad_list_queries_are_400(api: Api, ana: User, query: str, path: list[Any]) -> None:
    assert_error(api.client.get(f"{URL}{query}", headers=ana.headers), 400, path)


def test_list_limit_100_is_allowed(api: Api, ana: User) -> None:
    create(api, ana)
    assert len(listed(api, ana, "?limit=100")["data"]) == 1


def test_list_filters_by_category_and_entity(api: Api, ana: User) -> None:
    acme = {"id": "cus_acme", "type": "account"}
    a = create(api, ana, category="fact", entity=acme)["id"]
    b = create(api, ana, category="preference", entity=acme)["id"]
    c = create(api, ana, category="fact")["id"]
    d = create(api, ana, category="fact", entity={"id": "cus_other", "type": "account"})["id"]
    assert ids(listed(api, ana, "?category=fact")) == [d, c, a]
    assert ids(listed(api, ana, "?entity=cus_acme")) == [b, a]
    assert ids(listed(api, ana, "?entity=cus_acme&category=fact")) == [a]
    assert ids(listed(api, ana, "?category=instruction")) == []
    page = listed(api, ana, f"?category=fact&limit=1&starting_after={d}")
    assert (ids(page), page["has_more"]) == ([c], True)


def test_filters_follow_patches(api: Api, ana: User) -> None:
    made = create(api, ana, category="fact", entity={"id": "e1", "type": "entity"})["id"]
    change = {"category": "instruction", "entity": {"id": "e2", "type": "entity"}}
    api.client.patch(f"{URL}/{made}", json=change, headers=ana.headers)
    assert ids(listed(api, ana, "?category=fact")) == []
    assert ids(listed(api, ana, "?entity=e1")) == []
    assert ids(listed(api, ana, "?entity=e2&category=instruction")) == [made]
    assert ids(recall(api, ana, limit=5, entity="e1")) == []
    assert ids(recall(api, ana, limit=5, entity="e2")) == [made]


def test_entity_ids_with_separators_do_not_mix(api: Api, ana: User) -> None:
    tricky = create(api, ana, entity={"id": "a#C#fact", "type": "entity"})["id"]
    plain = create(api, ana, category="fact", entity={"id": "a", "type": "entity"})["id"]
    assert ids(listed(api, ana, "?entity=a%23C%23fact")) == [tricky]
    assert ids(listed(api, ana, "?entity=a&category=fact")) == [plain]


# --- Expiry ------------------------------------------------------------------------------------


def test_expired_memories_are_left_out_but_kept(api: Api, ana: User) -> None:
    live = create(api, ana, expires_at=FUTURE, importance=0.1, entity={"id": "c", "type": "actor"})
    gone = create(api, ana, expires_at=PAST, importance=0.9, entity={"id": "c", "type": "actor"})
    for query in ("", "?category=fact", "?entity=c", "?entity=c&category=fact"):
        assert ids(listed(api, ana, query)) == [live["id"]]
    assert ids(recall(api, ana, limit=10)) == [live["id"]]
    assert ids(recall(api, ana, limit=10, entity="c")) == [live["id"]]
    fetched = api.client.get(f"{URL}/{gone['id']}", headers=ana.headers)
    assert fetched.status_code == 200
    assert fetched.json()["expires_at"] == "2001-02-03T04:05:06.000Z"
    revived = api.client.patch(
        f"{URL}/{gone['id']}", json={"expires_at": None}, headers=ana.headers
    )
    assert revived.status_code == 200
    assert ids(recall(api, ana, limit=10)) == [gone["id"], live["id"]]


def test_expired_memories_do_not_count_toward_has_more(api: Api, ana: User) -> None:
    live = create(api, ana)["id"]
    create(api, ana, expires_at=PAST)
    page = listed(api, ana, "?limit=1")
    assert (ids(page), page["has_more"]) == ([live], False)
    answer = recall(api, ana, limit=1)
    assert (ids(answer), answer["has_more"]) == ([live], False)


# --- Recall --------------------------------------------------------------------------------------


def test_recall_is_highest_importance_first_ties_newest_first(api: Api, ana: User) -> None:
    low = create(api, ana, importance=0.1)["id"]
    tie_old = create(api, ana, importance=0.7)["id"]
    top = create(api, ana, importance=1)["id"]
    tie_new = create(api, ana, importance=0.7)["id"]
    zero = create(api, ana, importance=0)["id"]
    answer = recall(api, ana, limit=10)
    assert answer["object"] == "list"
    assert ids(answer) == [top, tie_new, tie_old, low, zero]
    assert answer["has_more"] is False
    first = recall(api, ana, limit=2)
    assert (ids(first), first["has_more"]) == ([top, tie_new], True)
    assert len(recall(api, ana)["data"]) == 5  # limit defaults to 10


def test_recall_follows_importance_changes(api: Api, ana: User) -> None:
    a = create(api, ana, importance=0.9)["id"]
    b = create(api, ana, importance=0.5)["id"]
    api.client.patch(f"{URL}/{a}", json={"importance": 0.1}, headers=ana.headers)
    assert ids(recall(api, ana, limit=10)) == [b, a]


def test_recall_by_entity(api: Api, ana: User) -> None:
    mine = create(api, ana, importance=0.2, entity={"id": "cus_1", "type": "account"})["id"]
    create(api, ana, importance=0.9, entity={"id": "cus_2", "type": "account"})
    create(api, ana, importance=0.95)
    assert ids(recall(api, ana, limit=10, entity="cus_1")) == [mine]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"limit": 0}, ["limit"]),
        ({"limit": 101}, ["limit"]),
        ({"limit": "5"}, ["limit"]),
        ({"limit": 5, "entity": ""}, ["entity"]),
        ({"limit": 5, "category": "fact"}, ["category"]),
    ],
)
def test_bad_recall_is_400(api: Api, ana: User, body: dict[str, Any], path: list[Any]) -> None:
    answer = api.client.post(f"{URL}/recall", json=body, headers=ana.headers)
    assert_error(answer, 400, path)


def test_recall_reads_only_what_it_returns(api: Api, ana: User, adapters: Any) -> None:
    for n in range(40):
        create(api, ana, importance=n / 100)
    for _ in range(3):
        create(api, ana, importance=1, expires_at=PAST)
    read = {"requests": 0, "items": 0}

    def count(parsed: Any, **_: Any) -> None:
        read["requests"] += 1
        read["items"] += int(parsed["ScannedCount"])

    events = adapters.store._client.meta.events
    events.register("after-call.dynamodb.Query", count)
    try:
        answer = recall(api, ana, limit=5)
    finally:
        events.unregister("after-call.dynamodb.Query", count)
    assert [m["importance"] for m in answer["data"]] == [0.39, 0.38, 0.37, 0.36, 0.35]
    # 5 returned + 1 to know has_more + the 3 expired stepped over, plus at most the
    # store's look-ahead row per request: never the organization's 43 memories.
    assert read["requests"] <= 2
    assert read["items"] <= 5 + 1 + 3 + read["requests"]


# --- Encryption ----------------------------------------------------------------------------------


def test_content_metadata_and_entity_text_are_not_stored_in_plaintext(
    api: Api, ana: User, local_aws: Any
) -> None:
    made = create(
        api,
        ana,
        content="The secret plan is purple.",
        metadata={"note": "hidden-metadata"},
        entity={"id": "cus_7", "type": "account", "name": "Zed Zebra", "handle": "zed@zoo.test"},
        importance=0.6,
    )
    session, local = local_aws
    items = session.client("dynamodb").scan(TableName=local.table_name)["Items"]
    rows = [i for i in items if i.get("id", {}).get("S") == made["id"]]
    assert len(rows) == 6  # the base row and five index rows
    raw = repr(rows)
    for secret in ("purple", "hidden-metadata", "Zed Zebra", "zed@zoo.test"):
        assert secret not in raw
    for row in rows:  # what lists, filters and recall need stays plaintext (one entry shape)
        assert row["type"] == {"S": "entry"}
        assert row["kind"] == {"S": "fact"}
        assert row["tags"] == {"L": [{"S": "entity:account:cus_7"}]}
        assert row["importance"] == {"N": "0.6"}
