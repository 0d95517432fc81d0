"""Agent memories in a namespace with a key (ADR 0082): what a LangGraph store's items are."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api, User
from tests.support.memory_objects import URL, create, recall


@pytest.fixture
def ana(api: Api) -> User:
    return api.user(api.org())


def _listed(api: Api, user: User, query: str) -> list[dict[str, Any]]:
    answer = api.client.get(f"{URL}?{query}", headers=user.headers)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["data"])


def _places(found: list[dict[str, Any]]) -> list[tuple[list[str], str]]:
    return [(m["namespace"], m["key"]) for m in found]


def test_a_key_is_unique_in_its_namespace_and_a_prefix_matches_whole_labels(
    api: Api, ana: User
) -> None:
    made = create(api, ana, content="Likes tea.", namespace=["users", "u1"], key="drink")
    assert (made["namespace"], made["key"]) == (["users", "u1"], "drink")
    create(api, ana, content="Dark mode.", namespace=["users", "u1", "ui"], key="theme")
    create(api, ana, content="Likes coffee.", namespace=["users", "u10"], key="drink")
    create(api, ana, content="Not namespaced.")

    again = api.client.post(
        URL,
        json={"category": "fact", "content": "Tea.", "namespace": ["users", "u1"], "key": "drink"},
        headers=ana.headers,
    )
    assert again.status_code == 409, again.text
    assert again.json()["error"]["path"] == ["key"]

    # ("users", "u1") is a prefix of ("users", "u1", "ui"), never of ("users", "u10").
    under = _listed(api, ana, "namespace=users&namespace=u1")
    assert _places(under) == [(["users", "u1"], "drink"), (["users", "u1", "ui"], "theme")]
    exact = _listed(api, ana, "namespace=users&namespace=u1&key=drink")
    assert [m["content"] for m in exact] == ["Likes tea."]
    assert _listed(api, ana, "namespace=users&namespace=u1&key=dr") == []

    # Paging in order of namespace and key.
    first = api.client.get(f"{URL}?namespace=users&limit=1", headers=ana.headers).json()
    assert first["has_more"] is True
    rest = _listed(api, ana, f"namespace=users&starting_after={first['data'][0]['id']}")
    assert _places(first["data"] + rest) == [
        (["users", "u1"], "drink"),
        (["users", "u1", "ui"], "theme"),
        (["users", "u10"], "drink"),
    ]

    # Deleting frees the key; a PATCH keeps the memory in its place.
    assert api.client.delete(f"{URL}/{made['id']}", headers=ana.headers).status_code == 200
    remade = create(api, ana, content="Likes green tea.", namespace=["users", "u1"], key="drink")
    patched = api.client.patch(
        f"{URL}/{remade['id']}", json={"content": "Likes oolong."}, headers=ana.headers
    )
    assert (patched.json()["namespace"], patched.json()["key"]) == (["users", "u1"], "drink")
    assert [m["content"] for m in _listed(api, ana, "namespace=users&namespace=u1&key=drink")] == [
        "Likes oolong."
    ]


def test_recall_under_a_namespace_keeps_to_it(api: Api, ana: User) -> None:
    create(api, ana, content="Prefers window seats.", namespace=["a", "memories"], key="k1")
    create(api, ana, content="Prefers aisle seats.", namespace=["b", "memories"], key="k1")
    found = recall(api, ana, namespace=["a"], query="seats", limit=5)["data"]
    assert [m["content"] for m in found] == ["Prefers window seats."]
    plain = recall(api, ana, namespace=["b", "memories"], limit=5)["data"]
    assert [m["content"] for m in plain] == ["Prefers aisle seats."]


def test_another_organization_sees_nothing_of_a_namespace(api: Api, ana: User) -> None:
    create(api, ana, content="Secret plan.", namespace=["shared"], key="plan")
    other = api.user(api.org())
    assert _listed(api, other, "namespace=shared") == []
    assert recall(api, other, namespace=["shared"], query="plan")["data"] == []
    mine = api.client.post(
        URL,
        json={"category": "fact", "content": "Mine.", "namespace": ["shared"], "key": "plan"},
        headers=other.headers,
    )
    assert mine.status_code == 201


BAD: list[tuple[dict[str, Any], list[Any]]] = [
    ({"namespace": ["a"]}, ["key"]),
    ({"key": "k"}, ["namespace"]),
    ({"namespace": [], "key": "k"}, ["namespace"]),
    ({"namespace": [""], "key": "k"}, ["namespace", 0]),
    ({"namespace": ["x" * 129], "key": "k"}, ["namespace", 0]),
    ({"namespace": ["a"] * 11, "key": "k"}, ["namespace"]),
    ({"namespace": ["a"], "key": ""}, ["key"]),
    ({"namespace": ["é" * 128] * 8, "key": "k" * 255}, ["key"]),
]


def test_a_bad_namespace_or_key_is_400_naming_it(api: Api, ana: User) -> None:
    for body, path in BAD:
        answer = api.client.post(
            URL, json={"category": "fact", "content": "x"} | body, headers=ana.headers
        )
        assert answer.status_code == 400, (body, answer.text)
        assert answer.json()["error"]["path"] == path, body
    for query in ("namespace=a&namespace=&key=k", "namespace=a&category=fact", "key=k"):
        listed = api.client.get(f"{URL}?{query}", headers=ana.headers)
        assert listed.status_code == 400, (query, listed.text)
    assert api.client.get(URL, headers=ana.headers).json()["data"] == []
