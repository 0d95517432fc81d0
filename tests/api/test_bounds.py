"""Answers stay under Lambda's 6 MB by construction (domain/bounds.py).

- A pool at its bound refuses the next Remember with 413 `TooLarge` naming the field, and its
  read still answers; learning refuses the change with a named reason, never half-applied.
- A Session at its item bound refuses the Turn (413 at `["items"]`).
- The worst-case read of a pool at its bounds (every character the costliest to carry) is
  computed here and stays under the answer budget, under 6 MB.
- Lists (executions, seed 004's pages) stop before one answer would pass the budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.api.contracts.agent_memory import AgentMemoryAnswer
from agent_memory.api.contracts.base import Executions
from agent_memory.api.contracts.bots import BotExecutions
from agent_memory.api.contracts.memory_objects import AgentMemoryList, AgentMemoryOut
from agent_memory.api.contracts.sessions import SessionEntryOut
from agent_memory.domain import session_memory
from agent_memory.domain.bounds import (
    ANSWER_BUDGET,
    KEYED_POOL_CONTENT,
    KEYED_POOL_ENTRIES,
    LAMBDA_RESPONSE_BYTES,
    MAX_ENTRY_CONTENT,
    MAX_SESSION_ITEMS,
    POOL_FULL,
    carried_size,
    memory_object_size,
    within_budget,
)
from agent_memory.domain.entries import Entry, EntryMeta, ItemSource, KeyedMemory
from agent_memory.domain.errors import TooLarge
from agent_memory.domain.identity import Principal, issue_token
from agent_memory.domain.memory_objects import (
    MAX_ENTITY_ID_CHARS,
    MAX_ENTITY_TEXT_CHARS,
    MAX_MEMORY_CONTENT_CHARS,
    MAX_METADATA_BYTES,
    Entity,
    NewMemory,
)
from agent_memory.domain.proposals import MAX_KEY_LENGTH, ProposedRemember
from agent_memory.domain.runs import RunView
from agent_memory.domain.session_memory import Remember
from agent_memory.domain.sessions import NewItem, item_id
from agent_memory.persistence.agents import AgentRepository
from agent_memory.persistence.identity import IdentityRepository, User
from agent_memory.persistence.memory_objects import MemoryObjectRepository
from agent_memory.persistence.sessions import SessionRepository
from agent_memory.ports import Absent, Put
from agent_memory.service.agents import AgentService
from agent_memory.service.learning_pools import Outcome, PoolRef, apply_cycle
from agent_memory.service.memory_objects import MemoryObjectService
from agent_memory.service.org_settings import OrgSettingsService
from agent_memory.service.session_learning import SessionLearningPool
from agent_memory.service.session_memory import SessionMemoryService
from agent_memory.service.sessions import SessionAccess, SessionService
from tests.conftest import Api
from tests.conftest import User as ApiUser
from tests.support.in_memory import FakeCipher, FixedClock, InMemoryStore, SequentialIds

# The costliest characters to carry: an astral one (4 bytes of UTF-8, then `\ud83d\ude00`,
# 12 bytes, once the body is a string of Lambda's ASCII JSON), and in keys the only
# non-ASCII character whose lower case is in the key alphabet (KELVIN SIGN, 6 bytes).
ASTRAL = "\U0001f600"
KEY_CHAR = "\u212a"
MAX_SOURCES = 50
SESSION_ID = "s_" + "z" * 19  # Ids.new("s_"): 9 + 10 characters
T = 9_999_999_999_999


# --- the worst case, computed -------------------------------------------------------------


def _worst_metas(sources: tuple[ItemSource, ...]) -> list[tuple[EntryMeta, str]]:
    """A pool at both bounds: every entry retracted (its content still shown), the longest
    key, the most sources, the content spread over all entries."""
    entries, total = KEYED_POOL_ENTRIES, KEYED_POOL_CONTENT
    metas = []
    for n in range(entries):
        key = (KEY_CHAR * MAX_KEY_LENGTH)[: MAX_KEY_LENGTH - 4] + f"{n:04d}"
        content = ASTRAL * (total // entries + (1 if n < total % entries else 0))
        meta = EntryMeta(
            id=f"mem_{n}",
            key=key,
            kind="hypothesis",
            sources=sources,
            status="retracted",
            updated_at=T,
            length=len(content),
        )
        metas.append((meta, content))
    return metas


def worst_session_memory() -> dict[str, Any]:
    last = item_id(MAX_SESSION_ITEMS)
    sources = tuple(ItemSource(last) for _ in range(MAX_SOURCES))
    entries = [Entry(meta, content) for meta, content in _worst_metas(sources)]
    return {
        "entries": {e.meta.name: SessionEntryOut.of(e).model_dump() for e in entries},
        "processed": [item_id(seq) for seq in range(1, MAX_SESSION_ITEMS + 1)],
        "settings": {"use": False, "generate": False},
        "overrides": {"use": False, "generate": False},
    }


def worst_agent_memory() -> dict[str, Any]:
    last = item_id(MAX_SESSION_ITEMS)
    sources = tuple(ItemSource(last, SESSION_ID) for _ in range(MAX_SOURCES))
    entries = [Entry(meta, content) for meta, content in _worst_metas(sources)]
    return AgentMemoryAnswer.of(KeyedMemory(entries, T)).model_dump()


@pytest.mark.parametrize("read", [worst_session_memory, worst_agent_memory])
def test_the_worst_read_of_a_pool_at_its_bounds_is_under_6_mb(read: Any) -> None:
    document = read()
    assert len(document["entries"]) == KEYED_POOL_ENTRIES
    assert sum(len(e["content"]) for e in document["entries"].values()) == KEYED_POOL_CONTENT
    size = carried_size(document)
    assert size <= ANSWER_BUDGET < LAMBDA_RESPONSE_BYTES, size


def test_the_session_bound_fits_the_agent_bound_so_a_promotion_always_fits() -> None:
    # One bound for both pools: a promoted subagent's entries are at most a session's.
    assert worst_session_memory()["entries"].keys() == worst_agent_memory()["entries"].keys()


# --- HTTP: a pool at its bound ------------------------------------------------------------


def _session(api: Api) -> tuple[ApiUser, str, str]:
    user = api.user(api.org())
    agent = api.client.post("/v1/agents", json={"name": "a"}, headers=user.headers)
    agent_id = agent.json()["agent"]["id"]
    # No model: these Turns start no learning (its evidence is not what is tested here).
    body = {"agentId": agent_id, "model": None}
    session = api.client.post("/v1/sessions", json=body, headers=user.headers)
    return user, agent_id, session.json()["session"]["id"]


def _remember(api: Api, user: ApiUser, session_id: str, key: str, content: str) -> Any:
    view = api.client.get(f"/v1/sessions/{session_id}", headers=user.headers).json()["session"]
    body = {
        "expected": view["head"],
        "revision": view["revision"],
        "command": {"_tag": "Remember", "key": key, "content": content, "kind": "fact"},
    }
    return api.client.post(f"/v1/sessions/{session_id}/memory", json=body, headers=user.headers)


def _refused(answer: Any, where: list[str | int]) -> dict[str, Any]:
    assert answer.status_code == 413, answer.text
    error: dict[str, Any] = answer.json()["error"]
    assert error["_tag"] == "TooLarge"
    assert error["path"] == where
    return error


def _fill_content(send: Any) -> None:
    """Remember until the pool holds exactly its content bound."""
    full, rest = divmod(KEYED_POOL_CONTENT, MAX_ENTRY_CONTENT)
    for n in range(full):
        assert send(f"k{n}", "x" * MAX_ENTRY_CONTENT).status_code == 200
    if rest:
        assert send("rest", "x" * rest).status_code == 200


def test_a_session_memory_at_its_content_bound_refuses_the_next_remember(api: Api) -> None:
    user, _agent, session_id = _session(api)
    _fill_content(lambda key, content: _remember(api, user, session_id, key, content))
    before = api.client.get(f"/v1/sessions/{session_id}/memory", headers=user.headers).json()
    error = _refused(_remember(api, user, session_id, "one-more", "x"), ["command", "content"])
    assert str(KEYED_POOL_CONTENT) in error["message"]
    # A Remember that replaces an entry with shorter content makes room, then the next fits.
    assert _remember(api, user, session_id, "k0", "short").status_code == 200
    assert _remember(api, user, session_id, "one-more", "x").status_code == 200
    read = api.client.get(f"/v1/sessions/{session_id}/memory", headers=user.headers)
    assert read.status_code == 200
    entries = read.json()["entries"]
    assert set(entries) == set(before["entries"]) | {"one-more"}
    assert entries["k0"]["content"] == "short"


def test_an_agent_memory_at_its_content_bound_refuses_the_next_remember(api: Api) -> None:
    user, agent_id, _session_id = _session(api)
    url = f"/v1/agents/{agent_id}/memory"

    def send(key: str, content: str) -> Any:
        version = api.client.get(url, headers=user.headers).json()["version"]
        command = {"_tag": "Remember", "key": key, "content": content, "kind": "procedure"}
        return api.client.post(
            url, json={"expected": version, "command": command}, headers=user.headers
        )

    _fill_content(send)
    _refused(send("one-more", "x"), ["command", "content"])
    read = api.client.get(url, headers=user.headers)
    assert read.status_code == 200
    assert "one-more" not in read.json()["entries"]
    log = api.client.get(f"{url}/log", headers=user.headers).json()["changes"]
    assert all(change["keys"] != ["one-more"] for change in log)


def test_a_session_at_its_entry_bound_refuses_a_new_key_but_replaces_a_known_one(
    api: Api, adapters: Any
) -> None:
    user, _agent, session_id = _session(api)
    repo = SessionRepository(adapters.store, adapters.cipher)
    session = repo.get(session_id)
    assert session is not None
    actions: list[Any] = []
    for n in range(KEYED_POOL_ENTRIES):
        meta = session_memory.fact(f"k{n}", "fact", "x", (), T, session.revision)
        actions += repo.entry_put(session, meta, "x", None)
    for start in range(0, len(actions), 100):
        repo.write(actions[start : start + 100])
    error = _refused(_remember(api, user, session_id, "new-key", "x"), ["command", "key"])
    assert str(KEYED_POOL_ENTRIES) in error["message"]
    assert _remember(api, user, session_id, "k7", "replaced").status_code == 200
    read = api.client.get(f"/v1/sessions/{session_id}/memory", headers=user.headers)
    assert read.status_code == 200
    assert len(read.json()["entries"]) == KEYED_POOL_ENTRIES
    assert read.json()["entries"]["k7"]["content"] == "replaced"


def test_a_session_at_its_item_bound_refuses_the_turn_that_would_pass_it(
    api: Api, adapters: Any
) -> None:
    user, _agent, session_id = _session(api)
    repo = SessionRepository(adapters.store, adapters.cipher)
    session = repo.get(session_id)
    assert session is not None
    # The head row as if MAX_SESSION_ITEMS - 1 items were stored (their rows are not read).
    repo.write([repo.head_change(session, session.with_items(MAX_SESSION_ITEMS - 1), T)])
    url = f"/v1/sessions/{session_id}/turns"
    two = {"items": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    error = _refused(api.client.post(url, json=two, headers=user.headers), ["items"])
    assert str(MAX_SESSION_ITEMS) in error["message"]
    one = {"items": [{"role": "user", "content": "last"}]}
    answer = api.client.post(url, json=one, headers=user.headers)
    assert answer.status_code == 200, answer.text
    assert answer.json()["turn"]["itemIds"] == [item_id(MAX_SESSION_ITEMS)]
    _refused(_remember(api, user, session_id, "k", "x"), ["command"])
    assert api.client.get(f"/v1/sessions/{session_id}/memory", headers=user.headers).is_success


# --- learning at the bound (in-memory fakes) ------------------------------------------------


@dataclass
class Pools:
    sessions: SessionService
    memory: SessionMemoryService
    learning: SessionLearningPool
    ana: Principal
    store: InMemoryStore


@pytest.fixture
def pools() -> Pools:
    store, cipher, clock, ids = InMemoryStore(), FakeCipher(), FixedClock(), SequentialIds()
    identity = IdentityRepository(store)
    identity.create_org("acme", "Acme", 0)
    identity.create_user(User("ana", "acme", "ana", "member"), issue_token(), "admin token", 0)
    access = SessionAccess(SessionRepository(store, cipher), OrgSettingsService(identity))
    agents = AgentService(AgentRepository(store), clock, ids)
    sessions = SessionService(access, agents, clock, ids, default_model="local/rules")
    memory = SessionMemoryService(access, clock, max_text_length=8000)
    return Pools(
        sessions,
        memory,
        SessionLearningPool(access, clock),
        Principal("ana", "acme", "member"),
        store,
    )


def _finish(outcome: Outcome) -> list[Any]:
    return [Put({"pk": "EXEC", "sk": "done", "applied": outcome.applied}, Absent())]


def test_learning_at_the_bound_refuses_a_new_key_with_a_reason_and_applies_the_rest(
    pools: Pools,
) -> None:
    ana = pools.ana
    agent = pools.sessions._agents.create(ana, "Trip planner")
    session = pools.sessions.create(ana, agent.id)
    for n in range(KEYED_POOL_ENTRIES):
        current = pools.sessions.get(ana, session.id)
        pools.memory.command(
            ana, session.id, current.head, current.revision, Remember(f"k{n}", "x", "fact")
        )
    current = pools.sessions.get(ana, session.id)
    with pytest.raises(TooLarge):
        pools.memory.command(
            ana, session.id, current.head, current.revision, Remember("n", "x", "fact")
        )
    turned = pools.sessions.turn(ana, session.id, [NewItem("user", "The budget is 1500 EUR.")])
    upto = turned.session.item_count
    evidence = pools.learning.load_evidence(PoolRef("session", "acme", session.id), upto)
    assert evidence is not None
    source = (item_id(upto),)
    outcome = apply_cycle(
        pools.store,
        pools.learning,
        evidence,
        [
            ProposedRemember("budget", "The trip budget is 1500 EUR.", "fact", source),
            ProposedRemember("k3", "The trip budget is 1500 EUR.", "fact", source),
        ],
        _finish,
    )
    assert outcome.applied == [{"key": "k3", "op": "remember"}]
    reason = POOL_FULL.format(entries=KEYED_POOL_ENTRIES, content=KEYED_POOL_CONTENT)
    assert [(r["change"]["key"], r["reason"]) for r in outcome.rejected] == [("budget", reason)]
    entries = {e.meta.name: e for e in pools.memory.read(ana, session.id).entries}
    assert "budget" not in entries
    assert entries["k3"].content == "The trip budget is 1500 EUR."
    assert len(entries) == KEYED_POOL_ENTRIES


# --- lists stop at one answer's budget ---------------------------------------------------------


def _worst_object() -> NewMemory:
    return NewMemory(
        category="fact",
        content=ASTRAL * MAX_MEMORY_CONTENT_CHARS,
        metadata=ASTRAL * (MAX_METADATA_BYTES // 4 - 1),  # 4 bytes each, plus the quotes
        entity=Entity(
            id=ASTRAL * MAX_ENTITY_ID_CHARS,
            type="account",
            name=ASTRAL * MAX_ENTITY_TEXT_CHARS,
            handle=ASTRAL * MAX_ENTITY_TEXT_CHARS,
        ),
        importance=0.123456789,
        expires_at="9999-12-31T23:59:59.999Z",
    )


def test_a_page_of_the_largest_memories_stops_under_the_budget_and_pages_on() -> None:
    service = MemoryObjectService(
        MemoryObjectRepository(InMemoryStore(), FakeCipher()), FixedClock(), SequentialIds()
    )
    caller = Principal("ana", "acme", "member")
    for _ in range(60):
        service.create(caller, _worst_object())
    page = service.list_memories(caller, limit=100)
    assert page.has_more
    assert 30 < len(page.memories) < 60
    answer = AgentMemoryList(data=[AgentMemoryOut.of(m) for m in page.memories], has_more=True)
    assert carried_size(answer.model_dump(mode="json")) <= ANSWER_BUDGET
    rest = service.list_memories(caller, limit=100, starting_after=page.memories[-1].id)
    assert len(page.memories) + len(rest.memories) == 60
    assert not rest.has_more
    recalled = service.recall(caller, limit=100)
    assert recalled.has_more
    assert len(recalled.memories) == len(page.memories)


def test_the_size_counted_for_a_memory_is_at_least_what_its_answer_carries() -> None:
    service = MemoryObjectService(
        MemoryObjectRepository(InMemoryStore(), FakeCipher()), FixedClock(), SequentialIds()
    )
    memory = service.create(Principal("ana", "acme", "member"), _worst_object())
    carried = carried_size(AgentMemoryOut.of(memory).model_dump(mode="json"))
    assert carried <= memory_object_size(memory) <= carried + 200


def test_a_list_keeps_the_longest_prefix_that_fits() -> None:
    views = [{"n": "x" * 100}] * 10
    one = carried_size(views[0])
    assert within_budget(views, budget=one * 3) == (views[:3], True)
    assert within_budget(views, budget=one * 10) == (views, False)
    assert within_budget([], budget=0) == ([], False)


@pytest.mark.parametrize("answer", [Executions, BotExecutions])
def test_executions_are_cut_to_the_newest_that_fit_one_answer(
    answer: type[Executions] | type[BotExecutions],
) -> None:
    huge = [{"reason": "y" * 1_000_000}]
    runs = [RunView(f"run-{n}", "succeeded", 1, 2, "turn", None, rejected=huge) for n in range(100)]
    shown = answer.of(runs).model_dump()["executions"]
    assert [run["id"] for run in shown] == [f"run-{n}" for n in range(len(shown))]
    assert 0 < len(shown) < 100
    assert carried_size({"executions": shown}) <= ANSWER_BUDGET
