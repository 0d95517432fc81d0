"""AgentMemoryStore with the real `langgraph` package against the local service: a compiled
graph reading across a user's threads, the store's operations side by side with LangGraph's
own InMemoryStore (LangGraph ships no conformance suite for stores; its reference is the
in-memory one), TTL, and people (of one organization or two) who see nothing of each
other's."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import httpx
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from agent_memory_client import Client, NotFound, Unauthorized
from agent_memory_client.langgraph import AgentMemoryStore
from tests.clients.conftest import LocalService, run_readme_example


@pytest.fixture(scope="module")
def ana(local_service: LocalService) -> Iterator[Client]:
    _org, _user, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as client:
        yield client


@pytest.fixture(scope="module")
def ben(local_service: LocalService) -> Iterator[Client]:
    """A user of another organization."""
    _org, _user, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as client:
        yield client


class State(TypedDict, total=False):
    remember: str
    ask: str
    recalled: Annotated[list[str], operator.add]


def _graph(store: BaseStore) -> Any:
    """A graph whose one node keeps what the user says under ("memories", <user>) and
    recalls by meaning what it is asked: LangGraph's own cross-thread memory pattern."""

    def node(state: State, config: RunnableConfig, *, store: BaseStore) -> State:
        namespace = ("memories", config["configurable"]["user_id"])
        if state.get("remember"):
            count = len(store.search(namespace, limit=100))
            store.put(namespace, f"m{count}", {"text": state["remember"], "n": count})
        found = store.search(namespace, query=state["ask"], limit=3) if state.get("ask") else []
        return {"recalled": [item.value["text"] for item in found]}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def _config(thread: str, user: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "user_id": user}}


def test_a_compiled_graph_reads_in_one_thread_what_another_put(ana: Client, ben: Client) -> None:
    graph = _graph(AgentMemoryStore(ana, index={"fields": ["text"]}))
    graph.invoke({"remember": "I am allergic to peanuts."}, _config("t1", "u1"))
    graph.invoke({"remember": "My sister lives in Lisbon."}, _config("t1", "u1"))
    second = graph.invoke({"ask": "Which food should I avoid?"}, _config("t2", "u1"))
    assert "I am allergic to peanuts." in second["recalled"]
    assert set(second["recalled"]) == {"I am allergic to peanuts.", "My sister lives in Lisbon."}
    # The async path (abatch) reads the same.
    third = asyncio.run(graph.ainvoke({"ask": "family"}, _config("t3", "u1")))
    assert "My sister lives in Lisbon." in third["recalled"]
    # Another user of the graph (their own namespace) sees nothing of u1's.
    assert graph.invoke({"ask": "peanuts"}, _config("t4", "u2"))["recalled"] == []
    # Another organization's store, with the same user id and namespace, sees nothing.
    other = _graph(AgentMemoryStore(ben, index={"fields": ["text"]}))
    assert other.invoke({"ask": "peanuts"}, _config("t1", "u1"))["recalled"] == []
    assert AgentMemoryStore(ben).list_namespaces() == []
    assert AgentMemoryStore(ben).get(("memories", "u1"), "m0") is None
    # What the graph saved is the person's agent memories, with the values sealed.
    [peanuts] = [m for m in ana.iter_agent_memories() if m.content == "I am allergic to peanuts."]
    assert (peanuts.namespace, peanuts.key) == (["memories", "u1"], "m0")


def _ops(store: BaseStore) -> list[Any]:
    """The same calls, as a LangGraph user makes them; what each answered."""
    answers: list[Any] = []
    value = {"text": "Prefers tea", "level": 2, "nested": {"list": [1, 2.5, None, True]}, "u": "é✓"}
    store.put(("docs", "a"), "k1", value)
    store.put(("docs", "a"), "k2", {"text": "Coffee at 9", "level": 3})
    store.put(("docs", "a", "deep"), "k3", {"text": "Deep note", "level": 5})
    store.put(("docs", "b"), "k1", {"text": "Other namespace", "level": 1})
    store.put(("users", "x", "docs"), "k9", {"text": "A user's", "level": 2})
    store.put(("docs", "a"), "k2", {"text": "Coffee at 10", "level": 4})  # an update
    got = store.get(("docs", "a"), "k1")
    answers.append((got.value, got.key, got.namespace) if got else None)
    answers.append(store.get(("docs", "a"), "missing"))
    answers.append(store.get(("docs", "a"), "k2").value)  # type: ignore[union-attr]

    def keys(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
        return sorted((i.namespace, i.key) for i in items)

    answers.append(keys(store.search(("docs",), limit=10)))
    answers.append(keys(store.search(("docs", "a"), filter={"level": {"$gte": 4}})))
    answers.append(keys(store.search(("docs",), filter={"text": "Other namespace"})))
    answers.append(len(store.search(("docs",), limit=2)))
    answers.append(len(store.search(("docs",), limit=3, offset=2)))
    answers.append(store.list_namespaces())
    answers.append(store.list_namespaces(prefix=("docs",)))
    answers.append(store.list_namespaces(suffix=("docs",)))
    answers.append(store.list_namespaces(prefix=("docs", "*"), max_depth=2))
    answers.append(store.list_namespaces(max_depth=1))
    answers.append(store.list_namespaces(prefix=("docs",), limit=1, offset=1))
    store.delete(("docs", "a"), "k1")
    store.delete(("docs", "a"), "never")
    answers.append(store.get(("docs", "a"), "k1"))
    answers.append(keys(store.search(("docs", "a"))))
    # Last: InMemoryStore's get makes the namespace it looks in appear in its lists.
    answers.append(store.get(("docs",), "k1"))
    return answers


def test_the_operations_answer_as_langgraphs_in_memory_store(local_service: LocalService) -> None:
    _org, _user, token = local_service.user()
    with Client(base_url=local_service.url, token=token) as fresh:
        assert _ops(AgentMemoryStore(fresh)) == _ops(InMemoryStore())


def test_a_ttl_is_the_memorys_expiry_and_an_expired_key_can_be_put_again(ana: Client) -> None:
    store = AgentMemoryStore(ana, ttl={"default_ttl": 60, "refresh_on_read": True})
    store.put(("ttl",), "short", {"text": "soon gone"})
    [memory] = ana.list_agent_memories(namespace=["ttl"]).data
    assert memory.expires_at is not None
    first = memory.expires_at
    assert store.get(("ttl",), "short") is not None
    # Reading refreshed the expiry (refresh_on_read).
    assert ana.get_agent_memory_object(memory.id).expires_at >= first  # type: ignore[operator]
    # An item past its expiry is gone, and its key is free again.
    ana.update_agent_memory_object(memory.id, expires_at="2001-01-01T00:00:00Z")
    assert store.get(("ttl",), "short", refresh_ttl=False) is None
    store.put(("ttl",), "short", {"text": "back"}, ttl=None)
    again = store.get(("ttl",), "short")
    assert again is not None
    assert again.value == {"text": "back"}
    assert ana.list_agent_memories(namespace=["ttl"]).data[0].expires_at is None


def test_index_fields_choose_what_the_service_embeds(ana: Client) -> None:
    store = AgentMemoryStore(ana, index={"fields": ["title", "tags[*]"]})
    store.put(("idx",), "a", {"title": "Trip to Rome", "tags": ["travel", "italy"], "x": 1})
    store.put(("idx",), "b", {"title": "Secret", "x": 2}, index=False)
    store.put(("idx",), "c", {"body": "Only body"}, index=["body"])
    contents = {m.key: m.content for m in ana.list_agent_memories(namespace=["idx"]).data}
    assert contents == {"a": "Trip to Rome\ntravel\nitaly", "b": "b", "c": "Only body"}


def test_a_refused_token_raises_the_clients_error(local_service: LocalService) -> None:
    client = Client(base_url=local_service.url, token="amk_not_a_token", max_retries=0)
    with client, pytest.raises(Unauthorized):
        AgentMemoryStore(client).get(("a",), "b")


def test_the_readme_example_runs(
    local_service: LocalService,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_readme_example("## LangGraph", local_service, monkeypatch)
    assert capsys.readouterr().out.strip() == "['I am vegetarian.']"


def _colleague(service: LocalService, org_id: str) -> str:
    """A token of another person of `org_id`."""
    made = httpx.post(
        f"{service.url}/v1/admin/users",
        json={"organizationId": org_id, "role": "member"},
        headers={"Authorization": f"Bearer {service.admin_token}"},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["token"])


def test_two_people_and_two_organizations_see_nothing_of_each_others(
    local_service: LocalService,
) -> None:
    org, _user, first = local_service.user()
    tokens = [first, _colleague(local_service, org), local_service.user()[2]]
    with (
        Client(base_url=local_service.url, token=tokens[0]) as ana,
        Client(base_url=local_service.url, token=tokens[1]) as amy,
        Client(base_url=local_service.url, token=tokens[2]) as cal,
    ):
        people = (ana, amy, cal)
        stores = [AgentMemoryStore(c, index={"fields": ["text"]}) for c in people]
        # The same namespace and key for all three: LangGraph apps name users alike.
        for store, name in zip(stores, ("Ana", "Amy", "Cal"), strict=True):
            store.put(("memories", "me"), "diet", {"text": f"{name} is vegetarian."})
            store.put(("memories", "me", name.lower()), "city", {"text": f"{name} lives here."})
        ids = {
            name: {m.id for m in client.list_agent_memories(namespace=["memories"]).data}
            for name, client in zip(("Ana", "Amy", "Cal"), people, strict=True)
        }
        for store, client, name in zip(stores, people, ("Ana", "Amy", "Cal"), strict=True):
            got = store.get(("memories", "me"), "diet")
            assert got is not None
            assert got.value == {"text": f"{name} is vegetarian."}
            for found in (
                store.search(("memories",), limit=100),
                store.search(("memories",), query="vegetarian", limit=100),
                store.search((), limit=100),
                store.search((), query="who lives where", limit=100),
            ):
                assert {i.value["text"] for i in found} <= {
                    f"{name} is vegetarian.",
                    f"{name} lives here.",
                }
                assert found
            assert store.list_namespaces() == [
                ("memories", "me"),
                ("memories", "me", name.lower()),
            ]
            # Through /v1/agent_memories: a list, a recall, and the others' ids are unknown.
            listed = {m.id for m in client.iter_agent_memories()}
            recalled = {
                m.id for m in client.recall_agent_memories(query="vegetarian", limit=100).data
            }
            assert listed == recalled == ids[name]
            for other, theirs in ids.items():
                if other == name:
                    continue
                for memory_id in theirs:
                    with pytest.raises(NotFound):
                        client.get_agent_memory_object(memory_id)
                    with pytest.raises(NotFound):
                        client.delete_agent_memory(memory_id)
        # A delete in one person's store leaves the others' items at the same place.
        stores[1].delete(("memories", "me"), "diet")
        assert stores[1].get(("memories", "me"), "diet") is None
        for store in (stores[0], stores[2]):
            assert store.get(("memories", "me"), "diet") is not None
