"""Agent memories in a namespace with a key (ADR 0082): what a LangGraph store's items are,
each its maker's alone."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.service.recall import MEMORY_GROUP
from tests.conftest import Api, User
from tests.support.embedders import TinyEmbedder, adapters
from tests.support.memory_objects import URL, create, recall
from tests.support.plaintext import scan_rows

__all__ = ["adapters"]  # vectors from a tiny embedder: these tests need them, not meaning


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
    listed = api.client.get(f"{URL}?namespace=a&namespace=&key=k", headers=ana.headers)
    assert listed.status_code == 400, listed.text
    assert api.client.get(URL, headers=ana.headers).json()["data"] == []


def test_filters_combine_with_a_namespace_and_a_key_alone_looks_everywhere(
    api: Api, ana: User
) -> None:
    """Every request the schema allows is answered: a category or an entity narrows a
    namespace's listing (read on past what they leave, so a page is full or the last), and a
    key without a namespace is that key in any of the caller's namespaces."""
    about = {"type": "actor", "id": "u1"}
    for n in range(5):
        create(api, ana, namespace=["prefs", f"n{n}"], key="food", category="preference")
        create(api, ana, namespace=["prefs", f"n{n}"], key="city", entity=about)
    create(api, ana, namespace=["other"], key="food")
    facts = _listed(api, ana, "namespace=prefs&category=fact&limit=3")
    assert [(m["namespace"][1], m["key"]) for m in facts] == [
        ("n0", "city"),
        ("n1", "city"),
        ("n2", "city"),
    ]
    answer = api.client.get(
        f"{URL}?namespace=prefs&category=fact&limit=3&starting_after={facts[-1]['id']}",
        headers=ana.headers,
    ).json()
    assert [m["namespace"][1] for m in answer["data"]] == ["n3", "n4"]
    assert answer["has_more"] is False
    assert len(_listed(api, ana, "namespace=prefs&entity=u1&limit=100")) == 5
    assert [m["namespace"] for m in _listed(api, ana, "key=food&limit=100")] == [
        ["other"],
        *(["prefs", f"n{n}"] for n in range(5)),
    ]
    assert len(recall(api, ana, limit=10, namespace=["prefs"], entity="u1")["data"]) == 5


# --- A namespaced memory is its maker's alone -----------------------------------------------


@pytest.fixture
def people(api: Api) -> tuple[User, User, User, User]:
    """Ana and Bob of one organization, its administrator, and a stranger of another."""
    org = api.org()
    return api.user(org), api.user(org), api.user(org, role="admin"), api.user(api.org())


def _status(api: Api, user: User, method: str, url: str, **body: Any) -> int:
    answer = api.client.request(method, url, headers=user.headers, json=body or None)
    return int(answer.status_code)


def test_a_namespaced_memory_is_its_makers_alone(
    api: Api, people: tuple[User, User, User, User]
) -> None:
    ana, bob, boss, stranger = people
    plain = create(api, ana, content="The office opens at 9.")
    anas = create(api, ana, content="Ana likes tea.", namespace=["memories", "u"], key="drink")
    # The same place is free for another person: nothing collides.
    bobs = create(api, bob, content="Bob likes coffee.", namespace=["memories", "u"], key="drink")
    for other in (bob, boss, stranger):
        for method, body in (("GET", {}), ("PATCH", {"content": "Mine now."}), ("DELETE", {})):
            assert _status(api, other, method, f"{URL}/{anas['id']}", **body) == 404
    assert api.client.get(f"{URL}/{anas['id']}", headers=ana.headers).json() == anas
    # Each reads their own at the place, under a prefix and in the organization's list.
    for user, own in ((ana, anas), (bob, bobs)):
        assert [m["id"] for m in _listed(api, user, "namespace=memories")] == [own["id"]]
        exact = _listed(api, user, "namespace=memories&namespace=u&key=drink")
        assert [m["content"] for m in exact] == [own["content"]]
        assert {m["id"] for m in _listed(api, user, "limit=100")} == {plain["id"], own["id"]}
        for asked in ({}, {"query": "likes a drink"}, {"namespace": ["memories"]}):
            found = {m["id"] for m in recall(api, user, limit=100, **asked)["data"]}
            assert own["id"] in found
            assert not found & ({anas["id"], bobs["id"]} - {own["id"]}), asked
    # The administrator lists the organization's plain memories only.
    assert [m["id"] for m in _listed(api, boss, "limit=100")] == [plain["id"]]
    assert _listed(api, boss, "namespace=memories") == []
    assert _listed(api, stranger, "namespace=memories") == []
    # Another's memory is no position in one's own namespace: as if it did not exist.
    after = api.client.get(
        f"{URL}?namespace=memories&starting_after={anas['id']}", headers=bob.headers
    )
    assert after.status_code == 404
    assert after.json()["error"]["path"] == ["starting_after"]


def test_a_page_steps_over_other_peoples_namespaced_memories(
    api: Api, people: tuple[User, User, User, User]
) -> None:
    ana, bob, _boss, _stranger = people
    made: list[str] = []
    for n, who in enumerate((ana, bob, ana, ana, bob, ana)):
        fields = {"namespace": ["n"], "key": f"k{n}", "importance": 1.0} if who is ana else {}
        made.append(create(api, who, content=f"Memory {n}.", **fields)["id"])
    bob_first = api.client.get(f"{URL}?limit=1", headers=bob.headers).json()
    assert ([m["id"] for m in bob_first["data"]], bob_first["has_more"]) == ([made[4]], True)
    rest = api.client.get(f"{URL}?limit=1&starting_after={made[4]}", headers=bob.headers).json()
    assert ([m["id"] for m in rest["data"]], rest["has_more"]) == ([made[1]], False)
    both = api.client.get(f"{URL}?limit=2", headers=bob.headers).json()
    assert ([m["id"] for m in both["data"]], both["has_more"]) == ([made[4], made[1]], False)
    # Recall reads highest importance first: Ana's (1.0) come first and are stepped over.
    one = recall(api, bob, limit=1)
    assert (len(one["data"]), one["has_more"]) == (1, True)
    two = recall(api, bob, limit=2)
    assert ({m["id"] for m in two["data"]}, two["has_more"]) == ({made[1], made[4]}, False)
    mine = recall(api, ana, limit=4)
    assert ({m["id"] for m in mine["data"]}, mine["has_more"]) == (
        {made[0], made[2], made[3], made[5]},
        True,
    )


def test_a_namespaced_memory_needs_a_person(api: Api) -> None:
    body = {"category": "fact", "content": "x", "namespace": ["a"], "key": "k"}
    refused = api.client.post(URL, json=body, headers=api.admin)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["path"] == ["namespace"]
    listed = api.client.get(f"{URL}?namespace=a", headers=api.admin)
    assert listed.status_code == 403
    # A service key acts for a person: the memory is that person's.
    org = api.org()
    key = api.client.post(
        f"/v1/organizations/{org}/service-keys", json={"name": "backend"}, headers=api.admin
    ).json()["key"]
    auth = {"Authorization": f"Bearer {key}"}
    for person in ("ana", "ben"):
        added = api.client.post(f"/v1/organizations/{org}/users", json={"id": person}, headers=auth)
        assert added.status_code == 201, added.text
    bare = api.client.post(URL, json=body, headers=auth)
    assert bare.status_code == 403
    made = api.client.post(URL, json=body, headers=auth | {"Act-As": "ana"})
    assert made.status_code == 201, made.text
    url = f"{URL}/{made.json()['id']}"
    assert api.client.get(url, headers=auth | {"Act-As": "ana"}).status_code == 200
    assert api.client.get(url, headers=auth | {"Act-As": "ben"}).status_code == 404
    again = api.client.post(URL, json=body, headers=auth | {"Act-As": "ben"})
    assert again.status_code == 201, again.text


def test_erasing_a_person_takes_their_namespaced_memories_and_vectors(
    api: Api, people: tuple[User, User, User, User], services: Any, local_aws: Any
) -> None:
    ana, bob, boss, _stranger = people
    anas = create(api, ana, content="Ana's note.", namespace=["memories", "u"], key="k")
    bobs = [
        create(api, bob, content="Bob's note.", namespace=["memories", "u"], key="k")["id"],
        create(api, bob, content="Bob's deep note.", namespace=["a", "b", "c"], key="x")["id"],
        # Expired: still found (the person's namespace copy never expires).
        create(
            api,
            bob,
            content="Bob's old note.",
            namespace=["old"],
            key="y",
            expires_at="2001-01-01T00:00:00Z",
        )["id"],
    ]
    index = services.erasure.vectors
    probe = TinyEmbedder().embed(["x"])[0]

    def vectors() -> set[str]:
        hits = index.query(probe, 50, org=ana.org_id, owner=ana.org_id, group=MEMORY_GROUP)
        return {hit.key for hit in hits}

    assert set(bobs) | {anas["id"]} <= vectors()
    url = f"/v1/organizations/{ana.org_id}/users/{bob.id}/erase"
    answer = api.client.post(url, json={}, headers=boss.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["agentMemories"] == 3
    rows = scan_rows(local_aws)
    ids = {row["id"]["S"] for row in rows if "id" in row and "S" in row["id"]}
    assert not ids & set(bobs)
    assert anas["id"] in ids
    assert not [row for row in rows if f"#U#{bob.id}#" in row["pk"]["S"]]
    assert vectors() & set(bobs) == set()
    assert anas["id"] in vectors()
    assert api.client.get(f"{URL}/{anas['id']}", headers=ana.headers).status_code == 200
    again = api.client.post(url, json={}, headers=boss.headers)
    assert again.json()["agentMemories"] == 0
