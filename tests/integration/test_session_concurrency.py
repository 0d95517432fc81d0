"""Commands racing on one Session (DynamoDB and KMS on the embedded AWS, real services).

Ten clients send a command with the same expected/revision at once: exactly one succeeds,
nine get 409 SessionConflict, and the stored memory shows exactly one change.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from agent_memory.api.contracts.sessions import SessionMemory
from agent_memory.domain.errors import SessionConflict
from agent_memory.domain.identity import Principal
from agent_memory.domain.session_memory import Command, Configure, Forget, Remember
from agent_memory.domain.sessions import NewItem, Session

CLIENTS = 10


@pytest.fixture
def owner(services: Any) -> Principal:
    services.identity.create_org(_admin(), "acme", "Acme")
    services.identity.create_user(_admin(), "acme", "ana", "Ana", "member")
    return Principal("ana", "acme", "member")


def _admin() -> Principal:
    return Principal(None, None, "service-admin")


def race(calls: list[Callable[[], Any]]) -> tuple[list[Any], list[BaseException]]:
    """Run every call in its own thread, released at the same moment."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            result = call()
        except BaseException as error:
            with lock:
                errors.append(error)
            return
        with lock:
            results.append(result)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results, errors


def new_session(services: Any, owner: Principal) -> Session:
    agent = services.agents.create(owner, "Trip planner")
    session: Session = services.sessions.create(owner, agent.id, model=None)
    return session


def send_all(
    services: Any, owner: Principal, session: Session, commands: list[Command]
) -> tuple[list[Any], list[BaseException]]:
    return race(
        [
            (
                lambda c=c: services.session_memory.command(
                    owner, session.id, session.head, session.revision, c
                )
            )
            for c in commands
        ]
    )


def test_ten_remembers_with_the_same_revision_one_wins(services: Any, owner: Principal) -> None:
    session = new_session(services, owner)
    commands: list[Command] = [
        Remember(f"fact-{n}", f"Fact number {n}.", "fact") for n in range(CLIENTS)
    ]
    results, errors = send_all(services, owner, session, commands)

    assert len(results) == 1
    assert len(errors) == CLIENTS - 1
    assert all(isinstance(e, SessionConflict) for e in errors), errors
    winner = results[0]
    assert winner.revision == session.revision + 1
    memory = _memory(services, owner, session.id)
    assert len(memory["entries"]) == 1
    [(key, entry)] = memory["entries"].items()
    assert entry["content"] == f"Fact number {key.removeprefix('fact-')}."
    assert entry["sources"] == ["i-01"]
    after = services.sessions.get(owner, session.id)
    assert (after.revision, after.item_count, after.head) == (winner.revision, 1, winner.head)


def test_ten_different_commands_with_the_same_revision_one_wins(
    services: Any, owner: Principal
) -> None:
    session = new_session(services, owner)
    session = services.session_memory.command(
        owner, session.id, session.head, session.revision, Remember("budget", "1500 EUR.", "fact")
    )
    commands: list[Command] = [
        Forget("budget"),
        Remember("budget", "900 EUR.", "fact"),
        Configure({"use": False}),
        Configure({"generate": False}),
        Remember("hotel", "Hotel Sol.", "fact"),
        Forget("budget"),
        Configure({"use": True, "generate": None}),
        Remember("city", "Lisbon.", "fact"),
        Remember("budget", "1200 EUR.", "decision"),
        Configure({"generate": True}),
    ]
    before = _memory(services, owner, session.id)
    results, errors = send_all(services, owner, session, commands)

    assert len(results) == 1
    assert len(errors) == CLIENTS - 1
    assert all(isinstance(e, SessionConflict) for e in errors), errors
    after = services.sessions.get(owner, session.id)
    assert after.revision == session.revision + 1
    memory = _memory(services, owner, session.id)
    changed_entries = [
        key for key, entry in memory["entries"].items() if before["entries"].get(key) != entry
    ]
    changed_switches = memory["overrides"] != before["overrides"]
    # Exactly one change: one entry, or the switches; never both, never two.
    assert len(changed_entries) + int(changed_switches) == 1, memory
    assert after.item_count == session.item_count + (0 if changed_switches else 1)


def test_turns_without_a_condition_all_land_in_order(services: Any, owner: Principal) -> None:
    session = new_session(services, owner)
    calls = [
        (lambda n=n: services.sessions.turn(owner, session.id, [NewItem("user", f"turn {n}")]))
        for n in range(3)
    ]
    results, errors = race(calls)
    assert errors == []
    assert sorted(r.item_ids[0] for r in results) == ["i-01", "i-02", "i-03"]
    after = services.sessions.get(owner, session.id)
    assert (after.item_count, after.revision) == (3, 3)


def _memory(services: Any, owner: Principal, session_id: str) -> dict[str, Any]:
    """The session memory as the API answers it."""
    return SessionMemory.of(services.session_memory.read(owner, session_id)).model_dump()
