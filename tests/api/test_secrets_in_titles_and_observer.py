"""What looks like a secret is never kept as a thread's title nor by the observer (seed 003;
ADR 0046): a title is listed and exported, so one that looks like a secret becomes the
neutral "New conversation"; the observer's log and the working memory it keeps drop it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.threads import TITLER, World, assistant, services, user, world

__all__ = ["services", "world"]  # the fixtures this module uses

SECRET_FIRST_MESSAGES = [
    ("My password is Hunter2-Secret, please help me reset the router.", "Hunter2-Secret"),
    ("Remember my wifi password: blue-Cactus-77", "blue-Cactus-77"),
    (
        "The database connection string is postgres://admin:S3cr3tPw@db.example.com:5432/prod",
        "S3cr3tPw",
    ),
    (
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD is my OpenAI key, why does it fail?",
        "sk-proj-",
    ),
]


@pytest.fixture
def titler() -> Any:
    """A title model that names the thread after its first message, word for word."""
    from tests.support.learning_doubles import ScriptedModel

    def echo(request: Any) -> str:
        first = request.user.split("The first message:\n", 1)[1]
        return json.dumps({"title": " ".join(first.split()[:8])})

    return ScriptedModel(name=TITLER, script=echo)


def _titled(world: World, first: str) -> str | None:
    thread = world.thread()
    assert world.save(thread, user(first), assistant("OK.")).status_code == 200
    title: str | None = world.get(f"/v1/threads/{thread}").json()["thread"]["title"]
    return title


@pytest.mark.parametrize(("first", "secret"), SECRET_FIRST_MESSAGES)
@pytest.mark.parametrize("model", ["platform", "scripted"])
def test_a_title_that_looks_secret_is_never_kept(
    world: World, first: str, secret: str, model: str
) -> None:
    if model == "scripted":
        world.activate({"generateTitle": {"model": TITLER}})
    assert _titled(world, first) == "New conversation"
    listed = world.get(f"/v1/threads?agentId={world.agent}").json()["threads"]
    assert all(secret not in (t["title"] or "") for t in listed)


def test_an_ordinary_title_is_kept(world: World) -> None:
    world.activate({"generateTitle": {"model": TITLER}})
    assert _titled(world, "Plan my trip to Lisbon in May.") == "Plan my trip to Lisbon in May."


def test_the_observer_keeps_no_secret_in_its_log_or_the_notes(world: World) -> None:
    world.activate(
        {
            "workingMemory": True,
            "observationalMemory": {
                "observation": {"bufferOnIdle": True, "manageWorkingMemory": True}
            },
        }
    )
    thread = world.thread()
    said = ["My login is ana@example.com and the pass is Sunny#2024.", "I live in Oslo."]
    for text in said:
        assert world.save(thread, user(text), assistant("Noted.")).status_code == 200
    log = world.get(f"/v1/threads/{thread}/observations").json()["log"]
    notes = world.get(f"/v1/threads/{thread}/working-memory").json()["content"]
    assert "Sunny#2024" not in log, log
    assert "Sunny#2024" not in notes, notes
    # What is not a secret is still observed and noted.
    assert "I live in Oslo." in log
    assert "I live in Oslo." in notes
